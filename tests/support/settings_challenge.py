"""The test settings served by several gunicorn processes sharing Redis, the bot challenge
on after abuse (tests/test_challenge_processes.py).

As tests.support.settings_ratelimit (every password refused, no database, each
response naming its worker), with ``WEBAUTH["challenge"]``: Turnstile, asked once
an address has 3 failed sign-ins (half of ``signin_failed``'s 6 per address),
verified against the test's local fake (``WEBAUTH_TEST_CHALLENGE_URL``).
"""

import os

from .settings_ratelimit import *  # noqa: F403
from .settings_ratelimit import WEBAUTH

WEBAUTH = {
    **WEBAUTH,
    # A window no test straddles; "signin" off: only failures count.
    "rate_limits": {"signin": False, "signin_failed": "6/1000d/ip"},
    "challenge": {
        "service": "turnstile",
        "site_key": "0xSITE-KEY",
        "secret_key": os.environ.get("WEBAUTH_TEST_CHALLENGE_SECRET", ""),
        "verify_url": os.environ.get("WEBAUTH_TEST_CHALLENGE_URL"),
        "when": "abuse",
    },
}
