"""The email that tells a user their two-step verification changed (``mfa.notify``).

Sent when a key is added or removed, or an admin resets them: if someone else
did it, the owner learns of it. From the first email provider's sender, else
``DEFAULT_FROM_EMAIL``; the templates ``webauth/email/mfa_changed_subject.txt``,
``mfa_changed_message.txt`` and ``mfa_changed_message.html``. A message that
cannot be sent is logged and the change stands.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from ..errors import AuthError
from ..flows import providers_with
from .policy import django_user

if TYPE_CHECKING:
    from django.http import HttpRequest

    from ..conf import Config

__all__ = ["NOTIFIED", "notify"]

#: The changes the owner is told of.
NOTIFIED = ("added", "removed", "reset")


def _sender(config: Config) -> str:
    for provider in providers_with(config.providers, "sends_email"):
        sender = getattr(provider, "sender", None)
        if isinstance(sender, str) and sender:
            return sender
    return str(settings.DEFAULT_FROM_EMAIL)


def notify(
    config: Config, user: object, action: str, request: HttpRequest | None, kind: str = "totp"
) -> bool:
    """Mail *user* that their second factors changed (*action*, to a key of *kind*);
    whether a message went."""
    if action not in NOTIFIED or not config.mfa.notify:
        return False
    address = getattr(django_user(user), "email", None) or getattr(user, "email", None)
    if not isinstance(address, str) or "@" not in address:
        return False
    context = {
        "action": action,
        "kind": kind,
        "host": request.get_host() if request is not None else "",
        "theme": asdict(config.theme),
    }
    try:
        rendered = render_to_string("webauth/email/mfa_changed_subject.txt", context, request)
        subject = " ".join(rendered.split())  # a header holds one line
        text = render_to_string("webauth/email/mfa_changed_message.txt", context, request)
        html = render_to_string("webauth/email/mfa_changed_message.html", context, request)
        message = EmailMultiAlternatives(subject, text, _sender(config), [address])
        message.attach_alternative(html, "text/html")
        message.send(fail_silently=False)
    except Exception as exc:  # the change is made: a lost notice is logged, not raised
        config.logger.error(
            AuthError("The second-factor notice could not be sent", cause={"err": exc})
        )
        return False
    return True
