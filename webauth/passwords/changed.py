"""What follows a new password, whichever way it came (reset, change or set).

:func:`password_changed` is called once the user's new password is saved. It
ends the user's other sessions under both strategies (a JWT session ends by
itself, since the session auth hash it carries no longer matches; database
rows are deleted, so that the account center's list is true at once), forgets
their trusted browsers (``mfa.trust_days``), keeps the request's own session
when asked (re-issued with the new hash), sends the ``password_changed``
event, and mails the user (``passwords.notify``): if someone else changed it,
the owner learns of it.

The message comes from the templates ``webauth/email/password_changed_subject.txt``,
``password_changed_message.txt`` and ``password_changed_message.html``, from the
first email provider's sender, else ``DEFAULT_FROM_EMAIL``. A message that cannot
be sent is logged and the change stands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..conf import get_config
from ..events import emit
from ..helpers import update_session_auth_hash
from ..notices import send_notice
from ..user_sessions import sign_out_everywhere

if TYPE_CHECKING:
    from django.http import HttpRequest

    from ..conf import Config

__all__ = ["HOW", "notify", "password_changed"]

#: How a password came to change: a reset by email, a change (the current one
#: typed first) or a first one set in the account center.
HOW = ("reset", "change", "set")

How = Literal["reset", "change", "set"]


def password_changed(
    request: HttpRequest, user: object, *, how: How, keep_current: bool
) -> str | None:
    """End what the old password allowed, after *user*'s new one was saved.

    *user* is the ``AUTH_USER_MODEL`` instance whose password just changed.
    With *keep_current*, the request's own session (when it is *user*'s) stays
    signed in; every other session of the user ends. Returns what
    :func:`webauth.update_session_auth_hash` returns: the bearer token an app
    must use from now on, else ``None``.
    """
    if how not in HOW:
        raise ValueError(f"how must be one of {HOW}, got {how!r}")
    config = get_config()
    token = None
    if keep_current:
        token = update_session_auth_hash(request, user)
    ended = sign_out_everywhere(user, request if keep_current else None)
    config.logger.debug("password_changed", {"how": how, "sessions_ended": ended})
    emit(config, "password_changed", user=user, how=how, request=request)
    notify(config, user, how, request)
    return token


def notify(config: Config, user: object, how: str, request: HttpRequest | None) -> bool:
    """Mail *user* that their password changed (*how*); whether a message went."""
    if not config.passwords.notify:
        return False
    return send_notice(
        config,
        "password_changed",
        getattr(user, "email", None),
        {"how": how},
        request,
        "password notice",
    )
