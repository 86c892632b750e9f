"""The account center's Security section: authenticator apps and recovery codes.

What the page shows (:func:`security_context`) and what its forms do
(:func:`begin`, :func:`confirm`, :func:`remove`, :func:`regenerate`), on
:mod:`webauth.mfa.factors`. Adding a key, removing one and new recovery codes
are behind re-authentication (the view's part); a new key counts only once a
code from it is right, and the user's first key comes with a set of recovery
codes, shown once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

from ..adapters.base import FLOW_METHODS
from ..conf import Config, get_config
from ..mfa import factors, totp, trust
from ..mfa.changes import announce
from ..utils import user_id
from .sections import describe_device

__all__ = [
    "Shown",
    "available",
    "begin",
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


def security_context(request: HttpRequest, shown: Shown | None = None) -> dict[str, object]:
    """The user's authenticator apps and recovery codes, and whether they can be managed."""
    config = get_config()
    if not available(config):
        return {"available": False}
    uid = user_id(request.user)
    keys = [
        {
            "id": f.id,
            "name": f.name or _("Authenticator app"),
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
        "keys": keys,
        "browsers": browsers,
        "codes_left": factors.recovery_codes_left(config, uid) if keys else 0,
        "adding": shown.adding if shown else None,
        "codes": shown.codes if shown else None,
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
    announce(config, request.user, "added", request=request)
    first = factors.recovery_codes_left(config, uid) == 0
    return True, Shown(codes=factors.new_recovery_codes(config, uid) if first else None)


def remove(request: HttpRequest, factor_id: str) -> bool:
    """Remove one of the user's keys; with the last one go the recovery codes."""
    config = get_config()
    uid = user_id(request.user)
    if not factors.remove_factor(config, uid, factor_id):
        return False
    if not factors.confirmed_factors(config, uid):
        factors.storage_of(config).replace_recovery_codes(uid, [])
    announce(config, request.user, "removed", request=request)
    return True


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
