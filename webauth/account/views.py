"""The account center's pages: overview, sessions, connections, passkeys, email, password,
security, re-authentication.

Routed by :mod:`webauth.account.urls`. Every page is for a signed-in user (a
visitor gets what ``@auth_required`` gives) and goes out with
``Cache-Control: private, no-store``. Changes are ``POST`` forms with an ``op``,
protected by Django's CSRF middleware; those that could lock the owner out or
let someone in for good (disconnecting a provider, removing a passkey, signing
out everywhere, changing the email address, connecting a provider, and changing
or setting the password) first
require a fresh sign-in (:func:`webauth.reauth.require_fresh`): an older session
goes to the re-authentication page and comes back.

A form may carry ``next``, a page of this site to return to (the template tags
set it to the page they are on). The outcome is a message of
``django.contrib.messages`` (``SUCCESS`` or ``ERROR``, extra tag
``webauth-account``) and a redirect there; without the messages framework the
page is shown again with the outcome (status 400 for a refusal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, cast

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext_lazy
from django.views.decorators.http import require_http_methods

from ..access import has_user, session_required_response
from ..api_keys import ApiKeyError, create_key, list_keys, owners_for
from ..api_keys import revoke as revoke_api_key
from ..conf import get_config
from ..errors import LastSignInMethod
from ..flows import can, flow_for
from ..forms import FormResult
from ..helpers import sign_in
from ..linked_accounts import unlink
from ..mfa.keys import offered as keys_offered
from ..mfa.trust import ask_fresh
from ..pages import forms_challenge, passkey_context, provider_forms, render_page, usable_providers
from ..passkeys import passkeys_view
from ..passwords import change as password_change
from ..providers.credentials import DjangoCredentials
from ..reauth import is_fresh, require_fresh, safe_next, signed_in_at
from ..state import get_state
from ..user_sessions import revoke_session, sign_out_everywhere
from ..utils import own_transactions, user_id
from . import sections, security
from .email import EmailChangeError, change_email, send_code

__all__ = [
    "api_keys_page",
    "connections",
    "email",
    "index",
    "passkeys",
    "password",
    "reauthenticate",
    "security_page",
    "sessions",
]

#: The extra tag of the account center's messages.
MESSAGE_TAG = "webauth-account"

#: The menu: section name -> its label.
_MENU = (
    ("index", gettext_lazy("Overview")),
    # With a context: django.contrib.sessions' catalog, found first when it comes
    # before webauth in INSTALLED_APPS, has its own "Sessions" (German: "Sessions").
    ("sessions", pgettext_lazy("account center", "Sessions")),
    ("connections", gettext_lazy("Connections")),
    ("passkeys", gettext_lazy("Passkeys")),
    ("email", gettext_lazy("Email")),
    ("password", gettext_lazy("Password")),
    ("security", gettext_lazy("Security")),
    ("api_keys", gettext_lazy("API keys")),
)


def _shown(name: str) -> bool:
    """Whether the menu shows a section: Security only where a second factor can be added
    (``WEBAUTH["mfa"]``), Password only where passwords are changed here."""
    if name == "security":
        return security.available(get_config())
    if name == "password":
        return password_change.available(get_config())
    if name == "api_keys":
        return get_config().api_keys is not None
    return True


def _nav(current: str) -> list[dict[str, object]]:
    shown = [(n, label) for n, label in _MENU if _shown(n)]
    return [
        {
            "name": name,
            "label": label,
            "url": sections.section_url(name),
            "current": name == current,
        }
        for name, label in shown
    ]


def _render(
    request: HttpRequest, page: str, context: dict[str, object], *, status: int = 200
) -> HttpResponse:
    state = get_state(request)
    response = render_page(
        state,
        f"webauth/account/{page}.html",
        {
            "nav": _nav(page),
            "page": page,
            "next": sections.section_url(page),
            "header": sections.header_context(request),
            **context,
        },
        config=state.config,
        status=status,
    )
    response["Cache-Control"] = "private, no-store"  # one user's account, with CSRF tokens
    return response


def _signed_in(request: HttpRequest) -> bool:
    return has_user(get_state(request).session) and getattr(request.user, "is_authenticated", False)


def _outcome(
    request: HttpRequest,
    back: str,
    ok: bool,
    text: str,
    again: Callable[[Mapping[str, object], int], HttpResponse],
) -> HttpResponseBase:
    """Announce the outcome: a message and a redirect to *back*, or the page again."""
    if hasattr(request, "_messages"):
        level = messages.SUCCESS if ok else messages.ERROR
        messages.add_message(request, level, text, extra_tags=MESSAGE_TAG)
        response = HttpResponseRedirect(back)
        response["Cache-Control"] = "private, no-store"
        return response
    return again(_said(ok, text), 200 if ok else 400)


def _said(ok: bool, text: str) -> dict[str, str]:
    """The page's context for an outcome: ``notice`` (role=status) or ``error`` (role=alert)."""
    return {"notice": text} if ok else {"error": text}


def _back(request: HttpRequest, page: str) -> str:
    """Where a form's outcome goes: its ``next`` (a page of this site), else *page*."""
    return safe_next(request, request.POST.get("next"), sections.section_url(page))


# -- overview ------------------------------------------------------------------------------


@require_http_methods(["GET", "HEAD"])
def index(request: HttpRequest) -> HttpResponseBase:
    """The overview: the address, and a line about each section with its link."""
    if not _signed_in(request):
        return session_required_response(request)
    context: dict[str, Any] = {
        "email": sections.email_context(request),
        "sessions": sections.sessions_context(request),
        "connections": sections.connections_context(request),
        "passkeys": sections.passkeys_context(request),
        "password": sections.password_context(request),
    }
    context["connected"] = sum(len(p["accounts"]) for p in context["connections"]["providers"])
    return _render(request, "index", context)


# -- sessions ------------------------------------------------------------------------------


@require_http_methods(["GET", "HEAD", "POST"])
def sessions(request: HttpRequest) -> HttpResponseBase:
    """The user's sessions: revoke one (``op=revoke``, ``session_id``) or all others
    (``op=everywhere``, behind re-authentication). Under JWT: what sessions are."""
    if not _signed_in(request):
        return session_required_response(request)

    def again(extra: Mapping[str, object], status: int) -> HttpResponse:
        return _render(
            request, "sessions", {**sections.sessions_context(request), **extra}, status=status
        )

    if request.method != "POST":
        return again({}, 200)
    back = _back(request, "sessions")
    context = sections.sessions_context(request)
    op = request.POST.get("op")
    if not context["manageable"]:
        return _outcome(request, back, False, _("Sessions cannot be managed here."), again)
    if op == "revoke":
        if revoke_session(request.user, request.POST.get("session_id", "")):
            return _outcome(request, back, True, _("That device was signed out."), again)
        return _outcome(
            request, back, False, _("No such session: it may have ended already."), again
        )
    if op == "everywhere":
        refused = require_fresh(request, next_url=back)
        if refused is not None:
            return refused
        count = sign_out_everywhere(request.user, request)
        text = (
            ngettext(
                "%(count)d other session was signed out.",
                "%(count)d other sessions were signed out.",
                count,
            )
            % {"count": count}
            if count
            else _("There were no other sessions to sign out.")
        )
        return _outcome(request, back, True, text, again)
    return _outcome(request, back, False, _("Unknown action."), again)


# -- connections ---------------------------------------------------------------------------


@require_http_methods(["GET", "HEAD", "POST"])
def connections(request: HttpRequest) -> HttpResponseBase:
    """The OAuth providers: connect one (``op=connect``, ``provider``) or disconnect
    an account (``op=disconnect``, ``provider``, ``account``), both behind
    re-authentication; the last way in is never disconnected."""
    if not _signed_in(request):
        return session_required_response(request)

    def again(extra: Mapping[str, object], status: int) -> HttpResponse:
        context = {**sections.connections_context(request), **extra}
        return _render(request, "connections", context, status=status)

    if request.method != "POST":
        return again({}, 200)
    back = _back(request, "connections")
    op = request.POST.get("op")
    provider_id = request.POST.get("provider", "")
    if op not in ("connect", "disconnect"):
        return _outcome(request, back, False, _("Unknown action."), again)
    refused = require_fresh(request, next_url=back)
    if refused is not None:
        return refused
    if op == "connect":
        return _connect(request, back, provider_id, again)
    try:
        done = unlink(request.user, provider_id, request.POST.get("account") or None)
    except LastSignInMethod:
        config = get_state(request).config
        listed = cast(list[dict[str, Any]], sections.connections_context(request)["providers"])
        settable = sections.password_settable(request)
        text = sections.last_connection_text(config, listed, settable=settable)
        return _outcome(request, back, False, text, again)
    if not done:
        return _outcome(request, back, False, _("No such connection."), again)
    provider = get_state(request).config.get_provider(provider_id)
    name = provider.name if provider is not None else provider_id
    return _outcome(request, back, True, _("%(name)s was disconnected.") % {"name": name}, again)


def _connect(
    request: HttpRequest,
    back: str,
    provider_id: str,
    again: Callable[[Mapping[str, object], int], HttpResponse],
) -> HttpResponseBase:
    """Start the provider's sign-in while signed in: its account is linked to this user."""
    config = get_state(request).config
    provider = config.get_provider(provider_id)
    if (
        provider is None
        or not can(provider, "links_accounts")
        or provider not in (usable_providers(config))
    ):
        return _outcome(request, back, False, _("No such provider."), again)
    result = sign_in(request, provider_id, redirect_to=back)
    if isinstance(result, FormResult):
        text = " ".join(result.form_errors or ()) or _("The provider could not be reached.")
        return _outcome(request, back, False, text, again)
    return result


# -- passkeys ------------------------------------------------------------------------------


def passkeys(request: HttpRequest) -> HttpResponseBase:
    """:func:`webauth.passkeys.passkeys_view` in the account center's frame."""
    if not _signed_in(request):
        return session_required_response(request)
    return passkeys_view(
        request,
        template_name="webauth/account/passkeys.html",
        extra_context={
            "nav": _nav("passkeys"),
            "page": "passkeys",
            "header": sections.header_context(request),
        },
    )


# -- email ---------------------------------------------------------------------------------


@own_transactions  # the address change's lock must be outermost (utils.own_transactions)
@require_http_methods(["GET", "HEAD", "POST"])
def email(request: HttpRequest) -> HttpResponseBase:
    """The address: send a code to a new one (``op=send``, ``email``; behind
    re-authentication), then confirm it (``op=confirm``, ``email``, ``code``)."""
    if not _signed_in(request):
        return session_required_response(request)

    def again(extra: Mapping[str, object], status: int) -> HttpResponse:
        return _render(
            request, "email", {**sections.email_context(request), **extra}, status=status
        )

    if request.method != "POST":
        return again({}, 200)
    back = _back(request, "email")
    op = request.POST.get("op")
    if op not in ("send", "confirm"):
        return _outcome(request, back, False, _("Unknown action."), again)
    typed = request.POST.get("email", "")
    if op == "send":
        # Confirming needs no new proof: only a fresh session could ask for the
        # code, and the code is good for this user and this address only.
        refused = require_fresh(request, next_url=back)
        if refused is not None:
            return refused
        try:
            address = send_code(request, typed)
        except EmailChangeError as exc:
            return again({**_said(False, str(exc)), "typed": typed}, 400)
        # The code form, on this response: the address waits only in the form.
        text = _("We sent a code to %(address)s. Enter it here to confirm the address.") % {
            "address": address
        }
        return again({**_said(True, text), "pending": address}, 200)
    try:
        updated = change_email(request, typed, request.POST.get("code", ""))
    except EmailChangeError as exc:
        pending = typed if isinstance(typed, str) and len(typed) <= 320 else ""
        return again({**_said(False, str(exc)), "pending": pending}, 400)
    text = _("Your email address is now %(address)s.") % {"address": updated.email}
    return _outcome(request, back, True, text, again)


# -- password ------------------------------------------------------------------------------


@require_http_methods(["GET", "HEAD", "POST"])
def password(request: HttpRequest) -> HttpResponseBase:
    """Change the password (``op=change``: ``old_password``, ``new_password1``,
    ``new_password2``) or, for a user who has none, set one (``op=set``: the two
    new fields); both behind re-authentication (:mod:`webauth.passwords.change`).

    ``404`` where passwords are not changed here
    (:func:`webauth.passwords.change.available`). A refusal (a wrong current
    password, a validator's, the rate limit's) is the page again, with the
    form's errors and the same ``next`` (status 400, or 429); a success is the
    outcome's message and the way back to ``next``: this browser stays signed
    in, every other session of the user ends.
    """
    if not _signed_in(request):
        return session_required_response(request)
    if not password_change.available(get_config()):
        raise Http404("Passwords are not changed here")

    def again(extra: Mapping[str, object], status: int) -> HttpResponse:
        context = {**sections.password_context(request), **extra}
        return _render(request, "password", context, status=status)

    if request.method != "POST":
        return again({}, 200)
    back = _back(request, "password")
    op = request.POST.get("op")
    if op not in ("change", "set"):
        return _outcome(request, back, False, _("Unknown action."), again)
    # Knowing the current password is not enough: a session left open, used by
    # someone who watched it typed, must sign in again first (a set has no other proof).
    refused = require_fresh(request, next_url=back)
    if refused is not None:
        return refused
    post = request.POST
    if op == "change":
        result = password_change.change_password(
            request,
            request.user,
            post.get("old_password"),
            post.get("new_password1"),
            post.get("new_password2"),
        )
    else:
        result = password_change.set_password(
            request, request.user, post.get("new_password1"), post.get("new_password2")
        )
    if result.done:
        text = (
            _("Your password was changed. Every other device was signed out.")
            if result.how == "change"
            else _("Your password was set. Every other device was signed out.")
        )
        return _outcome(request, back, True, text, again)
    # The form again, as it came: the same way back once it is right.
    if result.limited:
        text = _("Too many attempts. Please wait a few minutes before you try again.")
        limited = again({**_said(False, text), "next": back}, 429)
        limited["Retry-After"] = str(max(result.retry_after, 1))
        return limited
    if result.stale:
        text = _("Your password has changed since this page was opened. Try again.")
        return again({**_said(False, text), "next": back}, 409)
    return again({"errors": result.errors, "next": back}, 400)


# -- API keys ------------------------------------------------------------------------------

#: The lives a new key may be given here, in days (those within ``api_keys.max_age``).
_KEY_LIVES = (30, 90, 365)


def _api_keys_context(request: HttpRequest) -> dict[str, object]:
    options = get_config().api_keys
    assert options is not None
    now = timezone.now()

    def shown(holder: Any) -> list[dict[str, object]]:
        return [
            {
                "key_id": key.key_id,
                "shown": f"{options.prefix}_{key.key_id[:4]}…",
                "name": key.name,
                "scopes": key.scopes,
                "created_at": key.created_at,
                "expires": key.expires,
                "last_used_at": key.last_used_at,
                "live": key.revoked_at is None and (key.expires is None or key.expires > now),
                "revoked": key.revoked_at is not None,
            }
            for key in list_keys(holder)
        ]

    # The owners whose keys this user manages (api_keys.owners_of): a list each.
    owned = [
        {"ref": ref, "name": str(owner), "keys": shown(owner), "number": number}
        for number, (ref, owner) in enumerate(owners_for(request.user), start=1)
    ]
    lives = [d for d in _KEY_LIVES if options.max_age is None or d * 86400 <= options.max_age]
    return {
        "keys": shown(request.user),
        "owned": owned,
        "scopes": options.scopes,
        "lives": lives,
        "max_days": None if options.max_age is None else options.max_age // 86400,
        "never": options.max_age is None,
    }


@require_http_methods(["GET", "HEAD", "POST"])
def api_keys_page(request: HttpRequest) -> HttpResponseBase:
    """The user's API keys: make one (``op=create``: ``name``, ``scopes``, ``days``; behind
    re-authentication; the key shown on this answer only) or revoke one (``op=revoke``,
    ``key_id``). With ``owner`` (one of :func:`webauth.api_keys.owners_for` the
    user), the same for that owner's keys. ``404`` without ``WEBAUTH["api_keys"]``."""
    if not _signed_in(request):
        return session_required_response(request)
    if get_config().api_keys is None:
        raise Http404("API keys are off")

    def again(extra: Mapping[str, object], status: int) -> HttpResponse:
        return _render(request, "api_keys", {**_api_keys_context(request), **extra}, status=status)

    if request.method != "POST":
        return again({}, 200)
    back = _back(request, "api_keys")
    op = request.POST.get("op")
    ref = request.POST.get("owner", "")
    owner = dict(owners_for(request.user)).get(ref) if ref else request.user
    if owner is None:  # not an owner this user manages (any more)
        return _outcome(request, back, False, _("You do not manage the keys of that owner."), again)
    if op == "revoke":
        key_id = request.POST.get("key_id", "")
        if revoke_api_key(user_id(request.user), key_id, owner=ref, request=request):
            return _outcome(request, back, True, _("The key was revoked."), again)
        return _outcome(request, back, False, _("No such key: it may be revoked already."), again)
    if op != "create":
        return _outcome(request, back, False, _("Unknown action."), again)
    # A key acts as the user for as long as it lives: a session left open must
    # prove it is its user first, as for a new password.
    refused = require_fresh(request, next_url=back)
    if refused is not None:
        return refused
    days = request.POST.get("days", "")
    expires: object = True
    if days == "never":
        expires = None
    elif days.isascii() and days.isdigit() and int(days) in _KEY_LIVES:
        expires = timezone.now() + timedelta(days=int(days))
    try:
        made = create_key(
            owner,
            name=request.POST.get("name", ""),
            scopes=request.POST.getlist("scopes"),
            expires=expires,  # type: ignore[arg-type]
            request=request,
        )
    except ApiKeyError as exc:
        typed = {"typed_name": request.POST.get("name", ""), "chosen_owner": ref}
        return again({**_said(False, str(exc)), **typed}, 400)
    # Shown here, on this answer only: never put in a message (a cookie may keep those).
    text = _("Your new key. Copy it now: it is shown this once.")
    return again({"new_key": made.key, "new_key_name": made.record.name, **_said(True, text)}, 200)


# -- security: the second factor -----------------------------------------------------------


@require_http_methods(["GET", "HEAD", "POST"])
def security_page(request: HttpRequest) -> HttpResponseBase:
    """Authenticator apps, security keys and recovery codes: add an app's key
    (``op=begin``, then ``op=confirm`` with ``factor`` and ``code``), add a
    security key (``op=key_begin``, then ``op=key_add`` with ``credential``,
    ``binding`` and an optional ``name``), remove either (``op=remove``,
    ``factor``) or get new recovery codes (``op=codes``); all but confirming
    and ``key_add`` are behind re-authentication."""
    if not _signed_in(request):
        return session_required_response(request)

    def again(extra: Mapping[str, object], status: int) -> HttpResponse:
        shown = extra.get("shown")
        context = security.security_context(
            request, shown if isinstance(shown, security.Shown) else None
        )
        return _render(request, "security", {**context, **extra}, status=status)

    if request.method != "POST":
        return again({}, 200)
    back = _back(request, "security")
    op = request.POST.get("op")
    ops = ("begin", "confirm", "key_begin", "key_add", "remove", "codes", "forget", "forget_all")
    if not security.available(get_config()) or op not in ops:
        return _outcome(request, back, False, _("Unknown action."), again)
    if op in ("forget", "forget_all"):
        # Trusting less needs no new proof.
        chosen = request.POST.get("browser", "") if op == "forget" else None
        if security.forget_browser(request, chosen):
            return _outcome(request, back, True, _("The browser was forgotten."), again)
        return _outcome(request, back, False, _("No such browser."), again)
    if op == "confirm":
        # No new proof: only a fresh session could begin adding this key.
        done, shown = security.confirm(
            request, request.POST.get("factor", ""), request.POST.get("code", "")
        )
        if done:
            text = _("The authenticator app was added.")
            return again({**_said(True, text), "shown": shown}, 200)
        if shown.adding is None:
            return _outcome(request, back, False, _("No such authenticator app."), again)
        wrong = _("That code is not right. Try again.")
        return again({**_said(False, wrong), "shown": shown, "code_error": wrong}, 400)
    if op == "key_add":
        # No new proof: only a fresh session could ask for this key's options.
        added = security.add_key(
            request,
            request.POST.get("credential", ""),
            request.POST.get("binding", ""),
            request.POST.get("name", ""),
        )
        if added is None:
            text = _("The security key could not be added. Try again.")
            return _outcome(request, back, False, text, again)
        return again({**_said(True, _("The security key was added.")), "shown": added}, 200)
    refused = require_fresh(request, next_url=back)
    if refused is not None:
        return refused
    if op == "begin":
        return again({"shown": security.begin(request)}, 200)
    if op == "key_begin":
        if not keys_offered(get_config()):
            return _outcome(request, back, False, _("Unknown action."), again)
        return again({"shown": security.begin_key(request)}, 200)
    if op == "codes":
        if not security.security_context(request).get("keys"):
            return _outcome(request, back, False, _("No such authenticator app."), again)
        text = _("Your new recovery codes replace the old ones.")
        return again({**_said(True, text), "shown": security.regenerate(request)}, 200)
    removed = security.remove(request, request.POST.get("factor", ""))
    if removed == "required":
        text = _(
            "This site requires two-step verification: add another key before you remove this one."
        )
        return _outcome(request, back, False, text, again)
    if removed == "missing":
        return _outcome(request, back, False, _("No such key."), again)
    return _outcome(request, back, True, _("The key was removed."), again)


# -- re-authentication ---------------------------------------------------------------------


@require_http_methods(["GET", "HEAD"])
def reauthenticate(request: HttpRequest) -> HttpResponseBase:
    """Prove who you are again, by any way you have, then go back to ``next``.

    Each way is a sign-in form of the user's own (a password, a passkey, an
    email code, a provider they have connected) whose ``callbackUrl`` is
    ``next`` (a page of this site, else the overview). A session that is
    fresh already goes there at once.
    """
    if not _signed_in(request):
        return session_required_response(request)
    target = safe_next(request, request.GET.get("next"), sections.section_url("index"))
    # ?mfa=1 (@mfa_required): the session must prove two factors again (none yet,
    # or not recently enough for the page that sent it here), however fresh: it
    # always signs in again, and its sign-in asks for the second factor.
    if not request.GET.get("mfa") and is_fresh(request):
        return HttpResponseRedirect(target)
    state = get_state(request)
    ways = _ways_in(request)
    response = _render(
        request,
        "reauthenticate",
        {
            **ways,
            # The bot challenge's widget, in the forms it guards (WEBAUTH["challenge"]).
            "challenge": forms_challenge(state, cast(list[dict[str, object]], ways["providers"])),
            "csrf_token_value": state.form_csrf_token(),
            "callback_url": state.redirect(target),
            "cancel_url": sections.section_url("index"),
            "signed_in_at": signed_in_at(request),
            "user_label": _user_label(request),
        },
    )
    if request.GET.get("mfa"):
        ask_fresh(state, response)  # a trusted browser proves the second factor all the same
    return response


def _user_label(request: HttpRequest) -> str:
    user = request.user
    return str(getattr(user, "email", "") or user.get_username())


def _ways_in(request: HttpRequest) -> dict[str, object]:
    """The sign-in forms of the ways the user has: providers, and a passkey section."""
    state = get_state(request)
    config = state.config
    storage = config.storage
    uid = user_id(request.user)
    user = request.user
    record = storage.get_user(uid)
    address = record.email if record is not None and record.email else ""
    linked = (
        {a.provider for a in storage.list_accounts_by_user_id(uid)}
        if storage.has("list_accounts_by_user_id")
        else set()
    )
    has_passkey = storage.has("list_authenticators_by_user_id") and bool(
        storage.list_authenticators_by_user_id(uid)
    )
    chosen = []
    passkey = None
    values: dict[str, dict[str, str]] = {}
    for provider in usable_providers(config):
        flow = flow_for(provider)
        if flow is None:
            continue
        if flow.links_accounts:
            usable = provider.id in linked
        elif flow.sends_email:
            usable = bool(address)
            values[provider.id] = {"email": address}
        elif flow.has_password_form:
            # DjangoCredentials checks the password; a project's own may check anything.
            usable = not isinstance(provider, DjangoCredentials) or bool(
                getattr(user, "has_usable_password", lambda: False)()
            )
            values[provider.id] = {"username": user.get_username()}
        elif flow.is_passkey:
            if has_passkey and passkey is None:
                passkey = passkey_context(provider, state.base_url, autofill=False)
                passkey["register"] = False
                if passkey["discoverable"]:
                    passkey["field"] = None  # the passkey names its user: nothing to type
                elif passkey["field"] is not None:
                    passkey["field"] = {**passkey["field"], "value": address}
            continue
        else:
            usable = True
        if usable:
            chosen.append(provider)
    forms = provider_forms(tuple(chosen), state.base_url, values=values)
    return {"providers": forms, "passkey": passkey}
