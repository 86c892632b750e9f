"""The sign-in flows, one module per kind of provider, and the table that describes each kind.

A kind of provider (credentials, OAuth, OIDC, email, passkeys) is described
once, by its entry in :data:`FLOWS` (keyed by the provider's
:attr:`~webauth.providers.base.Provider.type`): how it signs in (its
:class:`Flow`'s ``start``, ``callback`` and ``options``), the adapter methods it
calls, the app routes that serve it, and what the rest of webauth may ask about
it (the capability flags: whether it links accounts, is a passkey, sends email,
has a password form, ...). Routes, :func:`webauth.sign_in`, the pages, the
template tags, the account center, the admin, the system checks and the OpenAPI
description never compare a provider's ``type``: they ask :func:`flow_for`,
:func:`can` or :func:`providers_with`. Every flow ends in
:func:`webauth.flows.signin.finish`, so a new kind of provider adds its first
half (a flow module), its provider class and one entry here
(docs/architecture.md, "Adding a kind of provider").

Every flow function has the same signature: ``(state, provider, params,
callback_url) -> HttpResponse``, where *params* are what the client sent (the
request's query or body, or a helper's arguments). An app flow
(:mod:`webauth.flows.app`) is ``(state, provider, params) -> dict``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from . import app, credentials, email, oauth, webauthn
from .accounts import LINKING_METHODS

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..errors import ChallengeFailed, CredentialsSignin
    from ..providers.base import Provider
    from ..state import AuthState

__all__ = [
    "FLOWS",
    "AppFlowFunction",
    "AppRoute",
    "Capability",
    "Flow",
    "FlowFunction",
    "RefusedFormFunction",
    "app_routes",
    "can",
    "flow_for",
    "providers_with",
]

FlowFunction = Callable[["AuthState", "Provider", Mapping[str, object], str], "HttpResponse"]

#: A kind's answer to a refused form of the built-in sign-in page:
#: ``(state, provider, params, error) -> HttpResponse``.
RefusedFormFunction = Callable[
    ["AuthState", "Provider", Mapping[str, object], "CredentialsSignin | ChallengeFailed"],
    "HttpResponse",
]

#: An app sign-in flow (:mod:`webauth.flows.app`): ``(state, provider, body) -> answer``.
AppFlowFunction = Callable[["AuthState", Any, Mapping[str, object]], dict[str, object]]

#: One app route that serves a kind: ``(method, action, flow)``, for
#: ``<method> /auth/app/<action>/<id>`` (:mod:`webauth.actions.app`).
AppRoute = tuple[str, str, AppFlowFunction]

#: The capability flags of :class:`Flow` that :func:`can` and :func:`providers_with` ask about.
Capability = Literal[
    "links_accounts",
    "is_passkey",
    "sends_email",
    "has_password_form",
    "app_needs_code",
    "app_uses_cache",
]


@dataclass(frozen=True, slots=True)
class Flow:
    """One kind of provider: how it signs a user in, and what the rest of webauth asks about it.

    How it signs in:

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
    ``callback_rate_limit``: the rate limit the callback route counts before the
    flow runs (``oauth_callback``); ``None`` when the flow limits its own attempts
    (credentials, email, passkeys: so that :func:`webauth.sign_in` is limited too).
    ``app_routes``: the app sign-in routes that serve the kind (:data:`AppRoute`;
    :data:`webauth.actions.app.APP_ROUTES` is made from them).
    ``refused_form``: what a browser gets when the built-in sign-in page's form
    of this kind is refused (``CredentialsSignin``, or ``ChallengeFailed``: the
    bot challenge): for credentials, the page
    again with what was typed (:func:`webauth.flows.credentials.refused_form`).
    ``None``: the error's own answer (Auth.js's), as with a custom sign-in page
    or a client that reads JSON.

    What callers ask (the capability flags, :data:`Capability`):

    ``links_accounts``: a sign-in links the provider's account to the user; the
    account center lists such accounts as connections (and may connect or
    disconnect one), and the re-authentication page offers the provider to a
    user with an account there.
    ``is_passkey``: signs in with a passkey: pages show the passkey widget rather
    than a form, the passkey tags and the account center's passkey section use
    it, and the admin's passkey list expects it (``webauth.E013``, ``W011`` too).
    ``sends_email``: signs in by mail (a link or a code): the re-authentication
    page fills in the user's address, the admin's grant list expects it.
    ``has_password_form``: a form of the project's fields checked by the server;
    a refusal (``CredentialsSignin``) shows the built-in page's form again with
    what was typed, and the re-authentication page fills in the username.
    ``app_needs_code``: its app sign-in works only with one-time codes (the
    provider's ``code``): a link cannot come back to an app (OpenAPI description).
    ``app_uses_cache``: its app sign-in keeps single-use records (OAuth's state,
    ID tokens' nonces) in the rate limits' cache, which must then work
    (``webauth.E009``, ``W006``, ``W007``).
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
    callback_rate_limit: str | None = None
    app_routes: tuple[AppRoute, ...] = ()
    refused_form: RefusedFormFunction | None = None
    links_accounts: bool = False
    is_passkey: bool = False
    sends_email: bool = False
    has_password_form: bool = False
    app_needs_code: bool = False
    app_uses_cache: bool = False


_OAUTH = Flow(
    name="OAuth",
    callback=oauth.callback,
    start=oauth.start,
    adapter_methods=LINKING_METHODS,
    callback_rate_limit="oauth_callback",
    app_routes=(
        ("POST", "idtoken", app.id_token_sign_in),
        ("POST", "authorize", app.authorize),
        ("POST", "token", app.token),
    ),
    links_accounts=True,
    app_uses_cache=True,
)

#: Provider type -> its flow.
FLOWS: Mapping[str, Flow] = {
    "credentials": Flow(
        name="Credentials",
        callback=credentials.callback,
        posts_to_callback=True,
        callback_methods=frozenset({"POST"}),
        callback_needs_csrf=True,
        app_routes=(("POST", "signin", app.credentials_sign_in),),
        refused_form=credentials.refused_form,
        has_password_form=True,
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
        app_routes=(("POST", "signin", app.email_request), ("POST", "callback", app.email_redeem)),
        sends_email=True,
        app_needs_code=True,
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
        app_routes=(
            ("GET", "webauthn-options", app.passkey_options),
            ("POST", "callback", app.passkey_verify),
        ),
        is_passkey=True,
    ),
}


def flow_for(provider: Provider) -> Flow | None:
    """The flow of *provider*'s type, or ``None`` for a type webauth cannot sign in with."""
    return FLOWS.get(provider.type)


def can(subject: Provider | str, capability: Capability) -> bool:
    """Whether *subject*'s kind has *capability* (one of :class:`Flow`'s flags).

    *subject* is a provider, or the kind's name as an account record stores it
    (:attr:`webauth.types.LinkedAccount.type`). An unknown kind can do nothing.
    """
    flow = FLOWS.get(subject if isinstance(subject, str) else subject.type)
    return flow is not None and bool(getattr(flow, capability))


def providers_with(providers: Iterable[Provider], capability: Capability) -> list[Provider]:
    """The providers of *providers* whose kind has *capability*, in their order."""
    return [p for p in providers if can(p, capability)]


def app_routes() -> dict[tuple[str, str], dict[str, AppFlowFunction]]:
    """``(method, action)`` -> provider type -> its app flow, from each kind's ``app_routes``."""
    routes: dict[tuple[str, str], dict[str, AppFlowFunction]] = {}
    for kind, flow in FLOWS.items():
        for method, action, function in flow.app_routes:
            routes.setdefault((method, action), {})[kind] = function
    return routes
