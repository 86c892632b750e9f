"""``manage.py`` of the benchmark site, e.g. ``python benchmarks/http/manage.py check``.

``WEBAUTH_BENCH_STACK`` and ``WEBAUTH_BENCH_DATABASE`` choose the variant (see
``benchmarks/http/settings.py``).
"""

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    """Run a Django management command against the benchmark settings."""
    sys.path.insert(0, str(REPO_ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.http.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
