"""Template tags: ``{% load webauth %}``.

``{% webauth_signin_buttons %}`` renders a sign-in form per provider (each a POST
with webauth's CSRF token); ``{% webauth_signin_buttons callback_url="/next" %}``
sets where the user lands. ``{% provider_signin_url "github" %}`` is the URL a
provider's form posts to, and ``{% webauth_csrf_token %}`` the hidden CSRF input a
hand-written form needs.

Passkeys (a WebAuthn provider, with ``experimental={"enable_webauthn": True}``):
``{% webauth_passkey_signin %}`` is the sign-in page's passkey section (the
"Sign in with a passkey" button and autofill on the address field);
``{% webauth_passkey_register %}`` a button that adds a passkey to the signed-in
user (or, for a visitor, creates an account with an address and a passkey);
``{% webauth_passkey_offer %}`` the same button with a word of explanation,
shown only to a signed-in user who has no passkey yet (place it where users
land after a password or email sign-in). Each takes ``provider="<id>"`` (default:
the first WebAuthn provider) and ``callback_url``, and renders nothing when
no WebAuthn provider is enabled. They load ``static/webauth/passkeys.js``.

The account center's sections, for a project's own account page (each renders
nothing for a visitor, and needs ``webauth.account.urls`` routed: its forms
post there and come back to the page, with the outcome as a
``django.contrib.messages`` message): ``{% webauth_account_sessions %}`` (the
devices signed in, or what JWT sessions are), ``{% webauth_account_connections %}``
(connect and disconnect providers), ``{% webauth_account_passkeys %}`` (list,
rename, remove, add), ``{% webauth_account_email %}`` (the address, its
verification, changing it) and ``{% webauth_account_password %}`` (changing the
password, or setting a first one; nothing unless ``WEBAUTH["passwords"]["change"]``).
Each renders ``webauth/account/includes/<section>.html``.
"""

from __future__ import annotations

from collections.abc import Callable

from django import template
from django.http import HttpRequest
from django.template import Context
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from ..access import has_user
from ..account import sections as account
from ..conf import get_config
from ..flows import flow_for, providers_with
from ..flows.accounts import current_user
from ..pages import forms_challenge, passkey_context, provider_forms, usable_providers
from ..providers.base import Provider
from ..state import AuthState, get_state

register = template.Library()


def _request(context: Context, tag: str) -> HttpRequest:
    request: HttpRequest | None = context.get("request")
    if request is None:
        raise template.TemplateSyntaxError(
            f"{{% {tag} %}} needs the request in the template context "
            "(enable django.template.context_processors.request)."
        )
    return request


@register.simple_tag(takes_context=True)
def webauth_signin_buttons(context: Context, callback_url: str | None = None) -> SafeString:
    """A sign-in form per provider, for use in the project's own templates.

    Every form on a page carries the same CSRF token; when it is a new one,
    ``AuthMiddleware`` sets its cookie on the response that renders the page.
    """
    request = _request(context, "webauth_signin_buttons")
    state = get_state(request)
    target = callback_url or request.get_full_path()
    forms = provider_forms(usable_providers(state.config), state.base_url)
    html = render_to_string(
        "webauth/signin_buttons.html",
        {
            "providers": forms,
            "challenge": forms_challenge(state, forms),  # WEBAUTH["challenge"]
            "csrf_token_value": state.form_csrf_token(),
            "callback_url": state.redirect(target),
        },
        request=request,
    )
    return mark_safe(html)


@register.simple_tag(takes_context=True)
def webauth_csrf_token(context: Context) -> SafeString:
    """A hidden ``csrfToken`` input for a hand-written form that posts to webauth's routes.

    Django's ``{% csrf_token %}`` does not do here: webauth checks its own
    (Auth.js's) double-submit token. The cookie is set by ``AuthMiddleware`` on
    the response that renders the form.
    """
    state = get_state(_request(context, "webauth_csrf_token"))
    return format_html('<input type="hidden" name="csrfToken" value="{}">', state.form_csrf_token())


@register.simple_tag(takes_context=True)
def provider_signin_url(context: Context, provider_id: str) -> str:
    """The URL a provider's sign-in form posts to."""
    config = get_config()
    provider = config.get_provider(provider_id)
    if provider is None:
        raise template.TemplateSyntaxError(f"Unknown webauth provider {provider_id!r}")
    flow = flow_for(provider)
    action = "callback" if flow is not None and flow.posts_to_callback else "signin"
    return f"{config.base_path}/{action}/{provider_id}"


def _webauthn_provider(state: AuthState, provider_id: str | None, tag: str) -> Provider | None:
    """The WebAuthn provider a passkey tag is for; ``None`` when none is enabled."""
    providers = providers_with(usable_providers(state.config), "is_passkey")
    if provider_id is None:
        return providers[0] if providers else None
    for provider in providers:
        if provider.id == provider_id:
            return provider
    if state.config.get_provider(provider_id) is None:
        raise template.TemplateSyntaxError(f"{{% {tag} %}}: unknown provider {provider_id!r}")
    return None  # configured, but not a WebAuthn provider or not enabled


def _render_passkey(
    state: AuthState, name: str, passkey: dict[str, object], callback_url: str | None
) -> SafeString:
    request = state.request
    target = state.redirect(callback_url or request.get_full_path())
    html = render_to_string(
        f"webauth/includes/{name}.html",
        {"passkey": passkey, "callback_url": target},
        request=request,
    )
    return mark_safe(html)


@register.simple_tag(takes_context=True)
def webauth_passkey_signin(
    context: Context,
    provider: str | None = None,
    callback_url: str | None = None,
    autofill: bool = True,
) -> SafeString:
    """The passkey sign-in section: address field with autofill, and the passkey button."""
    state = get_state(_request(context, "webauth_passkey_signin"))
    found = _webauthn_provider(state, provider, "webauth_passkey_signin")
    if found is None:
        return mark_safe("")
    passkey = passkey_context(found, state.base_url, autofill=autofill)
    passkey["register"] = False
    return _render_passkey(state, "passkey_signin", passkey, callback_url)


def _register_button(
    context: Context,
    tag: str,
    provider: str | None,
    callback_url: str | None,
    label: str | None,
    *,
    offer: bool,
) -> SafeString:
    state = get_state(_request(context, tag))
    found = _webauthn_provider(state, provider, tag)
    if found is None:
        return mark_safe("")
    user = current_user(state)
    if offer:
        if user is None:
            return mark_safe("")
        storage = state.config.storage
        if storage.has("list_authenticators_by_user_id") and storage.list_authenticators_by_user_id(
            user.id
        ):
            return mark_safe("")  # the user has a passkey already
    passkey = passkey_context(found, state.base_url, autofill=False)
    if passkey["field"] is None:
        passkey["field"] = {"name": "email", "label": _("Email"), "type": "email", "attrs": {}}
    passkey.update(
        needs_email=user is None,
        offer=offer,
        label=label
        or (_("Create a passkey") if user is not None else _("Create an account with a passkey")),
    )
    return _render_passkey(state, "passkey_register", passkey, callback_url)


@register.simple_tag(takes_context=True)
def webauth_passkey_register(
    context: Context,
    provider: str | None = None,
    callback_url: str | None = None,
    label: str | None = None,
) -> SafeString:
    """A button that creates a passkey: for the signed-in user, or a new account."""
    return _register_button(
        context, "webauth_passkey_register", provider, callback_url, label, offer=False
    )


@register.simple_tag(takes_context=True)
def webauth_passkey_offer(
    context: Context,
    provider: str | None = None,
    callback_url: str | None = None,
    label: str | None = None,
) -> SafeString:
    """The offer to create a passkey, for a signed-in user who has none yet."""
    return _register_button(
        context, "webauth_passkey_offer", provider, callback_url, label, offer=True
    )


def _account_section(
    context: Context,
    tag: str,
    name: str,
    build: Callable[[HttpRequest], dict[str, object]],
) -> SafeString:
    """One account-center section for the signed-in user; nothing for a visitor."""
    request = _request(context, tag)
    if not has_user(get_state(request).session) or not request.user.is_authenticated:
        return mark_safe("")
    try:
        action = account.section_url(name)
    except account.AccountNotRouted as exc:
        raise template.TemplateSyntaxError(f"{{% {tag} %}}: {exc}") from None
    section = {**build(request), "action": action, "next": request.get_full_path()}
    return mark_safe(
        render_to_string(f"webauth/account/includes/{name}.html", section, request=request)
    )


@register.simple_tag(takes_context=True)
def webauth_account_sessions(context: Context) -> SafeString:
    """The signed-in user's sessions: sign one out, or every other (database strategy)."""
    return _account_section(
        context, "webauth_account_sessions", "sessions", account.sessions_context
    )


@register.simple_tag(takes_context=True)
def webauth_account_connections(context: Context) -> SafeString:
    """The OAuth providers: connect, disconnect (never the last way in)."""
    return _account_section(
        context, "webauth_account_connections", "connections", account.connections_context
    )


@register.simple_tag(takes_context=True)
def webauth_account_passkeys(context: Context) -> SafeString:
    """The signed-in user's passkeys: rename, remove (never the last way in), add."""
    return _account_section(
        context, "webauth_account_passkeys", "passkeys", account.passkeys_context
    )


@register.simple_tag(takes_context=True)
def webauth_account_email(context: Context) -> SafeString:
    """The signed-in user's address, whether it is verified, and changing it."""
    return _account_section(context, "webauth_account_email", "email", account.email_context)


@register.simple_tag(takes_context=True)
def webauth_account_password(context: Context) -> SafeString:
    """Change the signed-in user's password, or set one (nothing where passwords are not
    changed here: ``WEBAUTH["passwords"]["change"]``)."""
    return _account_section(
        context, "webauth_account_password", "password", account.password_context
    )
