"""WSGI entry of the fleet site: ``granian --interface wsgi benchmarks.fleet.wsgi:application``.

Run it from the repository root (``benchmarks/bench_fleet.py`` does).
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.fleet.settings")
application = get_wsgi_application()
