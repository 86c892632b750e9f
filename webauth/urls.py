"""``path("auth/", include("webauth.urls"))`` serves every webauth route.

URL names (namespace ``webauth``) for ``{% url %}`` and ``reverse()``: ``session``,
``csrf``, ``providers``, ``signin``, ``signin-provider``, ``callback``, ``signout``,
``verify-request``, ``error``, ``webauthn-options``, ``signup`` (sign-up with a
password, ``WEBAUTH["passwords"]["signup"]``), ``openapi`` (the OpenAPI
description, with ``WEBAUTH["openapi"]`` on: docs/openapi.md), ``token``,
``token-ended`` (the revocation feed), ``jwks`` and ``openid-configuration``
(access tokens, ``WEBAUTH["tokens"]``: docs/tokens.md, with ``bearer`` also
``app-access-token``); with ``WEBAUTH["bearer"]`` on, ``app-session``,
``app-signout`` and ``app-signout-everywhere``, and the app sign-in routes
(docs/apps.md) ``app-signin``, ``app-callback``, ``app-webauthn-options``,
``app-idtoken``, ``app-authorize`` and ``app-token``, each with a
``provider_id``, and ``app-signup``; the password reset's (with
``WEBAUTH["passwords"]["reset"]``) ``reset``, ``reset-sent``, ``reset-confirm``,
``reset-done``, and with ``bearer`` ``app-reset`` and ``app-reset-confirm``. For
example ``reverse("webauth:callback", kwargs={"provider_id": "credentials"})``.
"""

from django.urls import path, re_path

from .actions.app import app_mfa_view, app_view
from .actions.app_session import app_session_view
from .actions.reset import app_reset_view
from .actions.signup import app_signup_view
from .actions.token import ended_view, jwks_view, metadata_view, token_view
from .openapi import openapi_view
from .utils import require_installed
from .views import auth_view

# Included while "webauth" is not an installed app: say so now (manage.py check
# imports the URLconf), not with a model error on the first sign-in.
require_installed("webauth.urls")

app_name = "webauth"

urlpatterns = [
    path("session", auth_view, {"action": "session"}, name="session"),
    path("csrf", auth_view, {"action": "csrf"}, name="csrf"),
    path("providers", auth_view, {"action": "providers"}, name="providers"),
    path("signin", auth_view, {"action": "signin"}, name="signin"),
    path("signout", auth_view, {"action": "signout"}, name="signout"),
    path("verify-request", auth_view, {"action": "verify-request"}, name="verify-request"),
    path("error", auth_view, {"action": "error"}, name="error"),
    path("signin/<str:provider_id>", auth_view, {"action": "signin"}, name="signin-provider"),
    path("callback/<str:provider_id>", auth_view, {"action": "callback"}, name="callback"),
    path("mfa", auth_view, {"action": "mfa"}, name="mfa"),
    path("signup", auth_view, {"action": "signup"}, name="signup"),
    # The password reset (WEBAUTH["passwords"]["reset"]; off: Auth.js's 400), a
    # trailing slash accepted: reset (the form), reset-sent, reset-confirm, reset-done.
    *(
        re_path(rf"^reset{suffix}/?$", auth_view, {"action": name}, name=name)
        for suffix, name in (
            ("", "reset"),
            ("/sent", "reset-sent"),
            ("/confirm", "reset-confirm"),
            ("/done", "reset-done"),
        )
    ),
    path(
        "webauthn-options/<str:provider_id>",
        auth_view,
        {"action": "webauthn-options"},
        name="webauthn-options",
    ),
    # -- Bearer sessions for apps (WEBAUTH["bearer"]): the token's own routes ----------
    # POST only, the Authorization header only (webauth.actions.app_session); an
    # optional trailing slash, as on the other routes.
    re_path(r"^app/session/?$", app_session_view, {"action": "session"}, name="app-session"),
    re_path(r"^app/signout/?$", app_session_view, {"action": "signout"}, name="app-signout"),
    re_path(
        r"^app/signout-everywhere/?$",
        app_session_view,
        {"action": "signout-everywhere"},
        name="app-signout-everywhere",
    ),
    re_path(
        r"^app/access-token/?$",
        app_session_view,
        {"action": "access-token"},
        name="app-access-token",
    ),
    # -- end of the bearer session routes ---------------------------------------------
    # -- App sign-in: JSON in and out, no cookies (WEBAUTH["bearer"], docs/apps.md) ----------
    # A trailing slash is accepted, as on every other route.
    *(
        re_path(
            rf"^app/{action}/(?P<provider_id>[^/]+)/?$",
            app_view,
            {"action": action},
            name=f"app-{action}",
        )
        for action in ("signin", "callback", "webauthn-options", "idtoken", "authorize", "token")
    ),
    # The second factor of an app's held sign-in (WEBAUTH["mfa"], docs/mfa.md).
    re_path(r"^app/mfa/?$", app_mfa_view, name="app-mfa"),
    # Sign-up with a password (WEBAUTH["passwords"]["signup"], docs/passwords.md).
    re_path(r"^app/signup/?$", app_signup_view, name="app-signup"),
    # The password reset (WEBAUTH["passwords"]["reset"], docs/passwords.md).
    re_path(r"^app/reset/?$", app_reset_view, {"action": "reset"}, name="app-reset"),
    re_path(
        r"^app/reset/confirm/?$", app_reset_view, {"action": "confirm"}, name="app-reset-confirm"
    ),
    # -- end of the app sign-in routes ------------------------------------------------------
    # Not an Auth.js action, so nothing Auth.js serves is shadowed: with
    # WEBAUTH["openapi"] off the view answers the catch-all's 400 "Bad request.".
    path("openapi.json", openapi_view, name="openapi"),
    # Access tokens for other services and what verifies them (WEBAUTH["tokens"],
    # docs/tokens.md); 404 while it is off. Not Auth.js actions either.
    re_path(r"^token/?$", token_view, name="token"),
    re_path(r"^token/ended/?$", ended_view, name="token-ended"),
    path(".well-known/jwks.json", jwks_view, name="jwks"),
    path(".well-known/openid-configuration", metadata_view, name="openid-configuration"),
    # Everything else (trailing slashes, unknown actions) is parsed by the view itself.
    re_path(r"^(?P<rest>.*)$", auth_view),
]
