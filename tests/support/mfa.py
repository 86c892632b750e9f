"""What the second factor's tests share: the settings, the clock, a confirmed key."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pyotp
from freezegun import freeze_time

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
#: Now, to the second, when the tests were collected: the clock the tests freeze
#: (sessions forced at the real time stay valid under it).
NOW = float(int(time.time()))


def at(when: float) -> str:
    """*when* (a POSIX time) as freeze_time takes it."""
    return datetime.fromtimestamp(when, UTC).isoformat()


def mfa_settings(*, mfa: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """``WEBAUTH`` with the ORM adapter, a password provider and the second factor on."""
    return {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "providers": ["webauth.providers.DjangoCredentials"],
        "mfa": {"enabled": True, **(mfa or {})},
        **options,
    }


def add_key(user: Any, when: float = NOW - 300) -> str:
    """A confirmed TOTP key of *user*, confirmed with the code of *when*; the key."""
    from webauth.conf import get_config
    from webauth.mfa import factors

    config = get_config()
    enrolment = factors.begin_totp(config, user.pk, account=user.email, issuer="Example")
    with freeze_time(at(when)):
        code = pyotp.TOTP(enrolment.key).at(when)
        assert factors.confirm_totp(config, user.pk, enrolment.factor.id, code)
    return enrolment.key
