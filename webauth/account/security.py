"""The account center's Security section: authenticator apps, security keys, recovery codes.

What the page shows (:func:`security_context`) and what its forms do
(:func:`begin`, :func:`confirm`, :func:`begin_key`, :func:`add_key`,
:func:`remove`, :func:`regenerate`), on :mod:`webauth.mfa.factors` and
:mod:`webauth.mfa.keys`. Adding a key, removing one and new recovery codes
are behind re-authentication (the view's part); a new app key counts only once
a code from it is right, a security key once the browser's ceremony verified;
the user's first key comes with a set of recovery codes, shown once. The last
key of a user whom ``mfa.required`` names cannot be removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

from ..adapters.base import FLOW_METHODS
from ..conf import Config, get_config
from ..errors import WebAuthnVerificationError
from ..mfa import factors, keys, totp, trust
from ..mfa.changes import announce
from ..mfa.policy import django_user
from ..state import get_state
from ..utils import user_id
from .sections import describe_device

__all__ = [
    "Shown",
    "add_key",
    "available",
    "begin",
    "begin_key",
    "confirm",
    "forget_browser",
    "regenerate",
    "remove",
    "security_context",
]


def available(config: Config) -> bool:
    """Whether users can add a second factor here: ``mfa`` on and an adapter that stores it."""
    storage = config.storage
    return (
        config.mfa.enabled
        and storage.configured
        and all(storage.has(method) for method in FLOW_METHODS["mfa"])
    )


def issuer(request: HttpRequest, config: Config) -> str:
    """The name an authenticator app shows for the key: ``mfa.issuer``, else the site's host."""
    return factors.issuer_for(config, request.get_host())


@dataclass(frozen=True, slots=True)
class Shown:
    """What a form's outcome shows on the page beside its message."""

    #: A key being added: its factor id, the key as text, the QR code (inline SVG).
    adding: dict[str, str] | None = None
    #: Recovery codes, shown this once.
    codes: list[str] | None = None
    #: A security key being added: the options for the browser, and their binding.
    registering: keys.Registration | None = None


def security_context(request: HttpRequest, shown: Shown | None = None) -> dict[str, object]:
    """The user's authenticator apps and recovery codes, and whether they can be managed."""
    config = get_config()
    if not available(config):
        return {"available": False}
    uid = user_id(request.user)
    listed = [
        {
            "id": f.id,
            "name": f.name or keys.kind_name(f.kind),
            "kind": keys.kind_name(f.kind),
            "created_at": f.created_at,
            "last_used_at": f.last_used_at,
        }
        for f in factors.confirmed_factors(config, uid)
    ]
    storage = config.storage
    browsers = (
        [
            {
                "id": b.id,
                "device": describe_device(b.user_agent),
                "created_at": b.created_at,
                "expires": b.expires,
            }
            for b in storage.list_trusted_browsers(uid)
        ]
        if trust.offered(config)
        else []
    )
    return {
        "available": True,
        "keys": listed,
        "browsers": browsers,
        "codes_left": factors.recovery_codes_left(config, uid) if listed else 0,
        "adding": shown.adding if shown else None,
        "codes": shown.codes if shown else None,
        "keys_offered": keys.offered(config),
        "registering": shown.registering if shown else None,
    }


def _adding(request: HttpRequest, factor_id: str, key: str) -> dict[str, str]:
    config = get_config()
    account = str(getattr(request.user, "email", "") or request.user.get_username())
    uri = totp.provisioning_uri(key, account=account, issuer=issuer(request, config))
    return {
        "factor": factor_id,
        "key": " ".join(key[i : i + 4] for i in range(0, len(key), 4)),
        "qr": totp.qr_svg(uri, title=_("QR code for your authenticator app")),
    }


def begin(request: HttpRequest) -> Shown:
    """The key the user is adding: the unconfirmed one they have, else a new one.

    The same key again, so that one already scanned stays right (and the time
    ``mfa.grace_days`` counts from stays the first time they were asked).
    """
    config = get_config()
    uid = user_id(request.user)
    account = str(getattr(request.user, "email", "") or request.user.get_username())
    enrolment = factors.enrolment_for(config, uid, account=account, issuer=issuer(request, config))
    return Shown(adding=_adding(request, enrolment.factor.id, enrolment.key))


def confirm(request: HttpRequest, factor_id: str, code: str) -> tuple[bool, Shown]:
    """Confirm the key being added with a code from it.

    ``(True, the first recovery codes when the user had none)``; ``(False,
    the key again)`` for a wrong code; ``(False, nothing)`` when no such key
    is being added.
    """
    config = get_config()
    uid = user_id(request.user)
    pending: Any = next(
        (
            f
            for f in factors.storage_of(config).list_second_factors(uid)
            if f.id == str(factor_id) and not f.confirmed
        ),
        None,
    )
    if pending is None:
        return False, Shown()
    if not factors.confirm_totp(config, uid, pending.id, code):
        key = factors.unseal(config, pending.secret)
        return False, Shown(adding=_adding(request, pending.id, key) if key else None)
    announce(config, request.user, "added", request=request, kind="totp")
    first = factors.recovery_codes_left(config, uid) == 0
    return True, Shown(codes=factors.new_recovery_codes(config, uid) if first else None)


def begin_key(request: HttpRequest) -> Shown:
    """Options to add a security key (a single-use challenge for this user)."""
    config = get_config()
    user = request.user
    name = str(getattr(user, "email", "") or user.get_username())
    registration = keys.registration_options(
        config,
        user_id(user),
        get_state(request).origin,
        user_name=name,
        display_name=str(getattr(user, "get_full_name", lambda: "")() or name),
    )
    return Shown(registering=registration)


def add_key(request: HttpRequest, credential: str, binding: str, name: str) -> Shown | None:
    """Store the security key the browser made for :func:`begin_key`'s options.

    What to show once it is added (the first recovery codes, for a user who had
    none); ``None`` when the answer does not verify (the reason is logged).
    """
    config = get_config()
    uid = user_id(request.user)
    try:
        keys.register(
            config,
            uid,
            get_state(request).origin,
            credential,
            binding,
            name=name if isinstance(name, str) else "",
            user_agent=request.META.get("HTTP_USER_AGENT"),
        )
    except WebAuthnVerificationError as exc:
        config.logger.error(exc)
        return None
    announce(config, request.user, "added", request=request, kind=keys.KIND)
    first = factors.recovery_codes_left(config, uid) == 0
    return Shown(codes=factors.new_recovery_codes(config, uid) if first else None)


def remove(request: HttpRequest, factor_id: str) -> str:
    """Remove one of the user's keys; with the last one go the recovery codes.

    ``"removed"``; ``"missing"`` when it is not one of theirs; ``"required"``
    when it is the last and ``mfa.required`` names the user (kept).
    """
    config = get_config()
    uid = user_id(request.user)
    confirmed = factors.confirmed_factors(config, uid)
    required = config.mfa.required
    last = [f.id for f in confirmed] == [str(factor_id)]
    if last and required is not None and required(django_user(request.user)):
        return "required"
    kind = next((f.kind for f in confirmed if f.id == str(factor_id)), None)
    if not factors.remove_factor(config, uid, factor_id):
        return "missing"
    if not factors.confirmed_factors(config, uid):
        factors.storage_of(config).replace_recovery_codes(uid, [])
    announce(config, request.user, "removed", request=request, kind=kind)
    return "removed"


def forget_browser(request: HttpRequest, browser_id: str | None) -> bool:
    """Forget one of the user's trusted browsers (*browser_id*), or all of them (``None``)."""
    config = get_config()
    if not trust.offered(config):
        return False
    uid = user_id(request.user)
    if browser_id is None:
        return config.storage.delete_trusted_browsers(uid) > 0
    return config.storage.delete_trusted_browser(uid, browser_id)


def regenerate(request: HttpRequest) -> Shown:
    """A new set of recovery codes for a user who has a key; the old set is void."""
    config = get_config()
    codes = factors.new_recovery_codes(config, user_id(request.user))
    announce(config, request.user, "recovery_codes", request=request)
    return Shown(codes=codes)
