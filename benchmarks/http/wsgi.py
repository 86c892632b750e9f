"""WSGI entry points of the benchmark site: ``gunicorn benchmarks.http.wsgi:application``.

``fast_application`` is the same site behind :class:`webauth.wsgi.FastPath`.
Run it from the repository root; ``WEBAUTH_BENCH_STACK`` and ``WEBAUTH_BENCH_DATABASE``
choose the variant (see ``benchmarks/http/settings.py``).
"""

import os

from django.core.wsgi import get_wsgi_application

from webauth.wsgi import FastPath

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.http.settings")
application = get_wsgi_application()
fast_application = FastPath(application)
