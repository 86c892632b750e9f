"""The built-in pages: sign-in, sign-out, error and verify-request.

Each is a Django template under ``templates/webauth/`` that a project can
override, styled by the ``theme`` option. Strings are marked for translation.
Every page goes out with ``Cache-Control: private, no-store``: each carries a
CSRF token or says who is signed in, so no cache may keep or show it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import urlencode

from django.http import HttpResponse
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from .challenges import page_context as challenge_context
from .conf import Config
from .errors import SIGN_IN_EXPIRED
from .flows import flow_for
from .flows.credentials import forget_form, typed_values
from .flows.email import verify_request_context
from .providers.base import Provider
from .providers.credentials import DjangoCredentials
from .responses import private_no_store
from .state import AuthState

__all__ = [
    "ERROR_PAGES",
    "SIGNIN_ERRORS",
    "SIGNIN_ERROR_CODES",
    "SIGNOUT_ERRORS",
    "display_name",
    "forms_challenge",
    "passkey_context",
    "password_links",
    "provider_forms",
    "render_error_page",
    "render_page",
    "render_signin_page",
    "render_signout_page",
    "render_verify_request_page",
    "signed_in_context",
    "signin_layout",
    "theme_context",
    "usable_providers",
]

_TRY_ANOTHER = _("Try signing in with a different account.")

#: Messages shown on the sign-in page for ``?error=`` (Auth.js keeps the v4 codes).
SIGNIN_ERRORS: dict[str, object] = {
    "Signin": _TRY_ANOTHER,
    "OAuthSignin": _TRY_ANOTHER,
    "OAuthCallbackError": _TRY_ANOTHER,
    "OAuthCreateAccount": _TRY_ANOTHER,
    "EmailCreateAccount": _TRY_ANOTHER,
    "Callback": _TRY_ANOTHER,
    "OAuthAccountNotLinked": _(
        "To confirm your identity, sign in with the same account you used originally."
    ),
    "EmailSignin": _("The e-mail could not be sent."),
    "CredentialsSignin": _("Sign in failed. Check the details you provided are correct."),
    "SessionRequired": _("Please sign in to access this page."),
    "MissingCSRF": _("Your sign-in form expired. Please try again."),
    "AccountNotLinked": _(
        "To confirm your identity, sign in with the same account you used originally."
    ),
    # webauth addition: a rate limit of WEBAUTH["rate_limits"] refused the attempt.
    "RateLimited": _("Too many attempts. Please wait a few minutes before you try again."),
    # webauth addition: a sign-in waited too long for its second factor (webauth.mfa),
    # or had too many wrong codes.
    "SecondFactorExpired": _("Your sign-in was not finished in time. Please sign in again."),
    # webauth addition: the bot challenge of WEBAUTH["challenge"] refused the request.
    "ChallengeFailed": _("The security check failed. Please try again."),
    "default": _("Unable to sign in."),
}

#: Messages shown on the sign-out page for ``?error=`` (a webauth addition: Auth.js
#: sends a sign-out without its CSRF token to the sign-in page).
SIGNOUT_ERRORS: dict[str, object] = {
    "MissingCSRF": _("Your sign-out form expired. Please try again."),
}

#: Messages for ``?error=<type>&code=<code>`` where the code says more than the type.
SIGNIN_ERROR_CODES: dict[tuple[str, str], Any] = {
    ("EmailSignin", "invalid_email"): _("Enter a valid email address."),
    ("ChallengeFailed", "missing"): _("Please complete the security check, then try again."),
}

#: The sign-in page's forms the bot challenge can guard: a form's role -> its action.
_CHALLENGE_ROLES = {"password": "signin", "email": "email"}

#: error type -> (status, heading, message, hint)
ERROR_PAGES: dict[str, tuple[int, Any, Any, Any]] = {
    "Configuration": (
        500,
        _("Server error"),
        _("There is a problem with the server configuration."),
        _("Check the server logs for more information."),
    ),
    "AccessDenied": (
        403,
        _("Access denied"),
        _("You do not have permission to sign in."),
        "",
    ),
    "Verification": (
        403,
        _("Unable to sign in"),
        _("The sign-in link is no longer valid."),
        _("It may have been used already or it may have expired."),
    ),
    "WebAuthnVerificationError": (
        200,
        _("Unable to sign in"),
        _("The passkey could not be verified."),
        _("Try again, or use another way to sign in."),
    ),
    # webauth addition (errors.SIGN_IN_EXPIRED): what the visitor did, not a server
    # error: an OAuth callback opened again or forged, an unknown provider in the URL.
    SIGN_IN_EXPIRED: (
        200,
        _("Sign-in expired"),
        _("This sign-in link has expired or was already used."),
        _("Please sign in again."),
    ),
    "default": (200, _("Error"), _("An error occurred while signing in."), ""),
}


#: The built-in providers' default names that are words, not brands, as the pages
#: show them in "Sign in with %(name)s" (``GET /auth/providers`` keeps the English
#: name, as Auth.js's does). Any other name is shown as given.
_WORD_NAMES: dict[str, object] = {
    "Password": pgettext_lazy("provider name in: Sign in with ...", "Password"),
    "Email": pgettext_lazy("provider name in: Sign in with ...", "Email"),
    "Credentials": pgettext_lazy("provider name in: Sign in with ...", "Credentials"),
}


def display_name(provider: Provider) -> Any:
    """The provider's name as the built-in pages show it: translated if it is a word."""
    return _WORD_NAMES.get(provider.name, provider.name)


def theme_context(config: Config) -> dict[str, object]:
    """The ``theme`` of ``webauth/base.html``, from ``WEBAUTH["theme"]``."""
    theme = config.theme
    return {
        "color_scheme": theme.color_scheme,
        "logo": theme.logo,
        "brand_color": theme.brand_color,
        "button_text": theme.button_text,
    }


def signed_in_context(state: AuthState) -> dict[str, str] | None:
    """Who the visitor is signed in as, for the pages that say so; ``None`` when signed out.

    ``label`` is the session user's name, else its email, else empty;
    ``continue_url`` the callback URL (where the visitor was going);
    ``signout_url`` the sign-out page. Template: ``includes/signed_in_as.html``.
    """
    session = state.session
    user = session.get("user") if isinstance(session, Mapping) else None
    if user is None:
        return None
    label = ""
    if isinstance(user, Mapping):
        label = next(
            (v for v in (user.get("name"), user.get("email")) if isinstance(v, str) and v), ""
        )
    return {
        "label": label,
        "continue_url": state.callback_url,
        "signout_url": f"{state.base_url}/signout",
    }


def render_page(
    state: AuthState | None,
    template: str,
    context: dict[str, object],
    *,
    config: Config,
    status: int = 200,
) -> HttpResponse:
    """Render a built-in page with the theme in its context (``private, no-store``)."""
    request = state.request if state is not None else None
    html = render_to_string(template, {"theme": theme_context(config), **context}, request=request)
    response = HttpResponse(html, status=status, content_type="text/html; charset=utf-8")
    private_no_store(response)
    return response


def _button_style(provider: Provider) -> dict[str, object]:
    """The logo URL and colours of an OAuth provider's button (local static files only)."""
    style = getattr(provider, "style", None) or {}
    logo = style.get("logo")
    return {
        "logo": static(logo) if logo else None,
        "bg": style.get("bg"),
        "text": style.get("text"),
    }


def _fields(
    declared: Mapping[str, Mapping[str, object]],
    errors: Mapping[str, str],
    values: Mapping[str, str],
) -> list[dict[str, object]]:
    fields = []
    for name, attrs in declared.items():
        extra = {
            k: v
            for k, v in attrs.items()
            if k not in ("label", "type") and isinstance(v, str | int | bool)
        }
        fields.append(
            {
                "name": name,
                "label": attrs.get("label", name),
                "type": attrs.get("type", "text"),
                "attrs": extra,
                "value": values.get(name, ""),
                "error": errors.get(name, ""),
                "invalid": bool(errors.get(name)),
            }
        )
    return fields


def _describe_errors(fields: list[dict[str, Any]], provider_id: str) -> None:
    # A field's own error is tied to it (aria-describedby), and the first such
    # field takes the focus when the page loads again with it.
    focused = False
    for field in fields:
        if field["error"]:
            field["describedby"] = f"error-{field['name']}-for-{provider_id}"
            field["autofocus"] = not focused
            focused = True


def usable_providers(config: Config) -> tuple[Provider, ...]:
    """The providers a page may offer: all but those whose experimental switch is off."""
    usable = []
    for p in config.providers:
        flow = flow_for(p)
        if (
            flow is not None
            and flow.experimental
            and not config.experimental.get(flow.experimental)
        ):
            continue
        usable.append(p)
    return tuple(usable)


def passkey_context(provider: Provider, base_url: str, *, autofill: bool) -> dict[str, Any]:
    """What the passkey templates (``includes/passkey_*.html``) need about a WebAuthn provider.

    The script (``static/webauth/passkeys.js``) reads it from the container's
    ``data-`` attributes: the provider, the routes' base URL, autofill on or off.
    """
    field_name = getattr(provider, "conditional_ui_field", None)
    declared: Mapping[str, Mapping[str, object]] = getattr(provider, "form_fields", {}) or {}
    if field_name is None and declared:
        field_name = next(iter(declared))
    field = None
    if field_name is not None:
        attrs = {k: v for k, v in declared[field_name].items() if k != "required"}
        (field,) = _fields({field_name: attrs}, {}, {})
    return {
        "id": provider.id,
        "name": provider.name,
        "base_url": base_url,
        "autofill": autofill and bool(getattr(provider, "enable_conditional_ui", False)),
        "discoverable": getattr(provider, "resident_key", "") == "required",
        "field": field,
    }


def _role(flow: Any) -> str:
    # What the sign-in page makes of a kind (signin_layout): a form of the project's
    # fields with a password, an address to mail, or a button.
    if flow is not None and flow.has_password_form:
        return "password"
    if flow is not None and flow.sends_email:
        return "email"
    return "button"


def provider_forms(
    providers: tuple[Provider, ...],
    base_url: str,
    *,
    field_errors: Mapping[str, Mapping[str, str]] | None = None,
    values: Mapping[str, Mapping[str, str]] | None = None,
) -> list[dict[str, object]]:
    """What a template needs to render one sign-in form per provider.

    *field_errors* and *values* (provider id -> field -> text) put a field's
    error and what was typed back into the form after a refused attempt.
    A WebAuthn provider gets ``passkey`` (:func:`passkey_context`) instead of a
    form: the first one on the page has autofill, and offers to create an account.
    """
    forms: list[dict[str, object]] = []
    passkeys = 0
    for p in providers:
        flow = flow_for(p)
        if flow is not None and flow.is_passkey:
            passkey = passkey_context(p, base_url, autofill=passkeys == 0)
            passkey["register"] = passkeys == 0
            passkeys += 1
            forms.append(
                {"id": p.id, "name": p.name, "type": p.type, "role": "passkey", "passkey": passkey}
            )
            continue
        entry: dict[str, object] = {
            "id": p.id,
            "name": display_name(p),
            "type": p.type,
            "role": _role(flow),
            "signin_url": f"{base_url}/signin/{p.id}",
            "callback_url": f"{base_url}/callback/{p.id}",
            "fields": [],
        }
        errors = (field_errors or {}).get(p.id, {})
        typed = (values or {}).get(p.id, {})
        if flow is not None and flow.posts_to_callback:
            # Credentials post to the callback route, as Auth.js's page does.
            entry["action"] = entry["callback_url"]
            entry["fields"] = _fields(getattr(p, "credentials", {}), errors, typed)
        else:
            # OAuth: a button; email: the address field and a button.
            entry["action"] = entry["signin_url"]
            entry["fields"] = _fields(getattr(p, "form_fields", {}), errors, typed)
            entry.update(_button_style(p))
        _describe_errors(cast(list[dict[str, Any]], entry["fields"]), p.id)
        forms.append(entry)
    return forms


#: The ``autocomplete`` of the field that passkey autofill attaches to (WebAuthn's
#: conditional mediation looks for the ``webauthn`` token).
AUTOFILL = "username webauthn"

#: Above this many provider buttons, the sign-in page sets them in two columns.
GRID_FROM = 4


def _input_is(field: Mapping[str, Any] | None, input_type: str) -> bool:
    # A form field's HTML input type ("password", "email"), not a provider's kind.
    return field is not None and field["type"] == input_type


def _with_attrs(field: Mapping[str, Any], **attrs: object) -> dict[str, Any]:
    return {**field, "attrs": {**field.get("attrs", {}), **attrs}}


def signin_layout(
    forms: list[dict[str, Any]], *, error: str | None = None, message: object = None
) -> dict[str, Any]:
    """How the sign-in page arranges :func:`provider_forms`: one identifier, one primary action.

    - ``primary``: the first form with a password (else the first email form). Its
      first field that is not a password is the page's one identifier field
      (``identifier``); the rest are ``fields``. With a passkey provider on the
      page, the identifier carries ``autocomplete="username webauthn"``: the
      browser offers passkeys in that field (autofill), and the passkey widget
      renders no field of its own. A refused password (*error* is
      ``CredentialsSignin``) is said inside this form (``error_message``), tied
      to its fields and focused, rather than at the top of the page.
    - ``passkey``: the first passkey provider's widget: "Sign in with a passkey"
      and creating an account with one. ``identifier_id`` is the field it reads;
      ``register_field`` a field of its own, shown only for a new account, when
      the identifier is not an address (a username). Without a primary form the
      widget is the primary action, with its own field as the identifier.
    - ``more``: every other form with fields (another email or password
      provider), each behind a disclosure that names it.
    - ``buttons``: the providers that are one button (OAuth, OpenID Connect).

    Every form still posts to its provider's Auth.js route with its own field
    names, so each method works without JavaScript (passkeys excepted, which
    need it and stay hidden until the script shows them).
    """
    fielded = [f for f in forms if f.get("role") in ("password", "email")]
    primary = next((f for f in fielded if f["role"] == "password"), None) or next(
        iter(fielded), None
    )
    passkey_form = next((f for f in forms if f.get("role") == "passkey"), None)
    passkey = dict(passkey_form["passkey"]) if passkey_form is not None else None
    layout: dict[str, Any] = {
        "primary": None,
        "passkey": passkey,
        "more": [f for f in fielded if f is not primary],
        "buttons": [f for f in forms if f.get("role") == "button"],
        "error_in_form": False,
    }
    # Many services: two columns of buttons with the service's name alone.
    layout["grid"] = len(layout["buttons"]) > GRID_FROM
    if primary is not None:
        fields = list(primary["fields"])
        index = next((i for i, f in enumerate(fields) if not _input_is(f, "password")), None)
        identifier = fields.pop(index) if index is not None else None
        if identifier is not None and passkey is not None and passkey["autofill"]:
            identifier = _with_attrs(identifier, autocomplete=AUTOFILL)
        in_form = error == "CredentialsSignin" and primary["role"] == "password"
        if in_form:
            # Said beside the fields it is about, and the focus moved there: to the
            # password when the identifier was filled in again, else the identifier.
            described = f"error-for-{primary['id']}"
            refused = [f for f in (identifier, *fields) if f is not None]
            refused = [{**f, "invalid": True, "describedby": described} for f in refused]
            target = next(
                (
                    f
                    for f in refused
                    if _input_is(f, "password") and identifier and identifier["value"]
                ),
                refused[0] if refused else None,
            )
            for field in refused:
                field["autofocus"] = field is target
            if identifier is not None:
                identifier, fields = refused[0], refused[1:]
            else:
                fields = refused
        layout["primary"] = {
            **primary,
            "identifier": identifier,
            "fields": fields,
            "error_message": message if in_form else None,
        }
        layout["error_in_form"] = in_form
        if passkey is not None:
            own = passkey.pop("field", None)
            passkey["identifier_id"] = (
                f"input-{identifier['name']}-for-{primary['id']}" if identifier else ""
            )
            passkey["autofill"] = passkey["autofill"] and identifier is not None
            is_address = _input_is(identifier, "email")
            passkey["register_field"] = (
                _with_attrs(own, autocomplete="email") if own and not is_address else None
            )
    elif passkey is not None:
        passkey["primary"] = True
        own = passkey.get("field")
        passkey["identifier_id"] = f"input-{own['name']}-for-{passkey['id']}" if own else ""
    return layout


def render_signin_page(
    state: AuthState,
    *,
    status: int = 200,
    field_errors: Mapping[str, Mapping[str, str]] | None = None,
    values: Mapping[str, Mapping[str, str]] | None = None,
) -> HttpResponse:
    """The sign-in page: a form per provider, and the message for ``?error=``.

    After a refused email address the route renders it again (status 400) with
    *field_errors* and *values* (see :func:`provider_forms`). After a refused
    password (``?error=CredentialsSignin``) the fields the form had, passwords
    excepted, are filled in again from the cookie the callback left (shown once).
    A signed-in visitor is told who they are, with "Continue" and "Sign out"
    (:func:`signed_in_context`); the forms stay, as on Auth.js's page: signing
    in with another provider links it to the signed-in user (OAuth, passkeys),
    or signs in as someone else.
    """
    error = state.query.get("error")
    message = None
    if error:
        message = SIGNIN_ERROR_CODES.get((error, state.query.get("code", ""))) or (
            SIGNIN_ERRORS.get(error) or SIGNIN_ERRORS["default"]
        )
    email = state.query.get("email", "")
    if values is None and email:
        # Auth.js's page fills the email field from ?email=.
        values = {p.id: {"email": email} for p in state.config.providers}
    if values is None and error in ("CredentialsSignin", "ChallengeFailed"):
        values = typed_values(state) or None
    forms = provider_forms(
        usable_providers(state.config), state.base_url, field_errors=field_errors, values=values
    )
    challenge = forms_challenge(state, forms)
    layout = signin_layout(forms, error=error, message=message)
    response = render_page(
        state,
        "webauth/signin.html",
        {
            "providers": forms,
            "layout": layout,
            "password_links": password_links(state, layout),
            "csrf_token_value": state.csrf.token,
            "callback_url": state.callback_url,
            "error": error,
            "error_message": message,
            "email": email,
            "signed_in": signed_in_context(state),
            "challenge": challenge,
        },
        config=state.config,
        status=status,
    )
    forget_form(state, response)
    return response


def password_links(state: AuthState, layout: Mapping[str, Any]) -> dict[str, str | None]:
    """The sign-in page's "Forgot your password?" and "Create an account" links.

    ``reset``: ``/auth/reset`` (with the page's ``callbackUrl``) when
    ``WEBAUTH["passwords"]["reset"]`` is on and the page's primary form is a
    ``DjangoCredentials`` password (a project's own ``Credentials`` checks
    passwords webauth cannot reset); ``signup``: ``/auth/signup`` likewise
    with ``passwords.signup``. ``None`` for each that is off.
    """
    primary = layout.get("primary")
    passwords = state.config.passwords
    django_password = primary is not None and any(
        isinstance(p, DjangoCredentials) and p.id == primary["id"] for p in state.config.providers
    )
    query = "?" + urlencode({"callbackUrl": state.callback_url}) if state.callback_url else ""
    return {
        "reset": f"{state.base_url}/reset{query}" if django_password and passwords.reset else None,
        "signup": (
            f"{state.base_url}/signup{query}" if django_password and passwords.signup else None
        ),
    }


def forms_challenge(state: AuthState, forms: list[dict[str, object]]) -> dict[str, object] | None:
    """The bot challenge's widget for those of :func:`provider_forms` that need it now.

    ``None`` when the challenge is off (``WEBAUTH["challenge"]``: one attribute
    test, nothing read) or no form needs it now; else
    :func:`webauth.challenges.page_context`'s, whose ``needed`` also holds the
    roles of the forms that need it (``"password"``, ``"email"``), since each
    form includes ``webauth/includes/challenge.html`` with
    ``challenge_for=<its role>``. For every page that shows these forms: the
    sign-in page, the re-authentication page, ``{% webauth_signin_buttons %}``.
    """
    if state.config.challenge is None:
        return None
    roles = {str(form.get("role")) for form in forms} & set(_CHALLENGE_ROLES)
    found = challenge_context(state, sorted({_CHALLENGE_ROLES[role] for role in roles}))
    if found is not None:
        needed = cast(frozenset[str], found["needed"])
        found["needed"] = needed | {role for role in roles if _CHALLENGE_ROLES[role] in needed}
    return found


def render_signout_page(state: AuthState) -> HttpResponse:
    """The sign-out confirmation page; its form POSTs the CSRF token.

    ``?error=MissingCSRF`` (a sign-out whose form had expired) shows
    :data:`SIGNOUT_ERRORS`' message above a form with the current token. A
    visitor who is not signed in is told so, with a link to sign in, and gets
    no form.
    """
    error = state.query.get("error")
    signed_in = signed_in_context(state)
    callback_url = state.callback_url
    return render_page(
        state,
        "webauth/signout.html",
        {
            "action": f"{state.base_url}/signout",
            "csrf_token_value": state.csrf.token,
            "callback_url": callback_url,
            "error": error,
            "error_message": SIGNOUT_ERRORS.get(error) if error and signed_in else None,
            "signed_in": signed_in,
            "signin_url": f"{state.base_url}/signin?{urlencode({'callbackUrl': callback_url})}",
        },
        config=state.config,
    )


def render_verify_request_page(state: AuthState) -> HttpResponse:
    """The "check your email" page shown after requesting a magic link.

    In the browser that asked (it holds the email flow's pending cookie) it also
    names the address and, when the provider sends codes, has the code form.
    """
    return render_page(  # no-store, as every page: it may name the address
        state,
        "webauth/verify_request.html",
        {"url": state.origin, "host": state.request.get_host(), **verify_request_context(state)},
        config=state.config,
    )


def render_error_page(
    state: AuthState | None, error: str | None, *, config: Config, home: str = "/"
) -> HttpResponse:
    """The error page; its status depends on the error type."""
    status, heading, message, hint = ERROR_PAGES.get(error or "", ERROR_PAGES["default"])
    signin = f"{state.base_url}/signin" if state is not None else f"{config.base_path}/signin"
    # A signed-in visitor (who opened a stale callback, say) is told so. Not on the
    # Configuration page: reading the session may be what fails there.
    signed_in = signed_in_context(state) if state is not None and status < 500 else None
    if signed_in is not None and error == SIGN_IN_EXPIRED:
        hint = ""  # "Please sign in again": moot for a visitor who is signed in
    return render_page(
        state,
        "webauth/error.html",
        {
            "error": error,
            "heading": heading,
            "message": message,
            "hint": hint,
            "signin_url": signin,
            "home_url": state.origin if state is not None else home,
            "signed_in": signed_in,
        },
        config=config,
        status=status,
    )
