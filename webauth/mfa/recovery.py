"""Recovery codes: a set of single-use codes shown once, stored as hashes.

A code is 16 characters of Crockford's base32 (80 random bits), shown in four
groups of four (``7k2m-qx9a-...``). What is typed is read leniently: case,
spaces and hyphens do not matter, and the letters Crockford's alphabet leaves
out for looking like digits (``o``, ``i``, ``l``) read as those digits. With
80 random bits a code's SHA-256 cannot be searched back, so no slow hash and
no secret is needed to store it.
"""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["COUNT", "code_hash", "new_codes", "normalize"]

#: Codes in a set.
COUNT = 10
#: Crockford's base32, lower case: no i, l, o or u.
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_LENGTH = 16
_READ_AS = str.maketrans({"o": "0", "i": "1", "l": "1"})


def new_codes(count: int = COUNT) -> list[str]:
    """*count* new codes, as the user is shown them (four groups of four)."""
    codes = []
    for _ in range(count):
        raw = "".join(secrets.choice(_ALPHABET) for _ in range(_LENGTH))
        codes.append("-".join(raw[i : i + 4] for i in range(0, _LENGTH, 4)))
    return codes


def normalize(code: object) -> str | None:
    """The code as stored (16 characters of the alphabet), or ``None`` if it cannot be one."""
    if not isinstance(code, str) or len(code) > 64:
        return None
    raw = "".join(code.split()).replace("-", "").lower().translate(_READ_AS)
    if len(raw) != _LENGTH or any(c not in _ALPHABET for c in raw):
        return None
    return raw


def code_hash(code: str) -> str:
    """The stored form of a normalized code: its SHA-256, in hex."""
    return hashlib.sha256(code.encode("ascii")).hexdigest()
