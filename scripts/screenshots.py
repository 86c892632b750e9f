"""Screenshots of every built-in page, light and dark, desktop and mobile.

Run through ./scripts/screenshots (which makes the project's .venv first). It
starts a throwaway site (the test suite's project, tests/support/, on a new
SQLite file that is deleted afterwards) on http://localhost:<free port>, walks
the pages of tests/support/tour.py (the ones the accessibility tests check) in
Debian's Chromium at /usr/bin/chromium, and saves one PNG per page, colour scheme
and size, and an index.html that shows them all side by side.

    ./scripts/screenshots                    # into ./screenshots/
    ./scripts/screenshots --out /tmp/shots   # elsewhere
    ./scripts/screenshots signout error-AccessDenied   # only these pages
    ./scripts/screenshots --list             # the page names
"""

from __future__ import annotations

import argparse
import html
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
LOAD_LAZY_IMAGES = """() => Promise.all([...document.images].map((img) => {
  img.loading = "eager";
  return img.complete ? null : new Promise((done) => { img.onload = img.onerror = done; });
}))"""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/screenshots", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("pages", nargs="*", help="only these pages (names as --list prints)")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "screenshots", help="output directory (./screenshots)"
    )
    parser.add_argument("--list", action="store_true", help="print the page names and stop")
    return parser.parse_args(argv)


def set_up_django() -> None:
    # The test suite's project, always on its own SQLite file: never a shared database.
    for name in ("WEBAUTH_TEST_POSTGRES", "WEBAUTH_TEST_MARIADB"):
        os.environ.pop(name, None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.support.settings"
    # Playwright's sync API runs an event loop on this thread; the ORM calls made here
    # (creating the users) are plain synchronous ones.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


class Site:
    """The test project served on localhost by Django's live-server thread."""

    def __init__(self) -> None:
        from django.apps import apps
        from django.conf import settings
        from django.contrib.staticfiles.handlers import StaticFilesHandler
        from django.core.management import call_command
        from django.test.testcases import LiveServerThread
        from django.test.utils import override_settings

        self.database = Path(settings.DATABASES["default"]["NAME"])
        self.database.unlink(missing_ok=True)
        # Tables made from the models at once (a throwaway database needs no migration
        # history): a fraction of a second instead of several.
        no_migrations = {app.label: None for app in apps.get_app_configs()}
        with override_settings(MIGRATION_MODULES=no_migrations):
            call_command("migrate", verbosity=0, run_syncdb=True)
        # Emails stay in django.core.mail.outbox, where the tour reads the links.
        self._mail = override_settings(
            EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"
        )
        self._mail.enable()
        self._webauth: override_settings | None = None
        self.thread = LiveServerThread("localhost", StaticFilesHandler, port=0)
        self.thread.daemon = True
        self.thread.start()
        self.thread.is_ready.wait()
        if self.thread.error:
            raise self.thread.error
        self.url = f"http://localhost:{self.thread.port}"

    def configure(self, webauth: dict) -> None:
        from django.test.utils import override_settings

        if self._webauth is not None:
            self._webauth.disable()
        self._webauth = override_settings(WEBAUTH=webauth)
        self._webauth.enable()

    def close(self) -> None:
        self.thread.terminate()
        if self._webauth is not None:
            self._webauth.disable()
        self._mail.disable()
        from django.db import connections

        connections.close_all()
        self.database.unlink(missing_ok=True)


def write_index(out: Path, shots: list[tuple[object, list[tuple[str, str, str]]]]) -> Path:
    """index.html: one row per page, one column per scheme and size."""
    from tests.support import tour

    columns = [(scheme, size) for scheme in tour.SCHEMES for size in tour.SIZES]
    head = "".join(f"<th scope=col>{scheme}, {size}</th>" for scheme, size in columns)
    rows = []
    for stop, files in shots:
        cells = "".join(
            f'<td><a href="{html.escape(f)}"><img src="{html.escape(f)}" loading="lazy" '
            f'alt="{html.escape(stop.name)}, {scheme}, {size}"></a></td>'
            for scheme, size, f in files
        )
        rows.append(
            f"<tr><th scope=row id={html.escape(stop.name)}>{html.escape(stop.name)}"
            f"<p>{html.escape(stop.about)}</p></th>{cells}</tr>"
        )
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>webauth's built-in pages</title>
<style>
  body {{ font-family: system-ui, sans-serif; margin: 1rem; }}
  table {{ border-collapse: collapse; }}
  th, td {{ border: 1px solid #d1d5db; padding: 0.5rem; vertical-align: top; }}
  th[scope=row] {{ text-align: left; max-width: 12rem; }}
  th p {{ font-weight: normal; }}
  img {{ max-width: 320px; max-height: 480px; display: block; }}
</style>
</head>
<body>
<h1>webauth's built-in pages</h1>
<p>{len(shots)} pages, each light and dark at 1280x800 and 390x844 (full-page
screenshots; click one for its real size). Made by scripts/screenshots.</p>
<table>
<thead><tr><th scope=col>Page</th>{head}</tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
</body>
</html>
"""
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    set_up_django()
    from tests.support import tour

    stops = list(tour.stops())
    if args.list:
        print("\n".join(stop.name for stop in stops))
        return 0
    unknown = set(args.pages) - {stop.name for stop in stops}
    if unknown:
        print(f"No such page: {', '.join(sorted(unknown))} (see --list)", file=sys.stderr)
        return 2
    if args.pages:
        stops = [stop for stop in stops if stop.name in args.pages]
    if not os.path.exists(CHROMIUM):
        print(f"{CHROMIUM} is absent (apt-get install chromium)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    site = Site()
    tour.create_people()
    shots = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=["--no-sandbox", "--disable-dev-shm-usage"],
            )
            context = browser.new_context(base_url=site.url)
            context.set_default_timeout(15_000)
            visitor = tour.Tour(
                browser_page=context.new_page(), base_url=site.url, configure=site.configure
            )
            for stop in stops:
                page = tour.visit(visitor, stop)
                # A full-page picture shows what is below the fold: load it all now.
                page.evaluate(LOAD_LAZY_IMAGES)
                files = []
                for scheme in tour.SCHEMES:
                    page.emulate_media(color_scheme=scheme)
                    for size, viewport in tour.SIZES.items():
                        page.set_viewport_size(viewport)
                        name = f"{stop.name}-{scheme}-{size}.png"
                        page.screenshot(path=str(out / name), full_page=True)
                        files.append((scheme, size, name))
                shots.append((stop, files))
                print(f"  {stop.name}: {stop.about}")
            browser.close()
    finally:
        site.close()
    index = write_index(out, shots)
    count = sum(len(files) for _, files in shots)
    print(f"Saved {count} screenshots of {len(shots)} pages in {out}/; open {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
