"""The ``second_factor`` event: every change to a user's second factors, and every refusal.

``action`` says what happened: ``added`` (a key confirmed), ``removed``,
``recovery_codes`` (a new set), ``recovery_code_used``, ``failed`` (a wrong
code at sign-in), ``reset`` (an admin removed them all; ``by`` is that
admin). The message never holds a key or a code. The owner is told of an
addition, a removal and a reset by email (:mod:`webauth.mfa.notices`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..events import emit
from .notices import notify
from .policy import django_user

if TYPE_CHECKING:
    from django.http import HttpRequest

    from ..conf import Config

__all__ = ["ACTIONS", "announce"]

#: The actions of the ``second_factor`` event.
ACTIONS = ("added", "removed", "recovery_codes", "recovery_code_used", "failed", "reset")


def announce(
    config: Config,
    user: object,
    action: str,
    *,
    request: HttpRequest | None = None,
    by: object = None,
    kind: str | None = None,
) -> None:
    """Send the ``second_factor`` event for *user* (the ``AUTH_USER_MODEL`` user when known).

    *kind*: the kind of key added, removed or refused (``"totp"``, ``"webauthn"``),
    in the event as ``kind`` and in the owner's email.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown second-factor action {action!r}")
    extra: dict[str, object] = {"by": by} if by is not None else {}
    if kind is not None:
        extra["kind"] = kind
    notify(config, user, action, request, kind or "totp")
    emit(
        config,
        "second_factor",
        sender=None,
        user=django_user(user),
        action=action,
        request=request,
        **extra,
    )
