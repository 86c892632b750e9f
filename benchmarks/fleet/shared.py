"""What the fleet's driver, its site and its locust script agree on.

Plain Python (no Django, no locust): ``benchmarks/bench_fleet.py`` imports it to
create the accounts and to check the run, ``benchmarks/fleet/settings.py`` and
``mail.py`` for the Redis keys, ``locustfile.py`` to find its accounts.

Accounts are numbered 0 to ``ACCOUNTS - 1``: username ``user00042``, address
``user00042@fleet.example``, every one with the password :data:`PASSWORD`.
Before the run each account gets two database sessions made by the driver (a
browser's and an app's), whose tokens both sides derive from the run's seed
(:func:`session_token`), so that no list of 20,000 tokens has to travel.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

#: How many accounts the driver creates (``--accounts`` changes it).
ACCOUNTS = int(os.environ.get("WEBAUTH_FLEET_ACCOUNTS", "10000"))
PASSWORD = "fleet-password"
EMAIL_DOMAIN = "fleet.example"

REDIS_URL = os.environ.get("WEBAUTH_FLEET_REDIS", "redis://127.0.0.1:6379/0")
#: Every Redis key of a run starts with it; the driver deletes them before and after.
PREFIX = "webauth-fleet:"
#: Django's cache (rate-limit counters) under ``webauth-fleet:cache:...``.
CACHE_PREFIX = PREFIX + "cache"
#: The script's records and the site's counters.
RUN = PREFIX + "run:"
MAILBOX = RUN + "mail:"  # + address: a list of sign-in URLs, newest last
PERSONS = RUN + "persons"  # a counter: the next person (account) a simulated user becomes
CREATED = RUN + "created"  # a set of "<account> <session token>" the script made
ENDED = RUN + "ended"  # a set of "<account> <session token>" the script ended
LINKS = RUN + "links"  # a list of JSON snapshots of a browser about to redeem a link
EMAIL_ASKED = RUN + "email-asked"  # a counter: sign-in emails the script asked for
EMAIL_USED = RUN + "email-used"  # a counter: grants the script redeemed
QUERIES = RUN + "queries"  # a hash "<METHOD> <path>" -> SQL queries (the site's middleware)
TRANSACTIONS = RUN + "transactions"  # a hash "<METHOD> <path>" -> commits and rollbacks
REDIS_CALLS = RUN + "redis"  # a hash "<METHOD> <path>" -> Redis round trips (the same)
REQUESTS = RUN + "requests"  # a hash "<METHOD> <path>" -> requests counted with them
WINDOW = RUN + "window"  # a hash: start/end times, and the counters at each
SEED = os.environ.get("WEBAUTH_FLEET_SEED", "fleet-seed")

#: Person ``n`` signs in as account ``(n * STRIDE) % ACCOUNTS``: no two simulated
#: users share an account until ``ACCOUNTS`` persons have come (a prime that
#: divides no count of accounts a run uses).
STRIDE = 7919


def username(index: int) -> str:
    return f"user{index:05d}"


def address(index: int) -> str:
    return f"{username(index)}@{EMAIL_DOMAIN}"


def account_of(person: int) -> int:
    return (person * STRIDE) % ACCOUNTS


def session_token(kind: str, index: int, seed: str = SEED) -> str:
    """The token of account *index*'s pre-made ``"browser"`` or ``"app"`` session.

    43 URL-safe characters (256 bits), as webauth's own ``secrets.token_urlsafe(32)``.
    """
    digest = hmac.new(seed.encode(), f"{kind}:{index}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
