"""The email that tells a user their two-step verification changed (``mfa.notify``).

Sent when a key is added or removed, or an admin resets them: if someone else
did it, the owner learns of it. From the first email provider's sender, else
``DEFAULT_FROM_EMAIL``; the templates ``webauth/email/mfa_changed_subject.txt``,
``mfa_changed_message.txt`` and ``mfa_changed_message.html``. A message that
cannot be sent is logged and the change stands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..notices import send_notice
from .policy import django_user

if TYPE_CHECKING:
    from django.http import HttpRequest

    from ..conf import Config

__all__ = ["NOTIFIED", "notify"]

#: The changes the owner is told of.
NOTIFIED = ("added", "removed", "reset")


def notify(
    config: Config, user: object, action: str, request: HttpRequest | None, kind: str = "totp"
) -> bool:
    """Mail *user* that their second factors changed (*action*, to a key of *kind*);
    whether a message went."""
    if action not in NOTIFIED or not config.mfa.notify:
        return False
    address = getattr(django_user(user), "email", None) or getattr(user, "email", None)
    context = {"action": action, "kind": kind}
    return send_notice(config, "mfa_changed", address, context, request, "second-factor notice")
