"""A signed-in user's passkeys: list them, rename one, remove one (never the last way in).

For the project's "your passkeys" page, as :mod:`webauth.linked_accounts` is for
linked accounts::

    from webauth import passkeys

    def my_passkeys(request):
        return render(request, "passkeys.html", {"passkeys": passkeys.list_passkeys(request)})

Each function acts for the user the request is signed in as
(``request.user``) and raises :class:`~django.core.exceptions.PermissionDenied`
without one; it cannot reach another user's passkeys. Credential ids are the
stored ones (:attr:`UserPasskey.id`). Everything goes through the adapter
(``list_authenticators_by_user_id``, ``rename_authenticator``,
``delete_authenticator``); removing is refused with
:class:`~webauth.errors.LastSignInMethod` when it would leave the user no way
to sign in. Each function has an ``a``-prefixed twin for async views.

:func:`passkeys_view` is a ready page (list, rename, remove, add) that a
project routes itself, and the account center's passkeys page
(:mod:`webauth.account`); its forms are protected by Django's CSRF middleware,
and removing a passkey there needs a fresh sign-in (:mod:`webauth.reauth`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase, HttpResponseRedirect
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from .access import session_required_response
from .adapters.base import FLOW_METHODS
from .conf import Config, get_config
from .errors import LastSignInMethod
from .flows import providers_with
from .pages import render_page, usable_providers
from .passwords import change as password_change
from .reauth import require_fresh, safe_next
from .responses import private_no_store
from .state import get_state
from .types import AdapterAuthenticator
from .utils import user_id

__all__ = [
    "MAX_NAME_LENGTH",
    "LastSignInMethod",
    "UserPasskey",
    "alist_passkeys",
    "aremove_passkey",
    "arename_passkey",
    "last_passkey_text",
    "list_passkeys",
    "passkeys_offered",
    "passkeys_view",
    "remove_passkey",
    "rename_passkey",
]

#: The longest passkey name kept (the ``Authenticator.name`` column).
MAX_NAME_LENGTH = 100


@dataclass(frozen=True, slots=True)
class UserPasskey:
    """One passkey of a user, as a "your passkeys" page shows it.

    ``id`` is the credential id as stored (what :func:`rename_passkey` and
    :func:`remove_passkey` take); ``synced`` whether the passkey may live on
    several devices (backup eligible: a password manager's), ``backed_up``
    whether it is backed up now; ``transports`` how the browser reaches it.
    """

    id: str
    name: str
    created_at: datetime | None
    last_used_at: datetime | None
    device_type: str
    synced: bool
    backed_up: bool
    aaguid: str
    transports: tuple[str, ...]


def _entry(record: AdapterAuthenticator) -> UserPasskey:
    return UserPasskey(
        id=record.credential_id,
        name=record.name or _("Passkey"),
        created_at=record.created_at,
        last_used_at=record.last_used_at,
        device_type=record.credential_device_type,
        synced=bool(record.backup_eligible) or record.credential_device_type == "multiDevice",
        backed_up=bool(record.credential_backed_up),
        aaguid=record.aaguid or "",
        transports=tuple(t for t in (record.transports or "").split(",") if t),
    )


def _user_id(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        raise PermissionDenied("Sign in to manage passkeys")
    return user_id(user)


def clean_name(name: Any) -> str:
    """A passkey name as stored: one line, no control characters, at most 100 characters.

    ``ValueError`` for a name that is empty once cleaned.
    """
    if not isinstance(name, str):
        raise ValueError(_("Give the passkey a name."))
    text = unicodedata.normalize("NFC", name)
    text = "".join(c if c.isprintable() else " " for c in text)
    text = " ".join(text.split())[:MAX_NAME_LENGTH].strip()
    if not text:
        raise ValueError(_("Give the passkey a name."))
    return text


def list_passkeys(request: HttpRequest) -> list[UserPasskey]:
    """The signed-in user's passkeys, oldest first."""
    uid = _user_id(request)
    return [_entry(r) for r in get_config().storage.list_authenticators_by_user_id(uid)]


def rename_passkey(request: HttpRequest, credential_id: str, name: str) -> UserPasskey | None:
    """Rename one of the signed-in user's passkeys; ``None`` if the user has no such passkey.

    ``ValueError`` for a name that is empty once cleaned (:func:`clean_name`).
    """
    uid = _user_id(request)
    cleaned = clean_name(name)
    if not isinstance(credential_id, str) or not credential_id:
        return None
    record = get_config().storage.rename_authenticator(uid, credential_id, cleaned)
    return _entry(record) if record is not None else None


def remove_passkey(request: HttpRequest, credential_id: str) -> bool:
    """Remove one of the signed-in user's passkeys; ``False`` if the user has no such passkey.

    Raises :class:`LastSignInMethod` when it is the user's only way to sign in.
    """
    uid = _user_id(request)
    if not isinstance(credential_id, str) or not credential_id:
        return False
    removed = get_config().storage.delete_authenticator(uid, credential_id)
    return removed is not None


async def alist_passkeys(request: HttpRequest) -> list[UserPasskey]:
    """Async :func:`list_passkeys`."""
    return await sync_to_async(list_passkeys)(request)


async def arename_passkey(
    request: HttpRequest, credential_id: str, name: str
) -> UserPasskey | None:
    """Async :func:`rename_passkey`."""
    return await sync_to_async(rename_passkey)(request, credential_id, name)


async def aremove_passkey(request: HttpRequest, credential_id: str) -> bool:
    """Async :func:`remove_passkey`."""
    return await sync_to_async(remove_passkey)(request, credential_id)


def passkeys_offered(config: Config) -> bool:
    """Whether a signed-in user can create a passkey: a passkey provider, an adapter for it."""
    storage = config.storage
    return all(storage.has(m) for m in FLOW_METHODS["passkeys"]) and bool(
        providers_with(usable_providers(config), "is_passkey")
    )


def _can_connect(config: Config, uid: str) -> bool:
    """Whether the user can connect an account (OAuth) in the account center: it is
    routed, and the site offers a provider the user has not connected."""
    try:
        reverse("webauth_account:connections")
    except NoReverseMatch:
        return False
    offered = {p.id for p in providers_with(usable_providers(config), "links_accounts")}
    storage = config.storage
    if not offered or not storage.has("list_accounts_by_user_id"):
        return False
    return bool(offered - {a.provider for a in storage.list_accounts_by_user_id(uid)})


def last_passkey_text(request: HttpRequest) -> str:
    """Why the signed-in user's only passkey, their one way in, cannot be removed, and
    what they can add first here: another passkey, a connection or a password (in the
    account center)."""
    config = get_config()
    create = passkeys_offered(config)
    connect = _can_connect(config, _user_id(request))
    # A password the account center's Password section can set is another way in.
    if password_change.available(config) and not password_change.has_password(request.user):
        return _with_password(create, connect)
    if create and connect:
        return _(
            "This passkey is your only way to sign in, so it cannot be removed. "
            "Create another passkey or connect an account first."
        )
    if create:
        return _(
            "This passkey is your only way to sign in, so it cannot be removed. "
            "Create another passkey first."
        )
    if connect:
        return _(
            "This passkey is your only way to sign in, so it cannot be removed. "
            "Connect an account first."
        )
    return _("This passkey is your only way to sign in, so it cannot be removed.")


def _with_password(create: bool, connect: bool) -> str:
    """:func:`last_passkey_text` where the user can set a password first."""
    if create and connect:
        return _(
            "This passkey is your only way to sign in, so it cannot be removed. "
            "Set a password, create another passkey or connect an account first."
        )
    if create:
        return _(
            "This passkey is your only way to sign in, so it cannot be removed. "
            "Set a password or create another passkey first."
        )
    if connect:
        return _(
            "This passkey is your only way to sign in, so it cannot be removed. "
            "Set a password or connect an account first."
        )
    return _(
        "This passkey is your only way to sign in, so it cannot be removed. Set a password first."
    )


@require_http_methods(["GET", "HEAD", "POST"])
def passkeys_view(
    request: HttpRequest,
    template_name: str = "webauth/passkeys.html",
    extra_context: Mapping[str, object] | None = None,
) -> HttpResponseBase:
    """A page listing the signed-in user's passkeys, with rename, remove and add.

    Route it yourself, e.g. ``path("account/passkeys/", passkeys_view)``, or use
    the account center's (``webauth.account.urls``), which is this view in its
    frame. A visitor gets what ``auth_required`` gives (the sign-in page, or
    401 JSON). ``POST`` takes ``op`` (``rename`` or ``remove``),
    ``credential_id``, ``name`` and optionally ``next``, a page of this site to
    go back to (Django's CSRF middleware checks the form). Removing needs a
    fresh sign-in (``reauth_required``'s rule): an older session goes to the
    re-authentication page first, and comes back. With
    ``django.contrib.messages`` the outcome is a message and the page is
    reloaded (post/redirect/get); without it the outcome is shown on the page
    (status 400 for a refusal). Template: *template_name* (context:
    ``passkeys``, ``error``, ``notice``, ``last_way_in``: whether removing the
    only one would be refused, ``last_way_in_text``: why, and what the user can
    add first (:func:`last_passkey_text`), ``theme``, and *extra_context*). Every answer has
    ``Cache-Control: private, no-store``.
    """
    if not getattr(request.user, "is_authenticated", False):
        return session_required_response(request)
    error = notice = ""
    if request.method == "POST":
        back = safe_next(request, request.POST.get("next"), request.get_full_path())
        if request.POST.get("op") == "remove":
            refused = require_fresh(request, next_url=back)
            if refused is not None:
                return refused
        done, note = _apply(request)
        if hasattr(request, "_messages"):
            level = messages.SUCCESS if done else messages.ERROR
            messages.add_message(request, level, note, extra_tags="webauth-account")
            return _no_store(HttpResponseRedirect(back))
        if done:
            notice = note
        else:
            error = note
    state = get_state(request)
    storage = state.config.storage
    listed = list_passkeys(request)
    # Only when it is true: a user with passkeys and no other way in (a user without
    # a passkey has nothing here to remove).
    last_way_in = bool(listed) and (
        storage.has("count_sign_in_methods")
        and storage.count_sign_in_methods(_user_id(request)) <= 1
    )
    response = render_page(
        state,
        template_name,
        {
            **(extra_context or {}),
            "passkeys": listed,
            "error": error,
            "notice": notice,
            "last_way_in": last_way_in,
            "last_way_in_text": last_passkey_text(request) if last_way_in else "",
        },
        config=state.config,
        status=400 if error else 200,
    )
    return _no_store(response)


def _no_store(response: HttpResponseBase) -> HttpResponseBase:
    private_no_store(response)  # one user's list, with CSRF tokens
    return response


def _apply(request: HttpRequest) -> tuple[bool, str]:
    """Rename or remove as the form asks: whether it was done, and what to tell the user."""
    op = request.POST.get("op")
    credential_id = request.POST.get("credential_id", "")
    try:
        if op == "rename":
            if rename_passkey(request, credential_id, request.POST.get("name", "")):
                return True, _("The passkey was renamed.")
        elif op == "remove":
            if remove_passkey(request, credential_id):
                return True, _("The passkey was removed.")
        else:
            return False, _("Unknown action.")
    except LastSignInMethod:
        return False, last_passkey_text(request)
    except ValueError as exc:
        return False, str(exc)
    return False, _("No such passkey.")
