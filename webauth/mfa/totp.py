"""TOTP (RFC 6238) codes on ``pyotp``, and the enrolment's QR code as inline SVG (``segno``).

Six digits, a 30-second step, SHA-1: what every authenticator app reads from
an ``otpauth://`` URI. A code is checked against the current time step and
``skew`` steps either side (clock drift between phone and server), in constant
time; :func:`matching_step` says which step matched, so that the caller can
record it and refuse the same code again (``use_totp_step``).
"""

from __future__ import annotations

import hmac
import time

import pyotp
import segno

__all__ = [
    "DIGITS",
    "PERIOD",
    "matching_step",
    "new_key",
    "normalize_code",
    "provisioning_uri",
    "qr_svg",
]

#: Digits of a code, and seconds of a time step: the values every app assumes.
DIGITS = 6
PERIOD = 30


def new_key() -> str:
    """A new random key: 32 base32 characters (160 bits, RFC 4226's recommended length)."""
    return pyotp.random_base32(32)


def provisioning_uri(key: str, *, account: str, issuer: str) -> str:
    """The ``otpauth://totp/...`` URI an authenticator app scans: the key, who, and for what."""
    return pyotp.TOTP(key, digits=DIGITS, interval=PERIOD).provisioning_uri(
        name=account, issuer_name=issuer
    )


def qr_svg(uri: str, *, title: str) -> str:
    """*uri* as a QR code: an inline ``<svg>`` element with *title* for screen readers.

    Dark modules on a white quiet zone whatever the page's theme, since a camera
    needs the contrast.
    """
    return str(
        segno.make(uri, error="m").svg_inline(
            scale=4, border=4, dark="#000", light="#fff", title=title
        )
    )


def normalize_code(code: object) -> str | None:
    """The code's digits (spaces and hyphens dropped), or ``None`` if it is not a code."""
    if not isinstance(code, str):
        return None
    digits = code.replace(" ", "").replace("-", "")
    if len(digits) != DIGITS or not digits.isascii() or not digits.isdigit():
        return None
    return digits


def matching_step(key: str, code: object, *, skew: int = 1, now: float | None = None) -> int | None:
    """The time step *code* is right for, within *skew* steps of now; ``None`` if none.

    Every candidate step is compared, each in constant time. Two steps' codes
    agree once in a million: then the later step is the one recorded, so that
    neither code can be used again.
    """
    digits = normalize_code(code)
    if digits is None:
        return None
    totp = pyotp.TOTP(key, digits=DIGITS, interval=PERIOD)
    current = int((time.time() if now is None else now) // PERIOD)
    matches = [
        step
        for step in range(current - skew, current + skew + 1)
        if hmac.compare_digest(totp.generate_otp(step), digits)
    ]
    return max(matches, default=None)
