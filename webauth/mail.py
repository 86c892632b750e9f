"""webauth's emails, built one way: a subject, a text body and an HTML body.

Every message webauth sends (a sign-in link or code, a password reset, a
sign-up's confirmation, an address change, and the notices that tell an owner
something changed) comes from three templates named after it::

    webauth/email/<name>_subject.txt
    webauth/email/<name>_message.txt
    webauth/email/<name>_message.html

:func:`message` renders them into one ``EmailMultiAlternatives`` (the subject
on one line: a header holds one). The notices go through
:mod:`webauth.notices`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

if TYPE_CHECKING:
    from collections.abc import Mapping

    from django.http import HttpRequest

__all__ = ["message"]


def message(
    name: str,
    context: Mapping[str, Any],
    sender: str,
    address: str,
    request: HttpRequest | None = None,
    subject: str | None = None,
) -> EmailMultiAlternatives:
    """The message of the templates ``webauth/email/<name>_*`` for *address*.

    *subject*, when given, stands for the subject template (a provider's own).
    """
    base = f"webauth/email/{name}"
    if subject is None:
        subject = render_to_string(f"{base}_subject.txt", context, request)
    text = render_to_string(f"{base}_message.txt", context, request)
    html = render_to_string(f"{base}_message.html", context, request)
    built = EmailMultiAlternatives(" ".join(subject.split()), text, sender, [address])
    built.attach_alternative(html, "text/html")
    return built
