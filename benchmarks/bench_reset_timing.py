"""Timing distributions of password reset requests: does the time tell which accounts exist?

Run from anywhere (about a minute)::

    python benchmarks/bench_reset_timing.py
    python benchmarks/bench_reset_timing.py --samples 400 --mail-delay 50
    python benchmarks/bench_reset_timing.py --delivery inline   # what a leak looks like

It asks for password resets through the real routes, in process through
Django's test client, with ``DjangoAdapter`` on SQLite and a mail backend that
takes ``--mail-delay`` milliseconds per message (an SMTP relay's round trips;
then Django's locmem backend builds the message), and times four kinds of
request, each a new identifier (so that no earlier grant is replaced in one
kind only), with the rate limits off:

* ``address``: the address of an existing user, and ``nobody@``: an address
  without an account;
* ``username``: an existing user's username, and ``nobody``: a username
  without an account.

Each kind is timed twice: ``POST /auth/reset`` (the request: look-ups, a grant
stored, the message rendered, handed to the outbox) and then, in the same
browser, ``POST /auth/reset/confirm`` with a wrong code and a new password (the
same look-ups, a code attempt counted against the grant).

An attacker who could tell the unknown kinds from the known ones would learn
which addresses and usernames have accounts. The flow does the same work for
both and sends the message from a background thread, so each pair should be
one distribution. ``--delivery inline`` sends each message inside the request
instead (what a site does that mails only the accounts that exist): the known
kinds then take ``--mail-delay`` longer, and the benchmark shows it. The kinds
are interleaved in a shuffled order in every round.

Printed: per phase and kind the median, 10th and 90th percentiles, mean and
standard deviation in milliseconds, the ratio of each median to its known
twin's, and the probability that a random unknown sample is slower than a
random known one (0.5: the times say nothing; near 0 or 1: they tell the two
apart). Target: each P(slower) between 0.4 and 0.6 (``MET``/``NOT MET``, exit
status 1 when not met; not checked with ``--delivery inline``).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from typing import Any

from timing import (  # a sibling module, not a package
    HASHERS,
    print_header,
    print_row,
    setup_django,
    slower_probability,
    versions,
)

#: The kinds, in pairs (known, unknown).
PAIRS = (("address", "nobody@"), ("username", "nobody"))
TARGET = (0.4, 0.6)


class SlowBackend:
    """Django's locmem backend behind a delay: what an SMTP relay costs the sender."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from django.core.mail.backends.locmem import EmailBackend

        self._backend = EmailBackend(*args, **kwargs)

    def send_messages(self, messages: Any) -> int:
        from django.conf import settings

        # A setting, not a global: Django imports this module again by its name.
        time.sleep(settings.BENCH_MAIL_DELAY / 1000)
        return int(self._backend.send_messages(messages))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200, help="requests per kind (200)")
    parser.add_argument(
        "--mail-delay", type=float, default=20.0, help="milliseconds per message sent (20)"
    )
    parser.add_argument(
        "--delivery",
        choices=["background", "inline"],
        default="background",
        help="background: webauth's outbox (default); inline: sent in the request, for contrast",
    )
    return parser.parse_args()


def setup(tmp: str, samples: int, mail_delay: float) -> None:
    from webauth.providers import DjangoCredentials, Email

    setup_django(
        tmp,
        {
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "providers": [DjangoCredentials(), Email(from_email="bench@example.com")],
            "passwords": {"reset": True, "notify": False},
        },
        EMAIL_BACKEND="benchmarks.bench_reset_timing.SlowBackend",
        BENCH_MAIL_DELAY=mail_delay,
        PASSWORD_HASHERS=[HASHERS["md5"]],
        AUTH_PASSWORD_VALIDATORS=[
            {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
            {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
        ],
    )
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    for n in range(samples + 1):
        users.create_user(f"known{n}", email=f"known{n}@example.com", password="old password")
        users.create_user(f"named{n}", email=f"named{n}@example.com", password="old password")


def identifier(kind: str, n: int) -> str:
    return {
        "address": f"known{n}@example.com",
        "nobody@": f"nobody{n}@example.com",
        "username": f"named{n}",
        "nobody": f"nobody{n}",
    }[kind]


def inline_delivery() -> None:
    """The leak to show: each message sent inside the request, none for a decoy."""
    from webauth.passwords import reset

    def submit(message: Any, logger: Any, *, send: bool) -> bool:
        if send:
            message.send(fail_silently=False)
        return True

    reset.outbox.submit = submit  # type: ignore[method-assign]


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="webauth-timing-") as tmp:
        setup(tmp, args.samples, args.mail_delay)
        from django.core import mail
        from django.test import Client

        from webauth.passwords import reset

        if args.delivery == "inline":
            inline_delivery()
        kinds = [kind for pair in PAIRS for kind in pair]
        phases = ("ask", "wrong code")
        times: dict[str, dict[str, list[float]]] = {p: {k: [] for k in kinds} for p in phases}
        token = Client().get("/auth/csrf").cookies

        def one(kind: str, n: int) -> tuple[float, float]:
            client = Client()
            client.cookies.update(token)  # one CSRF pair for every browser
            csrf = client.get("/auth/csrf").json()["csrfToken"]
            start = time.perf_counter()
            asked = client.post(
                "/auth/reset", {"csrfToken": csrf, "identifier": identifier(kind, n)}
            )
            middle = time.perf_counter()
            wrong = client.post(
                "/auth/reset/confirm",
                {
                    "csrfToken": csrf,
                    "code": "0000-0000",
                    "new_password1": "a new password 7",
                    "new_password2": "a new password 7",
                },
            )
            end = time.perf_counter()
            if asked.status_code != 302 or wrong.status_code != 400:
                raise SystemExit(f"{kind}: {asked.status_code} {wrong.status_code}")
            if not re.search(rb"attempts? left", wrong.content):
                raise SystemExit(f"{kind}: the wrong code was not counted: {wrong.content[:300]!r}")
            return (middle - start) * 1000, (end - middle) * 1000

        for kind in kinds:  # warm-up
            one(kind, 0)
        for n in range(1, args.samples + 1):
            random.shuffle(kinds)
            for kind in kinds:
                ask_ms, code_ms = one(kind, n)
                times["ask"][kind].append(ask_ms)
                times["wrong code"][kind].append(code_ms)
        reset.outbox.flush(timeout=600)
        sent = len(mail.outbox)

    print(
        f"{versions()}; POST /auth/reset and "
        "POST /auth/reset/confirm in process, DjangoAdapter on SQLite; "
        f"{args.mail_delay:g} ms per message, delivery {args.delivery}; "
        f"{args.samples} samples per kind; {sent} messages sent"
    )
    met = True
    for phase in phases:
        print()
        print_header(phase, "/ known", width=11)
        for known, unknown in PAIRS:
            base = statistics.median(times[phase][known])
            for kind in (known, unknown):
                print_row(kind, times[phase][kind], base, width=11)
        for known, unknown in PAIRS:
            p = slower_probability(times[phase][unknown], times[phase][known])
            ok = TARGET[0] <= p <= TARGET[1]
            met = met and ok
            verdict = "" if args.delivery == "inline" else ("  MET" if ok else "  NOT MET")
            print(
                f"P({unknown} slower than {known}) = {p:.2f} "
                f"(target {TARGET[0]}-{TARGET[1]}; 0.5: indistinguishable){verdict}"
            )
    return 0 if met or args.delivery == "inline" else 1


if __name__ == "__main__":
    sys.exit(main())
