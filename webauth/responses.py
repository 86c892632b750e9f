"""Response helpers with Auth.js's exact bodies and headers."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse, HttpResponseRedirect

__all__ = ["NO_CACHE_HEADERS", "bad_request", "json_response", "redirect"]

NO_CACHE_HEADERS = {
    "Cache-Control": "private, no-cache, no-store",
    "Expires": "0",
    "Pragma": "no-cache",
}


_encode_json = json.JSONEncoder(separators=(",", ":"), default=str).encode


def json_response(data: Any, *, status: int = 200, no_cache: bool = False) -> HttpResponse:
    """A JSON response; ``None`` is sent as the literal ``null``."""
    return HttpResponse(
        # Bytes, so that Django need not work out a charset to encode a str with.
        _encode_json(data).encode(),
        status=status,
        content_type="application/json",
        headers=NO_CACHE_HEADERS if no_cache else None,
    )


def bad_request() -> HttpResponse:
    """``400 "Bad request."``: the answer to an unknown route or method."""
    return json_response("Bad request.", status=400)


def redirect(url: str) -> HttpResponseRedirect:
    """A 302 to *url*."""
    return HttpResponseRedirect(url)
