"""Timing distributions of email sign-in requests: does the time tell which addresses exist?

Run from anywhere (a few seconds)::

    python benchmarks/bench_email_timing.py
    python benchmarks/bench_email_timing.py --samples 400

It asks for sign-in emails through the real route, ``POST /auth/signin/email``,
in process through Django's test client, with ``DjangoAdapter`` and Django's
locmem email backend, and times two kinds of address:

* ``known``: the address of an existing user;
* ``unknown``: an address that has no account.

An attacker who could tell the two apart would learn which addresses have
accounts. The flow does the same work for both (one ``get_user_by_email``, the
``sign_in`` callback with a stand-in user, one grant stored, one message sent),
so the two should be the same distribution. The kinds are interleaved in a
shuffled order in every round; each request uses an address of its own (so that
no earlier grant is replaced in one kind only) and the rate limits are off.

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

from timing import print_table, setup_django, slower_probability, versions  # a sibling module


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200, help="requests per kind (200)")
    return parser.parse_args()


def setup(tmp: str, samples: int) -> None:
    from webauth.providers import Email

    setup_django(
        tmp,
        {
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "providers": [Email(from_email="bench@example.com")],
        },
        EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
    )
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    for n in range(samples + 1):
        users.create_user(f"known{n}", email=f"known{n}@example.com")


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="webauth-timing-") as tmp:
        setup(tmp, args.samples)
        from django.core import mail
        from django.test import Client

        client = Client()
        token = client.get("/auth/csrf").json()["csrfToken"]

        def ask(address: str) -> float:
            start = time.perf_counter()
            response = client.post("/auth/signin/email", {"csrfToken": token, "email": address})
            elapsed = time.perf_counter() - start
            if "/auth/verify-request?" not in response.get("Location", ""):
                raise SystemExit(f"{address}: {response.status_code} {response.get('Location')}")
            mail.outbox.clear()
            return elapsed * 1000

        ask("known0@example.com")  # warm-up
        ask("nobody0@example.com")
        times: dict[str, list[float]] = {"known": [], "unknown": []}
        order = list(times)
        for n in range(1, args.samples + 1):
            random.shuffle(order)
            for kind in order:
                address = f"known{n}@example.com" if kind == "known" else f"nobody{n}@example.com"
                times[kind].append(ask(address))

    print(
        f"{versions()}; "
        "POST /auth/signin/email in process, DjangoAdapter on SQLite, locmem email; "
        f"{args.samples} samples per kind"
    )
    print_table(times, "known")
    print()
    print(
        "P(unknown slower than known) = "
        f"{slower_probability(times['unknown'], times['known']):.2f} (0.5: indistinguishable)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
