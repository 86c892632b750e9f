"""Auth.js's double-submit CSRF token.

The cookie holds ``<token>|<hash>`` where ``hash = sha256_hex(token + secret)``;
the page or client sends ``csrfToken=<token>`` back in the body of a POST.
A forged request cannot read the cookie (HttpOnly, SameSite=Lax) and so cannot
know the token; the hash lets us trust a cookie we issued without storing it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from .utils import remember_short

__all__ = ["CsrfState", "check_csrf", "new_csrf_cookie_value", "read_csrf_cookie", "token_matches"]


@dataclass(frozen=True, slots=True)
class CsrfState:
    """The outcome of reading the CSRF cookie for one request.

    ``token`` is the token to hand to forms; ``cookie`` is the value to set when
    a new cookie must be issued (``None`` when the incoming one is still good);
    ``verified`` is true only for a POST whose body token matches the cookie.
    """

    token: str
    cookie: str | None
    verified: bool


def _hash(token: str, secret: str) -> str:
    # Auth.js hashes the plain concatenation; a list of secrets is joined with
    # commas first (JS string conversion of an array). Matching that keeps our
    # cookies valid for a Next.js app sharing the secret.
    return hashlib.sha256((token + secret).encode()).hexdigest()


def new_csrf_cookie_value(secret: str) -> tuple[str, str]:
    """A fresh ``(token, cookie_value)`` pair: 32 random bytes as 64 hex chars."""
    token = secrets.token_hex(32)
    return token, f"{token}|{_hash(token, secret)}"


# A browser sends the same CSRF cookie with every request: remember the verdict on
# recent values (CsrfState is immutable) rather than re-hashing each time. Ours
# are 129 characters.
@remember_short(256, maxsize=1024)
def _issued_state(cookie_value: str, secret: str) -> CsrfState | None:
    """The state of a cookie value we issued (not verified yet), or ``None`` for anything else."""
    token, _, digest = cookie_value.partition("|")
    if token and hmac.compare_digest(digest.encode(), _hash(token, secret).encode()):
        return CsrfState(token=token, cookie=None, verified=False)
    return None


def read_csrf_cookie(cookie_value: str | None, secret: str) -> CsrfState:
    """The request's CSRF token: the cookie's if we issued it, else a new one to set.

    ``verified`` is always false here: only a POST's body can verify it
    (:func:`token_matches`).
    """
    if cookie_value and "|" in cookie_value:
        state = _issued_state(cookie_value, secret)
        if state is not None:
            return state
    token, cookie = new_csrf_cookie_value(secret)
    return CsrfState(token=token, cookie=cookie, verified=False)


def token_matches(state: CsrfState, body_token: object) -> bool:
    """Whether *body_token* (the ``csrfToken`` a POST sent) is the cookie's token.

    A token we just made up (``state.cookie`` set) was never sent to the client,
    so nothing can match it.
    """
    return (
        state.cookie is None
        and isinstance(body_token, str)
        and hmac.compare_digest(body_token.encode(), state.token.encode())
    )


def check_csrf(
    cookie_value: str | None, body_token: object, *, is_post: bool, secret: str
) -> CsrfState:
    """Validate the CSRF cookie and, for a POST, the token sent in the body."""
    state = read_csrf_cookie(cookie_value, secret)
    if is_post and token_matches(state, body_token):
        return CsrfState(token=state.token, cookie=None, verified=True)
    return state
