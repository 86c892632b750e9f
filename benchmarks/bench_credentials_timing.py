"""Timing distributions of failed credentials sign-ins: does the time tell which users exist?

Run from anywhere (about 1 minute with Django's default PBKDF2 hasher)::

    python benchmarks/bench_credentials_timing.py
    python benchmarks/bench_credentials_timing.py --samples 60 --hasher md5
    python benchmarks/bench_credentials_timing.py --authorize naive   # what a leak looks like

It signs in through the real route, ``POST /auth/callback/credentials`` with
``DjangoCredentials`` (``django.contrib.auth.authenticate`` and Django's
``ModelBackend``), in process through Django's test client, with the project's
password hasher (``--hasher``: Django's default ``pbkdf2``, or ``md5`` to see the
shape quickly), and times three kinds of failure:

* ``known``: an existing user, a wrong password;
* ``unknown``: a username that has no account;
* ``inactive``: an inactive user, the right password.

An attacker who could tell ``unknown`` from the others would learn which
usernames have accounts. ``ModelBackend`` runs the hasher for an unknown
username too (on a throwaway user), so the three should be the same
distribution. ``--authorize naive`` swaps in an ``authorize`` that
returns at once when the username is unknown, the mistake the benchmark is
there to catch: its ``unknown`` median then drops to a small fraction of
``known``'s. The kinds are interleaved in a shuffled order in every round, so
that drift in the machine's speed spreads over all of them. The rate limits are
off here (they would refuse after five failures; they refuse known and unknown
identifiers alike, before any password is checked: ``tests/test_ratelimit.py``).

Printed: for each kind, the median, 10th and 90th percentiles, mean and standard
deviation in milliseconds; the ratio of each median to ``known``'s; and the
probability that a random ``unknown`` sample is slower than a random ``known``
one (0.5: the times say nothing; near 0 or 1: they tell the two apart).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from typing import Any

from timing import (  # a sibling module, not a package
    HASHERS,
    print_table,
    setup_django,
    slower_probability,
    versions,
)

AUTHORIZE_LABELS = {"django": "DjangoCredentials + ModelBackend", "naive": "naive authorize"}
KINDS = {
    "known": ("alice", "wrong password"),
    "unknown": ("nobody", "wrong password"),
    "inactive": ("sleeper", "right password"),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=40, help="sign-ins per kind (40)")
    parser.add_argument("--hasher", choices=sorted(HASHERS), default="pbkdf2")
    parser.add_argument(
        "--authorize",
        choices=["django", "naive"],
        default="django",
        help="django: DjangoCredentials (default); naive: a leaky authorize, for contrast",
    )
    return parser.parse_args()


def naive_authorize(credentials: Any, request: Any) -> Any:
    """The mistake: no password is hashed when the user does not exist."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username=credentials.get("username")).first()
    if user is None or not user.is_active:
        return None
    return user if user.check_password(credentials.get("password")) else None


def setup(tmp: str, hasher: str, authorize: str) -> None:
    from webauth.providers import DjangoCredentials

    provider = DjangoCredentials(authorize=naive_authorize if authorize == "naive" else None)

    setup_django(
        tmp,
        {"providers": [provider]},
        pages=False,
        PASSWORD_HASHERS=[HASHERS[hasher]],
    )
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    users.create_user("alice", password="right password")
    users.create_user("sleeper", password="right password", is_active=False)


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="webauth-timing-") as tmp:
        setup(tmp, args.hasher, args.authorize)
        from django.test import Client

        client = Client()
        token = client.get("/auth/csrf").json()["csrfToken"]

        def sign_in(username: str, password: str) -> float:
            start = time.perf_counter()
            response = client.post(
                "/auth/callback/credentials",
                {"csrfToken": token, "username": username, "password": password},
            )
            elapsed = time.perf_counter() - start
            if "error=CredentialsSignin" not in response.get("Location", ""):
                raise SystemExit(f"{username}: {response.status_code} {response.get('Location')}")
            return elapsed * 1000

        for username, password in KINDS.values():  # warm-up
            sign_in(username, password)
        times: dict[str, list[float]] = {kind: [] for kind in KINDS}
        order = list(KINDS)
        for _ in range(args.samples):
            random.shuffle(order)
            for kind in order:
                times[kind].append(sign_in(*KINDS[kind]))

    print(
        f"{versions()}; POST /auth/callback/credentials in process, "
        f"{AUTHORIZE_LABELS[args.authorize]}, "
        f"hasher {HASHERS[args.hasher].rsplit('.', 1)[1]}; {args.samples} samples per kind"
    )
    print_table(times, "known")
    print()
    print(
        "P(unknown slower than known) = "
        f"{slower_probability(times['unknown'], times['known']):.2f} (0.5: indistinguishable)"
    )
    print(
        "P(inactive slower than known) = "
        f"{slower_probability(times['inactive'], times['known']):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
