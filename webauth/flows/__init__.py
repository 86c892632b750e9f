"""The sign-in flows, one module per kind of provider, and the table that picks one.

A route (``POST /auth/signin/<id>``, ``/auth/callback/<id>``), :func:`webauth.sign_in`,
the sign-in page and the template tags never look at a provider's class: they
ask :func:`flow_for` about its :attr:`~webauth.providers.base.Provider.type`.
Each :class:`Flow` says how that kind of provider signs in. Every flow ends in
:func:`webauth.flows.signin.finish`, so a new kind of provider (email links,
passkeys) adds its first half and one entry to :data:`FLOWS`.

Every flow function has the same signature: ``(state, provider, params,
callback_url) -> HttpResponse``, where *params* are what the client sent (the
request's query or body, or a helper's arguments).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import credentials, email, oauth, webauthn
from .accounts import LINKING_METHODS

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..providers.base import Provider
    from ..state import AuthState

__all__ = ["FLOWS", "Flow", "FlowFunction", "flow_for"]

FlowFunction = Callable[["AuthState", "Provider", Mapping[str, Any], str], "HttpResponse"]


@dataclass(frozen=True, slots=True)
class Flow:
    """How one kind of provider signs a user in.

    ``name``: how messages call it ("OAuth sign-in").
    ``start``: ``POST /auth/signin/<id>`` (send the browser to the provider, or
    send the email); ``None`` when sign-in starts from a form that posts to the
    callback route (``posts_to_callback``), as credentials do.
    ``callback``: ``/auth/callback/<id>``, which finishes the sign-in.
    ``callback_methods``: the HTTP methods the callback accepts.
    ``callback_needs_csrf``: whether a ``POST`` to the callback checks webauth's
    CSRF token (only for a form of our own; a provider's redirect cannot carry it).
    ``adapter_methods``: the adapter methods the flow calls when there is an
    adapter (system check ``webauth.E008``).
    ``needs_adapter``: whether the flow cannot work without an adapter at all
    (email sign-in stores its grants there; ``webauth.E008`` too).
    ``start_reads_body``: whether ``start`` takes its *params* from the POST body
    (the email address) rather than the query (OAuth's authorization parameters).
    ``options``: ``GET /auth/webauthn-options/<id>`` (WebAuthn's ceremony options),
    ``None`` for kinds without one.
    ``experimental``: the ``WEBAUTH["experimental"]`` switch the kind needs
    (``"enable_webauthn"``), checked at start-up (``webauth.E011``) and per request.
    """

    name: str
    callback: FlowFunction
    start: FlowFunction | None = None
    posts_to_callback: bool = False
    callback_methods: frozenset[str] = frozenset({"GET", "POST"})
    callback_needs_csrf: bool = False
    adapter_methods: tuple[str, ...] = ()
    needs_adapter: bool = False
    start_reads_body: bool = False
    options: FlowFunction | None = None
    experimental: str | None = None


_OAUTH = Flow(
    name="OAuth", callback=oauth.callback, start=oauth.start, adapter_methods=LINKING_METHODS
)

#: Provider type -> its flow.
FLOWS: Mapping[str, Flow] = {
    "credentials": Flow(
        name="Credentials",
        callback=credentials.callback,
        posts_to_callback=True,
        callback_methods=frozenset({"POST"}),
        callback_needs_csrf=True,
    ),
    "oauth": _OAUTH,
    "oidc": _OAUTH,
    "email": Flow(
        name="Email",
        callback=email.callback,
        start=email.start,
        callback_needs_csrf=True,  # for its POSTs; the link's GET carries none
        adapter_methods=email.EMAIL_METHODS,
        needs_adapter=True,
        start_reads_body=True,
    ),
    "webauthn": Flow(
        name="WebAuthn",
        callback=webauthn.callback,
        # The page's script posts the credential to the callback; Auth.js checks
        # no CSRF token there: the challenge is bound to the browser that asked.
        posts_to_callback=True,
        callback_methods=frozenset({"POST"}),
        adapter_methods=webauthn.WEBAUTHN_METHODS,
        needs_adapter=True,
        options=webauthn.options,
        experimental="enable_webauthn",
    ),
}


def flow_for(provider: Provider) -> Flow | None:
    """The flow of *provider*'s type, or ``None`` for a type webauth cannot sign in with."""
    return FLOWS.get(provider.type)
