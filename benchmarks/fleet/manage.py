"""``manage.py`` of the fleet site, e.g. ``python benchmarks/fleet/manage.py check``.

It reaches the schema ``webauth_fleet`` of the database ``test``, which exists only
while ``benchmarks/bench_fleet.py`` runs (``--keep`` leaves it, for
``manage.py webauth_purge --dry-run`` afterwards).
"""

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    """Run a Django management command against the fleet settings."""
    sys.path.insert(0, str(REPO_ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.fleet.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
