"""ASGI entry point of the benchmark site, e.g. ``uvicorn benchmarks.http.asgi:application``.

Run it from the repository root; the same environment variables as for
``wsgi.py`` choose the variant (see ``benchmarks/http/settings.py``).
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.http.settings")
application = get_asgi_application()
