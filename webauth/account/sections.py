"""What each part of the account center shows: one function per section.

The pages (:mod:`webauth.account.views`) and the template tags
(``{% webauth_account_sessions %}``...) render the same section templates
(``webauth/account/includes/<section>.html``) from these contexts, so a
project's own page and the built-in one show the same thing. Each takes the
request of a signed-in user and reads through the adapter.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.sites.shortcuts import get_current_site
from django.core.exceptions import DisallowedHost, ObjectDoesNotExist
from django.http import HttpRequest
from django.shortcuts import resolve_url
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _

from ..adapters.base import FLOW_METHODS
from ..conf import Config, get_config
from ..flows import can, providers_with
from ..linked_accounts import linked_accounts, sign_in_methods
from ..pages import usable_providers
from ..passkeys import last_passkey_text, list_passkeys, passkeys_offered
from ..passwords import change as password_change
from ..state import get_state
from ..user_sessions import list_sessions
from ..utils import user_id
from .email import change_provider

__all__ = [
    "NAMESPACE",
    "SECTIONS",
    "AccountNotRouted",
    "connections_context",
    "describe_device",
    "email_context",
    "header_context",
    "home_url",
    "passkeys_context",
    "password_context",
    "section_url",
    "sessions_context",
]

#: The URL namespace of ``webauth.account.urls``.
NAMESPACE = "webauth_account"

#: The sections, in the order of the account center's menu.
SECTIONS = ("sessions", "connections", "passkeys", "email", "password")


class AccountNotRouted(LookupError):
    """The account center's URLs are not routed (``include("webauth.account.urls")``)."""


def section_url(name: str) -> str:
    """The URL of an account center page (``index``, ``sessions``, ..., ``reauthenticate``)."""
    try:
        return reverse(f"{NAMESPACE}:{name}")
    except NoReverseMatch:
        raise AccountNotRouted(
            "The account center's URLs are not routed: add "
            'path("account/", include("webauth.account.urls")) to your urlpatterns.'
        ) from None


# -- the header ----------------------------------------------------------------------------


def home_url(config: Config) -> str:
    """Where the account center's home link goes: ``account.home_url``, else
    ``settings.LOGIN_REDIRECT_URL``, resolved as Django resolves the latter (a URL
    name is reversed; a path or URL is used as it is).

    ``"/"`` when it cannot be resolved (a URL name that is not routed: the
    system check ``webauth.W014`` reports a configured one) or is not a path or
    an http(s) URL: a page never fails, nor links anywhere else, because of it.
    """
    target = config.account.home_url
    if target is None:
        target = getattr(settings, "LOGIN_REDIRECT_URL", None) or "/"
    try:
        url = str(resolve_url(str(target)))
    except (NoReverseMatch, TypeError, ValueError):
        return "/"
    if url.startswith("/") and not url.startswith(("//", "/\\")):
        return url
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else "/"


def _site_name(request: HttpRequest, config: Config) -> str:
    """``account.site_name``, else the current site's name (``django.contrib.sites``'s
    ``Site`` when installed, else the host)."""
    configured = config.account.site_name
    if configured is not None and str(configured).strip():
        return str(configured).strip()
    try:
        name = str(get_current_site(request).name or "").strip()
    except (ObjectDoesNotExist, DisallowedHost):  # no Site for SITE_ID; a host refused
        name = ""
    return name or _("Home")


def header_context(request: HttpRequest) -> dict[str, object]:
    """The account center's header: the site's name, the home link, the sign-out form.

    ``home_url`` (:func:`home_url`), ``site_name``, and ``signout``: the action
    (``POST <base path>/signout``), its ``csrf_token`` (Auth.js's, whose cookie
    goes out with the page) and ``callback_url`` (the home URL: where the
    browser lands once signed out).
    """
    state = get_state(request)
    config = state.config
    home = home_url(config)
    return {
        "home_url": home,
        "site_name": _site_name(request, config),
        "signout": {
            "action": f"{state.base_url}/signout",
            "csrf_token": state.form_csrf_token(),
            "callback_url": state.redirect(home),
        },
    }


# Browsers' and systems' marks in a User-Agent, the most specific first (Chrome's
# names Safari too, Edge's names Chrome, an iPhone's names Mac OS X, Android's Linux).
_BROWSERS = (
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("Firefox/", "Firefox"),
    ("Chrome/", "Chrome"),
    ("Chromium/", "Chromium"),
    ("Safari/", "Safari"),
)
_SYSTEMS = (
    ("iPhone", "iPhone"),
    ("iPad", "iPad"),
    ("Android", "Android"),
    ("Windows", "Windows"),
    ("CrOS", "ChromeOS"),
    ("Mac OS X", "macOS"),
    ("Linux", "Linux"),
)


def describe_device(user_agent: str | None) -> str:
    """A session's device as a person recognises it: "Firefox on Windows".

    Only the well-known marks are read; anything else is shown as it came
    (cut to 60 characters), or "Unknown device".
    """
    text = user_agent or ""
    browser = next((name for mark, name in _BROWSERS if mark in text), None)
    system = next((name for mark, name in _SYSTEMS if mark in text), None)
    if browser and system:
        return _("%(browser)s on %(system)s") % {"browser": browser, "system": system}
    if browser or system:
        return str(browser or system)
    text = " ".join(text.split())
    return text[:60] if text else _("Unknown device")


def _has(config: Config, feature: str) -> bool:
    storage = config.storage
    return all(storage.has(m) for m in FLOW_METHODS[feature])


def sessions_context(request: HttpRequest) -> dict[str, object]:
    """The signed-in user's sessions (database strategy) or what JWT sessions are."""
    state = get_state(request)
    config = state.config
    database = state.sessions.stored
    context: dict[str, Any] = {
        "database": database,
        "manageable": database and _has(config, "session_management"),
        "signout_url": state.page_url("signout", raw=True),
        "sessions": [],
    }
    if context["manageable"]:
        context["sessions"] = [
            {
                "id": s.id,
                "device": describe_device(s.user_agent),
                "user_agent": s.user_agent,
                "ip_address": s.ip_address,
                "created_at": s.created_at,
                "last_active": s.last_extended_at,
                "expires": s.expires,
                "current": s.current,
            }
            for s in list_sessions(request.user, request)
        ]
        context["others"] = sum(1 for s in context["sessions"] if not s["current"])
    return context


def _ways_in(config: Config, request: HttpRequest) -> int:
    """How many ways the user has to sign in (a large number when it cannot be counted)."""
    if not config.storage.has("count_sign_in_methods"):
        return 2  # the adapter refuses the last one itself, if it can tell
    return sign_in_methods(request.user)


def connections_context(request: HttpRequest) -> dict[str, object]:
    """Each provider that links accounts (OAuth): the user's accounts there.

    And whether one may be disconnected (never the user's last way in).
    """
    config = get_config()
    listed = _has(config, "linked_accounts")
    accounts = (
        [a for a in linked_accounts(request.user) if can(a.type, "links_accounts")]
        if listed
        else []
    )
    providers = []
    configured = set()
    for provider in providers_with(usable_providers(config), "links_accounts"):
        configured.add(provider.id)
        mine = [a for a in accounts if a.provider == provider.id]
        providers.append(
            {"id": provider.id, "name": provider.name, "accounts": mine, "available": True}
        )
    for account in accounts:
        if account.provider not in configured:
            # A provider the site no longer offers: its account can still be removed.
            configured.add(account.provider)
            mine = [a for a in accounts if a.provider == account.provider]
            providers.append(
                {
                    "id": account.provider,
                    "name": account.provider,
                    "accounts": mine,
                    "available": False,
                }
            )
    # Said only when it is true: the user's one way in is a connection listed here
    # (a password, a passkey or an email sign-in is not disconnected on this page).
    last = listed and bool(accounts) and _ways_in(config, request) <= 1
    return {
        "providers": providers,
        "manageable": listed,
        "last_way_in": last,
        "last_way_in_text": (
            last_connection_text(config, providers, settable=password_settable(request))
            if last
            else ""
        ),
    }


def password_settable(request: HttpRequest) -> bool:
    """Whether the signed-in user can set a password here (they have none yet)."""
    return password_change.available(get_config()) and not password_change.has_password(
        request.user
    )


def last_connection_text(
    config: Config, providers: list[dict[str, Any]], *, settable: bool = False
) -> str:
    """Why the user's only connection cannot be disconnected, and what they can add first:
    a password (*settable*: the Password section sets one), a passkey (when the site
    offers them), another connection (when one is left to connect)."""
    passkey = passkeys_offered(config)
    connect = any(p["available"] and not p["accounts"] for p in providers)
    if settable:
        return _with_password(passkey, connect)
    if passkey and connect:
        return _(
            "This connection is your only way to sign in, so it cannot be disconnected. "
            "Create a passkey or connect another account first."
        )
    if passkey:
        return _(
            "This connection is your only way to sign in, so it cannot be disconnected. "
            "Create a passkey first."
        )
    if connect:
        return _(
            "This connection is your only way to sign in, so it cannot be disconnected. "
            "Connect another account first."
        )
    return _("This connection is your only way to sign in, so it cannot be disconnected.")


def _with_password(passkey: bool, connect: bool) -> str:
    """:func:`last_connection_text` where the user can set a password first."""
    if passkey and connect:
        return _(
            "This connection is your only way to sign in, so it cannot be disconnected. "
            "Set a password, create a passkey or connect another account first."
        )
    if passkey:
        return _(
            "This connection is your only way to sign in, so it cannot be disconnected. "
            "Set a password or create a passkey first."
        )
    if connect:
        return _(
            "This connection is your only way to sign in, so it cannot be disconnected. "
            "Set a password or connect another account first."
        )
    return _(
        "This connection is your only way to sign in, so it cannot be disconnected. "
        "Set a password first."
    )


def passkeys_context(request: HttpRequest) -> dict[str, object]:
    """The user's passkeys, whether passkeys are on, and whether one may be removed."""
    config = get_config()
    manageable = _has(config, "passkeys")
    passkeys = list_passkeys(request) if manageable else []
    last = manageable and bool(passkeys) and _ways_in(config, request) <= 1
    return {
        "passkeys": passkeys,
        "manageable": manageable,
        "enabled": bool(providers_with(usable_providers(config), "is_passkey")),
        "last_way_in": last,
        "last_way_in_text": last_passkey_text(request) if last else "",
    }


def email_context(request: HttpRequest) -> dict[str, object]:
    """The user's address, when it was verified, and whether it can be changed here."""
    config = get_config()
    record = config.storage.get_user(user_id(request.user))
    email = record.email if record is not None else getattr(request.user, "email", None)
    verified_at = record.email_verified if record is not None else None
    return {
        "email": email or "",
        "verified_at": verified_at,
        # Django's auth.User has nowhere to keep it: then nothing is said either way.
        "tracks_verification": verified_at is not None
        or hasattr(type(request.user), "email_verified"),
        "can_change": change_provider(config) is not None,
    }


def password_context(request: HttpRequest) -> dict[str, object]:
    """The Password section: whether the user has a password (a change) or not (a set).

    ``available`` (:func:`webauth.passwords.change.available`), ``has_password``
    (read from the database: the form is for the password stored now),
    ``username`` (what the user signs in with), ``help_texts`` (what
    ``AUTH_PASSWORD_VALIDATORS`` ask), ``max_length``.
    """
    if not password_change.available(get_config()):
        return {"available": False}
    user = request.user
    stored = password_change.stored_user(user)
    return {
        "available": True,
        "has_password": password_change.has_password(stored if stored is not None else user),
        "username": user.get_username(),
        "help_texts": password_change.help_texts(),
        "max_length": password_change.MAX_PASSWORD_LENGTH,
    }
