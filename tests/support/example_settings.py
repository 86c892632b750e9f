"""The example project's settings, with its tables made from the models at once.

For tests that only look at the example's pages (tests/test_accessibility_browser.py):
``migrate --run-syncdb`` with no migration modules takes a fraction of the time the
migrations take. Everything else is the example's own settings.
"""

from exampleproject.settings import *  # noqa: F403


class _NoMigrations(dict):
    """Every app "has no migrations": syncdb creates its tables from the models."""

    def __contains__(self, app_label):
        return True

    def __getitem__(self, app_label):
        return None


MIGRATION_MODULES = _NoMigrations()
