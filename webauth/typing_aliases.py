"""Small named types for webauth's signatures (issue 21), each a real type, not a catch-all.

Kept apart from :mod:`webauth.types` (the adapters' records) so that the records
module stays about storage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from django.http import HttpRequest

__all__ = ["EventFields", "SignalSender"]


class SignalSender(TypedDict):
    """The ``sender`` (a provider id) and ``request`` every flow event carries."""

    sender: str
    request: HttpRequest


class EventFields(TypedDict, total=False):
    """A ``session`` or ``sign_out`` event's fields besides the request.

    ``session`` is the session as the event reports it (the deleted database
    session, or the session a read gave); ``token`` the decoded JWT.
    """

    session: object
    token: Mapping[str, object] | None
