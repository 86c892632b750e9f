"""Which kind of client sent a request, and so what kind of answer it reads.

Every rule webauth has for telling a browser that follows redirects and
reads pages from a script that reads JSON, in one place:

- :func:`returns_redirect`: Auth.js's own clients (``signIn(..., {redirect:
  false})`` in next-auth/react and friends) send ``X-Auth-Return-Redirect``
  and read ``{"url": ...}`` instead of following a redirect;
- :func:`reads_json`: the rule of webauth's Auth.js routes: such a client, or
  one whose ``Accept`` names JSON and not HTML (``fetch`` with JSON headers);
- :func:`prefers_json`: the rule of the project's own pages
  (``@auth_required``, ``protected_paths``): an ``XMLHttpRequest``, or an
  ``Accept`` that prefers JSON to HTML by its weights, as Django's
  ``get_preferred_type`` reads it. It is public as :func:`webauth.wants_json`.

The two JSON rules differ on purpose: the Auth.js routes answer as Auth.js
does (its clients' headers), the project's pages as Django's content
negotiation does.
"""

from __future__ import annotations

from django.http import HttpRequest

__all__ = ["RETURN_REDIRECT", "prefers_json", "reads_json", "returns_redirect"]

#: The ``META`` key of Auth.js's ``X-Auth-Return-Redirect`` header (``key in
#: request.META`` is :func:`returns_redirect` without a call, for the hot path).
RETURN_REDIRECT = "HTTP_X_AUTH_RETURN_REDIRECT"


def returns_redirect(request: HttpRequest) -> bool:
    """Whether the client reads ``{"url": ...}`` rather than following a redirect."""
    return RETURN_REDIRECT in request.META


def reads_json(request: HttpRequest) -> bool:
    """Whether the client reads JSON answers (Auth.js's clients, ``fetch``) rather than pages."""
    meta = request.META
    if RETURN_REDIRECT in meta:
        return True
    accept = meta.get("HTTP_ACCEPT", "")
    return "application/json" in accept and "text/html" not in accept


def prefers_json(request: HttpRequest) -> bool:
    """Whether the client asked for JSON (``Accept`` prefers it, or an XHR) rather than a page."""
    if request.headers.get("X-Requested-With") == "XMLHttpRequest":
        return True
    accept = request.headers.get("Accept", "")
    if "application/json" not in accept:
        return False
    return request.get_preferred_type(["text/html", "application/json"]) == "application/json"
