"""Notices: the short emails that tell an account's owner something changed
(a password changed or set, a second factor added or removed).

They come from the first email-sending provider's sender (else
``DEFAULT_FROM_EMAIL``), and a notice that cannot be sent is logged, never
raised: what it tells of is done already.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from django.conf import settings

from .errors import AuthError
from .flows import providers_with
from .mail import message

if TYPE_CHECKING:
    from collections.abc import Mapping

    from django.http import HttpRequest

    from .conf import Config

__all__ = ["notice_sender", "send_notice"]


def notice_sender(config: Config) -> str:
    """Who a notice comes from: the first email-sending provider's sender, else
    ``DEFAULT_FROM_EMAIL``."""
    for provider in providers_with(config.providers, "sends_email"):
        sender = getattr(provider, "sender", None)
        if isinstance(sender, str) and sender:
            return sender
    return str(settings.DEFAULT_FROM_EMAIL)


def send_notice(
    config: Config,
    name: str,
    address: object,
    context: Mapping[str, Any],
    request: HttpRequest | None,
    what: str,
) -> bool:
    """Mail the notice *name* to *address*; whether it went.

    The templates also get ``host`` (the request's) and ``theme``. Nothing is
    sent to a value that is not an address; a message that cannot be sent is
    logged (*what*: the notice, as the log names it) and ``False`` returned.
    """
    if not isinstance(address, str) or "@" not in address:
        return False
    context = {
        "host": request.get_host() if request is not None else "",
        "theme": asdict(config.theme),
        **context,
    }
    try:
        message(name, context, notice_sender(config), address, request).send(fail_silently=False)
    except Exception as exc:  # what it tells of is done: a lost notice is logged, not raised
        config.logger.error(AuthError(f"The {what} could not be sent", cause={"err": exc}))
        return False
    return True
