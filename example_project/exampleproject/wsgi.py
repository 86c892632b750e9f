"""WSGI entry point (``gunicorn exampleproject.wsgi`` or ``granian --interface wsgi
exampleproject.wsgi:application``).

``FastPath`` answers webauth's ``GET /auth/csrf``, ``/auth/providers`` and
``/auth/session`` with a short middleware chain (the security headers and
webauth's own) and hands every other request to Django as usual: see
docs/deployment.md, "The fast path for webauth's JSON reads".
"""

import os

from django.core.wsgi import get_wsgi_application

from webauth.wsgi import FastPath

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exampleproject.settings")
application = FastPath(get_wsgi_application())
