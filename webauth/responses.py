"""Response helpers with Auth.js's exact bodies and headers."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.utils.cache import patch_cache_control

__all__ = [
    "NO_CACHE_HEADERS",
    "bad_request",
    "encoded_json_response",
    "json_bytes",
    "json_response",
    "private_no_store",
    "redirect",
]

NO_CACHE_HEADERS = {
    "Cache-Control": "private, no-cache, no-store",
    "Expires": "0",
    "Pragma": "no-cache",
}


# Django's ResponseHeaders keep {lowercase name: (name, value)} and check every
# header as it is set; these are constant ASCII, so they go in as those checks
# would leave them (about half the cost of a small JSON response otherwise).
_NO_CACHE_STORE = {name.lower(): (name, value) for name, value in NO_CACHE_HEADERS.items()}

_encode_json = json.JSONEncoder(separators=(",", ":"), default=str).encode


def json_response(data: Any, *, status: int = 200, no_cache: bool = False) -> HttpResponse:
    """A JSON response; ``None`` is sent as the literal ``null``."""
    return encoded_json_response(json_bytes(data), status=status, no_cache=no_cache)


def json_bytes(data: Any) -> bytes:
    """*data* as the compact JSON Auth.js sends (``JSON.stringify``), UTF-8 encoded."""
    return _encode_json(data).encode()


def encoded_json_response(
    content: bytes, *, status: int = 200, no_cache: bool = False
) -> HttpResponse:
    """A JSON response of already encoded *content* (see :func:`json_bytes`)."""
    # Bytes, so that Django need not work out a charset to encode a str with.
    response = HttpResponse(content, status=status, content_type=_JSON)
    if no_cache:
        response.headers._store.update(_NO_CACHE_STORE)
    return response


_JSON = "application/json"


def bad_request() -> HttpResponse:
    """``400 "Bad request."``: the answer to an unknown route or method."""
    return json_response("Bad request.", status=400)


def private_no_store(response: HttpResponseBase) -> HttpResponseBase:
    """Add ``Cache-Control: private, no-store`` to *response*, keeping what it has.

    For pages that belong to one visitor: the built-in pages, views behind
    ``@auth_required``, ``AuthRequiredMixin`` and ``protected_paths``, and the
    answers sending a visitor to sign in. No shared cache keeps them, and the
    browser does not show them again from its cache (Back after signing out
    fetches the page anew). Directives the view set stay (``no-store`` wins over
    a ``max-age``); ``private`` replaces ``public``.
    """
    patch_cache_control(response, private=True, no_store=True)
    return response


def redirect(url: str) -> HttpResponseRedirect:
    """A 302 to *url*."""
    return HttpResponseRedirect(url)
