"""Timing distributions of sign-ups: does the time tell which addresses or usernames are taken?

Run from anywhere (about a minute with Django's default PBKDF2 hasher)::

    python benchmarks/bench_signup_timing.py
    python benchmarks/bench_signup_timing.py --samples 60 --hasher md5

It signs up through the real route, ``POST /auth/signup`` (``WEBAUTH["passwords"]
["signup"]`` with ``verify_email``, the default), in process through Django's
test client, with ``DjangoAdapter`` on SQLite, Django's locmem email backend,
``AUTH_PASSWORD_VALIDATORS`` (Django's four) and the project's password hasher
(``--hasher``), and times three kinds of sign-up:

* ``new``: an address and a username nobody has;
* ``address``: the address of an existing user (its owner is mailed instead);
* ``username``: a new address with an existing user's username (the address
  is mailed that the username is taken).

An attacker who could tell ``address`` or ``username`` from ``new`` would learn
which addresses and usernames have accounts. The flow does the same work for
all three (the form and its validators, the password hashed, both look-ups,
one grant stored, one message rendered and sent from a background thread), so
they should be one distribution. The kinds are interleaved in a shuffled order
in every round; each request uses an address and username of its own (so that
no earlier grant is replaced in one kind only, and every one has the same
length) and the rate limits are off. The mail threads are waited for between
requests, outside the timed part, so that one request's message does not run
during the next one's time.

Printed: for each kind, the median, 10th and 90th percentiles, mean and standard
deviation in milliseconds; the ratio of each median to ``new``'s; and for each
taken kind the probability that a random sample of it is slower than a random
``new`` one (0.5: the times say nothing; near 0 or 1: they tell them apart).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time

from timing import (  # a sibling module, not a package
    HASHERS,
    print_table,
    setup_django,
    slower_probability,
    versions,
)

PASSWORD = "correct horse battery 9"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100, help="requests per kind (100)")
    parser.add_argument("--hasher", choices=sorted(HASHERS), default="pbkdf2")
    return parser.parse_args()


def setup(tmp: str, samples: int, hasher: str) -> None:
    validation = "django.contrib.auth.password_validation"
    setup_django(
        tmp,
        {
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "providers": ["webauth.providers.DjangoCredentials"],
            "passwords": {"signup": True},
        },
        EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
        PASSWORD_HASHERS=[HASHERS[hasher]],
        AUTH_PASSWORD_VALIDATORS=[
            {"NAME": f"{validation}.UserAttributeSimilarityValidator"},
            {"NAME": f"{validation}.MinimumLengthValidator"},
            {"NAME": f"{validation}.CommonPasswordValidator"},
            {"NAME": f"{validation}.NumericPasswordValidator"},
        ],
    )
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    for n in range(samples + 1):
        # Made with the hasher's cheapest path: their passwords play no part.
        users.create_user(f"takn{n:05d}", email=f"takn{n:05d}@example.com")


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="webauth-timing-") as tmp:
        setup(tmp, args.samples, args.hasher)
        from django.core import mail
        from django.test import Client

        from webauth.passwords.signup import wait_for_mail

        client = Client()
        token = client.get("/auth/csrf").json()["csrfToken"]

        def ask(username: str, address: str) -> float:
            data = {
                "csrfToken": token,
                "username": username,
                "email": address,
                "password1": PASSWORD,
                "password2": PASSWORD,
            }
            start = time.perf_counter()
            response = client.post("/auth/signup", data)
            elapsed = time.perf_counter() - start
            if response.status_code != 200 or b"Check your email" not in response.content:
                raise SystemExit(f"{username} {address}: {response.status_code}")
            wait_for_mail()
            mail.outbox.clear()
            return elapsed * 1000

        ask("newu00000", "newu00000@example.com")  # warm-up
        ask("takn00000", "newv00000@example.com")
        ask("newv00000", "takn00000@example.com")
        times: dict[str, list[float]] = {"new": [], "address": [], "username": []}
        order = list(times)
        for n in range(1, args.samples + 1):
            random.shuffle(order)
            for kind in order:
                if kind == "new":
                    times[kind].append(ask(f"newu{n:05d}", f"newu{n:05d}@example.com"))
                elif kind == "address":
                    times[kind].append(ask(f"neww{n:05d}", f"takn{n:05d}@example.com"))
                else:
                    times[kind].append(ask(f"takn{n:05d}", f"newx{n:05d}@example.com"))

    print(
        f"{versions()}; "
        f"POST /auth/signup in process, DjangoAdapter on SQLite, locmem email, {args.hasher}; "
        f"{args.samples} samples per kind"
    )
    print_table(times, "new")
    print()
    for kind in ("address", "username"):
        print(
            f"P({kind} taken slower than new) = "
            f"{slower_probability(times[kind], times['new']):.2f} (0.5: indistinguishable)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
