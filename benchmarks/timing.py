"""What the timing benchmarks (``bench_*_timing.py``) share: Django and the figures.

Each imports it as a sibling module (the benchmarks are scripts, not a
package); importing it puts the repository's root on ``sys.path``, for
``webauth`` and ``benchmarks.http.urls``.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

HASHERS = {
    "pbkdf2": "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "md5": "django.contrib.auth.hashers.MD5PasswordHasher",
}


def setup_django(tmp: str, webauth: dict[str, Any], *, pages: bool = True, **extra: Any) -> None:
    """Configure Django for a timing benchmark (a database in *tmp*), set it up and migrate.

    *webauth* is ``WEBAUTH`` less its secret and the rate limits (off here);
    *pages* adds staticfiles and the templates, for the routes that render
    pages; *extra* are more settings (``EMAIL_BACKEND``, ``PASSWORD_HASHERS``…).
    """
    from django.conf import settings

    apps = ["django.contrib.auth", "django.contrib.contenttypes", "webauth"]
    if pages:
        apps.insert(2, "django.contrib.staticfiles")
        extra = {
            "STATIC_URL": "/static/",
            "TEMPLATES": [
                {"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}
            ],
            **extra,
        }
    settings.configure(
        SECRET_KEY="webauth-bench-not-secret",
        DEBUG=False,
        ALLOWED_HOSTS=["testserver"],
        USE_TZ=True,
        ROOT_URLCONF="benchmarks.http.urls",
        INSTALLED_APPS=apps,
        MIDDLEWARE=["webauth.middleware.AuthMiddleware"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": f"{tmp}/t.sqlite3"}},
        LOGGING={
            "version": 1,
            "disable_existing_loggers": False,
            "handlers": {"null": {"class": "logging.NullHandler"}},
            "loggers": {"webauth": {"handlers": ["null"], "propagate": False}},
        },
        WEBAUTH={
            "secret": "bench-secret-0123456789abcdef0123456789abcdef",
            **webauth,
            "rate_limits": False,
        },
        **extra,
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def versions() -> str:
    """The start of the first line printed: ``Python 3.x.y, Django 5.x.y``."""
    import django

    return f"Python {sys.version.split()[0]}, Django {django.get_version()}"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def slower_probability(a: list[float], b: list[float]) -> float:
    """P(a random sample of *a* > a random sample of *b*), ties counting half."""
    wins = sum((x > y) + 0.5 * (x == y) for x in a for y in b)
    return wins / (len(a) * len(b))


def print_header(heading: str, ratio: str, width: int = 9) -> None:
    """The table's heading: *heading* over the kinds, *ratio* over the medians' ratios."""
    print(
        f"{heading:<{width}} {'median ms':>10} {'p10 ms':>8} {'p90 ms':>8} {'mean ms':>8} "
        f"{'stdev ms':>9} {ratio:>8}"
    )


def print_row(kind: str, values: list[float], base: float, width: int = 9) -> None:
    """One kind's median, p10, p90, mean and stdev in ms, and its median over *base*."""
    median = statistics.median(values)
    print(
        f"{kind:<{width}} {median:10.2f} {percentile(values, 0.1):8.2f} "
        f"{percentile(values, 0.9):8.2f} {statistics.mean(values):8.2f} "
        f"{statistics.stdev(values):9.2f} {median / base:7.3f}x"
    )


def print_table(times: dict[str, list[float]], base: str) -> None:
    """Every kind's row, its median over the median of kind *base*."""
    print_header("kind", f"/ {base}")
    median = statistics.median(times[base])
    for kind, values in times.items():
        print_row(kind, values, median)
