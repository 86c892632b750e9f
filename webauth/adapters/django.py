"""The Django ORM adapter: webauth's storage on the project's database.

Users are ``settings.AUTH_USER_MODEL``. With :class:`webauth.models.User` every
``AdapterUser`` field is stored. With Django's ``auth.User`` (or another model)
the adapter maps what the model has:

* ``name`` onto ``name`` if the model has it, else ``first_name``/``last_name``;
* ``email`` onto the model's ``EMAIL_FIELD``;
* ``image`` and ``email_verified`` onto fields of those names when present (with
  ``auth.User`` they are not stored and read back as ``None``);
* a username generated from the email (or the name) and made unique when the
  model's ``USERNAME_FIELD`` is not the email field.

Tokens are stored hashed (:func:`webauth.models.token_hash`). Every method that
writes more than one row does it in one transaction on the adapter's own
database (``using``, else the router's choice for the model).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, TypeVar

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.db import IntegrityError, connections, models, router, transaction
from django.db.models import Q
from django.utils import timezone

from ..errors import AmbiguousEmail, EmailInUse, LastSignInMethod, UsernameInUse
from ..identity import canonical_email_or_none
from ..models import (
    Account,
    ApiKey,
    Authenticator,
    RecoveryCode,
    SecondFactor,
    Session,
    TokenSession,
    TrustedBrowser,
    UnprovenEmail,
    VerificationToken,
    WebAuthnChallenge,
    WebAuthnUserHandle,
    credential_id_hash,
    new_user_handle,
    token_hash,
)
from ..types import (
    ACCOUNT_TOKEN_FIELDS,
    AdapterAccount,
    AdapterAuthenticator,
    AdapterSession,
    AdapterUser,
    ApiKeyRecord,
    LinkedAccount,
    UserSession,
    UserSessionCheck,
    as_account,
    as_api_key,
    as_authenticator,
    as_second_factor,
    as_session,
    as_trusted_browser,
    as_user,
    as_verification_token,
    as_webauthn_challenge,
)
from ..types import (
    SecondFactor as SecondFactorRecord,
)
from ..types import (
    TrustedBrowser as TrustedBrowserRecord,
)
from ..types import VerificationToken as VerificationTokenRecord
from ..types import WebAuthnChallenge as WebAuthnChallengeRecord
from ..utils import aware
from ._compiled import PLACEHOLDER, CompiledLookup, user_by_pk, user_check_by_pk
from ._exact import address_transaction, exactly, grant_transaction
from .base import TokenRefresher

__all__ = ["DjangoAdapter"]


@lru_cache(maxsize=16)
def _api_key_lookup(alias: str, user_model: str) -> CompiledLookup | None:
    """``select_related("user").filter(key_id=...)``: every request with an API key."""
    try:
        return CompiledLookup(
            alias,
            lambda using: (
                ApiKey.objects.using(using).select_related("user").filter(key_id=PLACEHOLDER)
            ),
        )
    except (AttributeError, KeyError, TypeError, ValueError):  # an unusual backend: use the ORM
        return None


@lru_cache(maxsize=16)
def _token_session_lookup(alias: str) -> CompiledLookup | None:
    """``filter(sid=...).values_list("expires", "ended", "minted")``: every access token."""
    try:
        return CompiledLookup(
            alias,
            lambda using: (
                TokenSession.objects.using(using)
                .filter(sid=PLACEHOLDER)
                .values_list("expires", "ended", "minted")
            ),
        )
    except (AttributeError, KeyError, TypeError, ValueError):  # an unusual backend: use the ORM
        return None


@lru_cache(maxsize=16)
def _session_lookup(alias: str, user_model: str) -> CompiledLookup | None:
    """``select_related("user").filter(token_hash=...)``: run on every request, compiled once."""
    try:
        return CompiledLookup(
            alias,
            lambda using: (
                Session.objects.using(using).select_related("user").filter(token_hash=PLACEHOLDER)
            ),
        )
    except (AttributeError, KeyError, TypeError, ValueError):  # an unusual backend: use the ORM
        return None


def _valid_ip(value: str | None) -> str | None:
    try:
        return str(ipaddress.ip_address(value)) if value else None
    except ValueError:
        return None


@lru_cache(maxsize=64)
def _has_field(model: type[models.Model], name: str) -> bool:
    # Asked for every user record (request.user goes through to_record): the
    # answer only changes with the model, so it is worked out once.
    try:
        model._meta.get_field(name)
    except FieldDoesNotExist:
        return False
    return True


_NO_NAME, _NAME_FIELD, _FULL_NAME = 0, 1, 2


@lru_cache(maxsize=64)
def _user_shape(model: Any) -> tuple[str, int, bool, bool]:
    """What ``to_record`` reads from a user of *model*, worked out once per model.

    ``request.user`` goes through ``to_record`` on every request with a session,
    so the field lookups are not repeated per user: the email field's name,
    where the name comes from, and whether ``email_verified`` and ``image`` exist.
    """
    if _has_field(model, "name"):
        name_from = _NAME_FIELD
    elif callable(getattr(model, "get_full_name", None)):
        name_from = _FULL_NAME
    else:
        name_from = _NO_NAME
    return (
        model.get_email_field_name(),
        name_from,
        hasattr(model, "email_verified"),
        hasattr(model, "image"),
    )


# Token refreshes on a database without row locks (SQLite) are serialised in the
# process by one of these, chosen by the account: a fixed set, however many
# accounts there are. Across processes, a claim in the row does it (below).
_REFRESH_LOCKS = tuple(threading.Lock() for _ in range(64))


def _refresh_lock(provider: str, provider_account_id: str) -> threading.Lock:
    digest = hashlib.sha256(f"{provider}\0{provider_account_id}".encode()).digest()
    return _REFRESH_LOCKS[digest[0] % len(_REFRESH_LOCKS)]


#: How long a refresh may hold its claim on an account where the database has no
#: row locks. Far beyond the provider's timeouts; past it, a claim left by a
#: process that died is taken over.
REFRESH_CLAIM_SECONDS = 60

# A claim is stored in expires_at as a negative number, which no expiry is:
# -(deadline in seconds * _CLAIM_SCALE + a random part), unique per claim.
_CLAIM_SCALE = 1_000_000


def _claim_deadline(expires_at: int | None) -> float:
    """When the claim in *expires_at* lapses; 0 if it holds none."""
    if expires_at is None or expires_at >= 0:
        return 0
    return (-expires_at) // _CLAIM_SCALE


def _new_claim() -> int:
    deadline = int(time.time()) + REFRESH_CLAIM_SECONDS
    return -(deadline * _CLAIM_SCALE + secrets.randbelow(_CLAIM_SCALE))


def _same(field: str, value: object) -> dict[str, object]:
    """A filter matching *value* in *field*, ``NULL`` included."""
    return {f"{field}__isnull": True} if value is None else {field: value}


_R = TypeVar("_R")


def _given(record: _R | None, what: str) -> _R:
    """*record*, read by an ``as_*`` reader from what the caller passed; a caller
    that passed nothing gets a ``TypeError`` (the contract requires the record)."""
    if record is None:
        raise TypeError(f"{what} is required, got None")
    return record


def _exact_account(obj: Account | None, provider_account_id: str) -> Account | None:
    """*obj* if its provider account id is exactly *provider_account_id*.

    SQL compares under the column's collation: on MariaDB and MySQL usually
    case-, accent- and trailing-space-insensitive, where provider ids (an OIDC
    ``sub``) are exact strings. The unique (provider, id) constraint leaves at
    most one such candidate, so the exact check is on that row.
    """
    if obj is None or obj.provider_account_id != str(provider_account_id):
        return None
    return obj


#: The fields a passkey's row and its record hold alike (the others differ in type).
_AUTHENTICATOR_FIELDS = (
    "credential_id",
    "provider_account_id",
    "credential_public_key",
    "counter",
    "credential_backed_up",
    "credential_device_type",
    "transports",
)


class DjangoAdapter:
    """Stores users, accounts, sessions, verification tokens and passkeys with the ORM.

    Implements all 19 methods of :class:`webauth.adapters.base.Adapter` and every
    webauth extension. ``using`` selects a database alias other than the router's
    choice.
    """

    def __init__(self, using: str | None = None) -> None:
        self.using = using

    def _write_db(self, model: type[models.Model]) -> str:
        """The alias writes to *model* go to: ``using``, else the router's choice."""
        return self.using or router.db_for_write(model)

    # -- users ------------------------------------------------------------------
    @property
    def user_model(self) -> Any:
        """``settings.AUTH_USER_MODEL``."""
        return get_user_model()

    def _has_field(self, name: str) -> bool:
        return _has_field(self.user_model, name)

    def _users(self) -> Any:
        manager = self.user_model._default_manager
        return manager.db_manager(self.using) if self.using else manager

    def to_record(self, user: Any) -> AdapterUser:
        """The :class:`AdapterUser` for a user model instance (keeping the instance)."""
        model: Any = type(user)  # the user model: no registry lookup per user
        email_field, name_from, has_verified, has_image = _user_shape(model)
        if name_from == _NAME_FIELD:
            name = user.name or None
        elif name_from == _FULL_NAME:
            # As for JWT sessions (webauth.utils.user_to_dict): the username stands in.
            name = user.get_full_name() or user.get_username() or None
        else:
            name = None
        return AdapterUser(
            id=str(user.pk),
            email=getattr(user, email_field, None) or None,
            email_verified=user.email_verified if has_verified else None,
            name=name,
            image=(user.image or None) if has_image else None,
            instance=user,
        )

    def _apply(
        self, obj: Any, data: AdapterUser | Mapping[str, object], fields: set[str]
    ) -> list[str]:
        """Copy the given AdapterUser fields onto a model instance; the model fields set."""
        record = as_user({"id": "", **data}) if isinstance(data, Mapping) else data
        assert record is not None
        model = self.user_model
        changed: list[str] = []
        if "email" in fields:
            # webauth's canonical form; what is no address it accepts keeps
            # Django's normalisation (such a user is never found by address).
            value = (
                canonical_email_or_none(record.email) or model.objects.normalize_email(record.email)
                if record.email
                else None
            )
            email_field = model.get_email_field_name()
            field = model._meta.get_field(email_field)
            setattr(obj, email_field, value if value or field.null else "")
            changed.append(email_field)
        if "name" in fields:
            if self._has_field("name"):
                obj.name = record.name or ""
                changed.append("name")
            elif self._has_field("first_name"):
                first, _, last = (record.name or "").partition(" ")
                obj.first_name = first[:150]
                changed.append("first_name")
                if self._has_field("last_name"):
                    obj.last_name = last[:150]
                    changed.append("last_name")
        if "image" in fields and self._has_field("image"):
            obj.image = record.image or ""
            changed.append("image")
        if "email_verified" in fields and self._has_field("email_verified"):
            obj.email_verified = record.email_verified
            changed.append("email_verified")
        return changed

    def _unique_username(self, record: AdapterUser) -> str:
        model = self.user_model
        field = model._meta.get_field(model.USERNAME_FIELD)
        max_length = getattr(field, "max_length", None) or 150
        base = (record.email or "").split("@")[0] or (record.name or "") or "user"
        base = re.sub(r"[^\w.@+-]", "", base)[: max_length - 9] or "user"
        candidate = base
        while self._users().filter(**{model.USERNAME_FIELD: candidate}).exists():
            candidate = f"{base}-{secrets.token_hex(4)}"
        return candidate

    def _users_with_email(self, users: Any, address: str, limit: int = 2) -> list[Any]:
        """Up to *limit* users of *users* whose stored address is exactly *address*.

        Compared exactly in SQL (:func:`~webauth.adapters._exact.exactly`) and
        again in Python on the rows that come back.
        """
        field = self.user_model.get_email_field_name()
        rows = exactly(users, field, address).order_by("pk")[:limit]
        return [obj for obj in rows if getattr(obj, field) == address]

    def _save_with_address(
        self, obj: Any, *, insert: bool, update_fields: list[str] | None = None
    ) -> None:
        """Save *obj*, refusing (``EmailInUse``) an address another user has.

        The check and the write are one step per address
        (:func:`~webauth.adapters._exact.address_transaction`): the row is written first (so that on
        SQLite the write lock is held before anything is read), then another
        user with exactly this address rolls it back. A unique address column
        (``webauth.User``'s) refuses the second row by itself: that is the
        same answer.
        """
        model = type(obj)
        field = model.get_email_field_name()
        address = canonical_email_or_none(getattr(obj, field, None))
        alias = self.using or router.db_for_write(model, instance=obj)
        if address is None:  # no address to share: nothing to check
            obj.save(using=alias, force_insert=insert, update_fields=update_fields)
            return
        others = model._default_manager.db_manager(alias).all()
        try:
            with address_transaction(alias, address):
                obj.save(using=alias, force_insert=insert, update_fields=update_fields)
                if self._users_with_email(others.exclude(pk=obj.pk), address, limit=1):
                    raise EmailInUse("Another user has this email address")
        except IntegrityError:
            if insert:
                obj.pk, obj._state.adding = None, True  # rolled back: not a stored user
            if self._users_with_email(others.exclude(pk=obj.pk), address, limit=1):
                raise EmailInUse("Another user has this email address") from None
            raise
        except EmailInUse:
            if insert:
                obj.pk, obj._state.adding = None, True
            raise

    def create_user(self, user: AdapterUser | Mapping[str, object]) -> AdapterUser:
        """Create a user from an ``AdapterUser``; its ``id`` is ignored (the database picks it).

        Raises :class:`~webauth.errors.EmailInUse` when another user has the
        address (its canonical form, compared exactly), also against another
        request creating one at the same moment. A record whose ``instance`` is
        an unsaved user of the model (a sign-up form's) stores that instance,
        keeping its username, password and other fields, and raises
        :class:`~webauth.errors.UsernameInUse` when its username is taken.
        """
        record = as_user({"id": "", **user}) if isinstance(user, Mapping) else user
        assert record is not None
        model = self.user_model
        given = record.instance
        if isinstance(given, model) and given._state.adding and given.pk is None:
            # A sign-up form's new user (webauth.passwords.signup): stored as it
            # is, its username, password and other fields kept; the record adds
            # the address (canonical) and what it has besides.
            obj = given
            fields = {"email", "email_verified"}
            fields |= {name for name in ("name", "image") if getattr(record, name)}
        else:
            obj, given = model(), None
            fields = {"email", "name", "image", "email_verified"}
        self._apply(obj, record, fields)
        username = model.USERNAME_FIELD
        if model.get_email_field_name() != username and not (given and getattr(obj, username)):
            setattr(obj, username, self._unique_username(record))
        if given is None or not obj.has_usable_password():
            obj.set_unusable_password()
        try:
            self._save_with_address(obj, insert=True)
        except IntegrityError:
            taken = self._users().filter(**_same(username, getattr(obj, username)))
            if given is None or not taken.exists():
                raise
            raise UsernameInUse("Another user has this username") from None
        return self.to_record(obj)

    def get_user(self, id: str) -> AdapterUser | None:
        """The user with this primary key."""
        obj = user_by_pk(id, self.using)  # compiled once: JWT sessions call this per request
        return self.to_record(obj) if obj is not None else None

    def get_user_session_check(self, user_id: str) -> UserSessionCheck | None:
        """Whether the user exists and is active, and its password hash: for ``GET /auth/session``.

        One query of those columns (compiled once, no model instance), where
        :meth:`get_user` reads every column and builds the instance ``request.user``
        needs; the same manager and key rules, so both find the same users.
        """
        found = user_check_by_pk(user_id, self.using)
        if found is None:
            return None
        is_active, password = found
        return UserSessionCheck(
            str(user_id), is_active, password if isinstance(password, str) else None
        )

    def get_user_by_email(self, email: str) -> AdapterUser | None:
        """The user whose address is *email*'s canonical form, compared exactly.

        Not case-insensitively in SQL: that is no identity (PostgreSQL's
        ``UPPER`` maps the dotless i, U+0131, to ``I``; MariaDB's collations take ``ä`` for
        ``a``). Addresses are stored canonical (:mod:`webauth.identity`);
        ``manage.py webauth_addresses`` finds those that are not. Two users
        with exactly this address raise :class:`~webauth.errors.AmbiguousEmail`:
        the sign-in is refused rather than given to either.
        """
        address = canonical_email_or_none(email)
        if address is None:
            return None
        found = self._users_with_email(self._users(), address)
        if len(found) > 1:
            raise AmbiguousEmail(
                f"Users {found[0].pk} and {found[1].pk} have the same email address; "
                "run manage.py webauth_addresses"
            )
        return self.to_record(found[0]) if found else None

    def _account(
        self, provider: str, provider_account_id: str, *, with_user: bool = False
    ) -> Account | None:
        """The stored account (its user joined, *with_user*), compared exactly, or ``None``."""
        rows = Account.objects.using(self.using)
        if with_user:
            rows = rows.select_related("user")
        obj = rows.filter(provider=provider, provider_account_id=provider_account_id).first()
        return _exact_account(obj, provider_account_id)

    def get_user_by_account(self, provider: str, provider_account_id: str) -> AdapterUser | None:
        """The user linked to this provider account (one joined query)."""
        account = self._account(provider, provider_account_id, with_user=True)
        return self.to_record(account.user) if account is not None else None

    def update_user(self, user: AdapterUser | Mapping[str, object]) -> AdapterUser:
        """Apply the given fields (``id`` required); raises if the user does not exist."""
        if isinstance(user, Mapping):
            data = {k: v for k, v in user.items()}
            fields = {"email_verified" if k == "emailVerified" else k for k in data} - {"id"}
            user_id = data["id"]
        else:
            fields = {"email", "name", "image", "email_verified"}
            user_id = user.id
        obj = self._users().get(pk=user_id)
        # Only the columns given are written: a save of every column would write back
        # what was read, undoing a password change (or a deactivation) committed by
        # another request in between. Nothing to write for a model without them
        # (Django's User has no email_verified): no write at all.
        changed = self._apply(obj, user, fields)
        if not changed:
            return self.to_record(obj)
        if "email" in fields:
            # EmailInUse when taken
            self._save_with_address(obj, insert=False, update_fields=changed)
        else:
            obj.save(using=self.using, update_fields=changed)
        return self.to_record(obj)

    def delete_user(self, user_id: str) -> AdapterUser | None:
        """Delete the user; accounts, sessions and passkeys go with it (CASCADE)."""
        obj = self._users().filter(pk=user_id).first()
        if obj is None:
            return None
        record = self.to_record(obj)
        obj.delete()
        record.instance = None
        return record

    # -- accounts ---------------------------------------------------------------
    def _account_record(self, obj: Account) -> AdapterAccount:
        record = AdapterAccount(
            user_id=str(obj.user_id),
            type=obj.type,
            provider=obj.provider,
            provider_account_id=obj.provider_account_id,
            **{name: getattr(obj, name) for name in ACCOUNT_TOKEN_FIELDS},
            extra=dict(obj.extra or {}),
        )
        if _claim_deadline(record.expires_at):
            record.expires_at = 0  # being refreshed: expired, as far as anyone reading knows
        return record

    def link_account(self, account: AdapterAccount | Mapping[str, object]) -> AdapterAccount:
        """Store a provider account; raises ``IntegrityError`` if it is already linked."""
        record = _given(as_account(account), "account")
        obj = Account(
            user_id=record.user_id,
            type=record.type,
            provider=record.provider,
            provider_account_id=str(record.provider_account_id),
            **{name: getattr(record, name) for name in ACCOUNT_TOKEN_FIELDS},
            extra=record.extra,
        )
        obj.save(using=self.using, force_insert=True)
        return self._account_record(obj)

    def update_account(
        self, account: AdapterAccount | Mapping[str, object]
    ) -> AdapterAccount | None:
        """Replace the stored tokens of an account (webauth extension, used on re-sign-in)."""
        record = _given(as_account(account), "account")
        obj = self._account(record.provider, record.provider_account_id)
        if obj is None:
            return None
        for name in ACCOUNT_TOKEN_FIELDS:
            setattr(obj, name, getattr(record, name))
        obj.extra = record.extra
        obj.save(using=self.using)
        return self._account_record(obj)

    def unlink_account(self, provider: str, provider_account_id: str) -> AdapterAccount | None:
        """Remove the account; returns it, or ``None`` if there was none."""
        obj = self._account(provider, provider_account_id)
        if obj is None:
            return None
        record = self._account_record(obj)
        obj.delete()
        return record

    def get_account(self, provider_account_id: str, provider: str) -> AdapterAccount | None:
        """The account, or ``None``."""
        obj = self._account(provider, provider_account_id)
        return self._account_record(obj) if obj is not None else None

    def create_user_and_link_account(
        self,
        user: AdapterUser | Mapping[str, object],
        account: AdapterAccount | Mapping[str, object],
    ) -> tuple[AdapterUser, AdapterAccount]:
        """Create a user and link its first account in one transaction: both or neither.

        Raises :class:`~webauth.errors.EmailInUse` as :meth:`create_user` does
        (and then stores neither).
        """
        record_user = as_user({"id": "", **user}) if isinstance(user, Mapping) else user
        address = canonical_email_or_none(record_user.email if record_user else None)
        alias = self._write_db(Account)
        lock = address_transaction(alias, address) if address else transaction.atomic(using=alias)
        # The address lock is taken outermost: on MariaDB and MySQL a named lock
        # taken inside this transaction would end before it commits.
        with lock:
            created = self.create_user(user)
            record = _given(as_account(account), "account")
            record.user_id = created.id
            linked = self.link_account(record)
        return created, linked

    def get_account_by_user_id(self, user_id: str, provider: str) -> AdapterAccount | None:
        """The user's account at *provider* (the oldest, if there are several)."""
        obj = (
            Account.objects.using(self.using)
            .filter(user_id=user_id, provider=provider)
            .order_by("pk")
            .first()
        )
        return self._account_record(obj) if obj is not None else None

    def refresh_account_tokens(
        self, provider: str, provider_account_id: str, refresh: TokenRefresher
    ) -> AdapterAccount | None:
        """Run *refresh* on the locked account and store the token fields it returns.

        Only one caller at a time, in any thread or process, runs *refresh* for an
        account; the others wait, then get the account as the first one left it
        (so ``get_access_token`` finds it fresh and calls no provider).

        Where the database has row locks (PostgreSQL, MariaDB, MySQL, Oracle) the
        row is held with ``SELECT ... FOR UPDATE`` for the length of the call.
        SQLite has none, and holding its database-wide write lock across the
        provider's HTTP call would stop every other writer (a provider served by
        the same project would wait for itself). There a caller claims the
        account with one atomic compare-and-set of ``expires_at`` (see
        :meth:`_refresh_with_claim`); threads of one process also queue on a lock.
        """
        alias = self._write_db(Account)
        rows = Account.objects.using(alias).filter(
            provider=provider, provider_account_id=provider_account_id
        )
        if connections[alias].features.has_select_for_update:
            with transaction.atomic(using=alias):
                obj = _exact_account(rows.select_for_update().first(), provider_account_id)
                if obj is None:
                    return None
                changes = refresh(self._account_record(obj))
                if changes:
                    for name, value in changes.items():
                        setattr(obj, name, value)
                    obj.save(using=alias, update_fields=[*changes, "updated_at"])
                return self._account_record(obj)
        with _refresh_lock(provider, provider_account_id):
            return self._refresh_with_claim(alias, rows, provider_account_id, refresh)

    def _refresh_with_claim(
        self,
        alias: str,
        rows: models.QuerySet[Account],
        provider_account_id: str,
        refresh: TokenRefresher,
    ) -> AdapterAccount | None:
        """``refresh_account_tokens`` where the database has no row locks.

        The caller claims the account by writing a claim (a negative number no
        expiry can be) into ``expires_at``, only if the row still holds what it
        read: of several callers exactly one write matches. The others re-read
        the row every few milliseconds until the claim is gone, then run the
        same steps on what the winner stored. The winner replaces its claim with
        the new tokens, or puts the old expiry back when *refresh* stores
        nothing or fails. A claim whose holder died lapses after
        :data:`REFRESH_CLAIM_SECONDS`, and the next caller takes it over. While
        a claim is in place, records read through this adapter show
        ``expires_at=0`` (expired).
        """
        pause = 0.01
        while True:
            obj = _exact_account(rows.first(), provider_account_id)
            if obj is None:
                return None
            seen = obj.expires_at
            if _claim_deadline(seen) > time.time():  # another caller is refreshing
                time.sleep(pause)
                pause = min(pause * 2, 0.2)
                continue
            claim = _new_claim()
            claimed = rows.filter(
                pk=obj.pk, **_same("expires_at", seen), **_same("refresh_token", obj.refresh_token)
            ).update(expires_at=claim)
            if claimed:
                break
        # A lapsed claim's expiry is unknown: put back "expired" if nothing is stored.
        previous = 0 if _claim_deadline(seen) else seen
        mine = rows.filter(pk=obj.pk, expires_at=claim)
        try:
            changes = refresh(self._account_record(obj))
        except BaseException:
            mine.update(expires_at=previous)
            raise
        with transaction.atomic(using=alias):
            if changes:
                values = {"expires_at": previous, **changes, "updated_at": timezone.now()}
                # Our claim lapsed only if the provider took minutes: the tokens it
                # has just issued are the ones that work, so they are stored anyway.
                if not mine.update(**values):
                    rows.filter(pk=obj.pk).update(**values)
            else:
                mine.update(expires_at=previous)
            stored = rows.filter(pk=obj.pk).first()
        return self._account_record(stored) if stored is not None else None

    def _linked(self, obj: Account) -> LinkedAccount:
        return LinkedAccount(
            id=obj.pk,
            provider=obj.provider,
            provider_account_id=obj.provider_account_id,
            type=obj.type,
            created_at=obj.created_at,
        )

    def list_accounts_by_user_id(self, user_id: str) -> list[LinkedAccount]:
        """The user's accounts, oldest first, without tokens."""
        rows = Account.objects.using(self.using).filter(user_id=user_id)
        return [self._linked(obj) for obj in rows.order_by("created_at", "pk")]

    def count_sign_in_methods(self, user_id: str) -> int:
        """Linked accounts, passkeys and a usable password, added up."""
        return self._count_sign_in_methods(user_id, self.using)

    def _count_sign_in_methods(self, user_id: str | int, alias: str | None) -> int:
        user = self._users().filter(pk=user_id).first()
        has_password = (
            user is not None
            and callable(getattr(user, "has_usable_password", None))
            and user.has_usable_password()
        )
        accounts = list(
            Account.objects.using(alias)
            .filter(user_id=user_id)
            .values_list("type", "provider_account_id")
        )
        # A passkey and the webauthn account registered with it are one way in.
        # Paired in Python: SQL would compare the ids under the column's collation.
        paired = {account_id for kind, account_id in accounts if kind == "webauthn"}
        passkeys = Authenticator.objects.using(alias).filter(user_id=user_id)
        lone = sum(
            1
            for account_id in passkeys.values_list("provider_account_id", flat=True)
            if account_id not in paired
        )
        return len(accounts) + lone + int(bool(has_password))

    def _lock_ways_in(self, alias: str, user_id: str | int) -> None:
        """Lock the user's accounts, then passkeys, until the transaction ends.

        ``unlink_user_account`` and ``delete_authenticator`` take these locks
        before they remove anything and count what is left, so that removals for
        one user run one after the other and the later one counts what the
        earlier one left (PostgreSQL and MariaDB read committed rows after a lock
        wait): two removals cannot both see a second way in and leave none.
        SQLite has no row locks but a single writer: there the removal's
        ``DELETE`` is the transaction's first statement, so it holds the write
        lock before it counts (a transaction that read first could not wait for
        that lock).
        """
        if not connections[alias].features.has_select_for_update:
            return
        for model in (Account, Authenticator):
            rows = model.objects.using(alias).filter(user_id=user_id).order_by("pk")
            list(rows.select_for_update().values_list("pk", flat=True))

    def _paired_rows(
        self,
        model: type[Account | Authenticator],
        alias: str,
        user_id: str | int,
        provider_account_id: str,
    ) -> list[int]:
        """Primary keys of the user's *model* rows with exactly this provider account id."""
        rows: Any = model._default_manager.using(alias).filter(
            user_id=user_id, provider_account_id=provider_account_id
        )
        if model is Account:
            rows = rows.filter(type="webauthn")
        return [
            pk
            for pk, account_id in rows.values_list("pk", "provider_account_id")
            if account_id == provider_account_id
        ]

    def unlink_user_account(
        self, user_id: str, provider: str, provider_account_id: str | None = None
    ) -> LinkedAccount | None:
        """Remove the account unless it is the user's last way in (then raise).

        In one transaction the user's accounts and passkeys are locked (see
        ``_lock_ways_in``), the account is deleted (with its passkey, for a
        ``webauthn`` account) and what is left is counted; when nothing is, the
        transaction rolls back and ``LastSignInMethod`` is raised. So two
        concurrent unlinks (or an unlink and a passkey removal) cannot both pass
        the check and leave the user locked out.
        """
        if "\x00" in provider or "\x00" in (provider_account_id or ""):
            # No row holds a NUL (PostgreSQL refuses one even in a query): nothing to unlink.
            return None
        alias = self._write_db(Account)
        rows = Account.objects.using(alias).filter(user_id=user_id, provider=provider)
        if provider_account_id is not None:
            rows = rows.filter(provider_account_id=provider_account_id)
        obj = rows.order_by("pk").first()
        if provider_account_id is not None:
            obj = _exact_account(obj, provider_account_id)
        if obj is None:
            return None
        record = self._linked(obj)
        with transaction.atomic(using=alias):
            self._lock_ways_in(alias, user_id)
            if not Account.objects.using(alias).filter(pk=obj.pk).delete()[0]:
                return None  # removed meanwhile
            if obj.type == "webauthn":
                passkeys = self._paired_rows(
                    Authenticator, alias, obj.user_id, obj.provider_account_id
                )
                Authenticator.objects.using(alias).filter(pk__in=passkeys).delete()
            if self._count_sign_in_methods(user_id, alias) < 1:
                raise LastSignInMethod(
                    f"{provider} is the only way this user can sign in; add a password, "
                    "a passkey or another account first"
                )
        return record

    # -- sessions ---------------------------------------------------------------
    def _session_record(self, obj: Session, session_token: str) -> AdapterSession:
        return AdapterSession(
            session_token=session_token,
            user_id=str(obj.user_id),
            expires=obj.expires,
            user_agent=obj.user_agent or None,
            ip_address=obj.ip_address,
            created_at=obj.created_at,
            auth_hash=obj.auth_hash or None,
            amr=obj.amr or None,
            mfa_at=obj.mfa_at,
        )

    def create_session(self, session: AdapterSession | Mapping[str, object]) -> AdapterSession:
        """Store a session under the hash of its token."""
        record = _given(as_session(session), "session")
        now = timezone.now()
        obj = Session(
            user_id=record.user_id,
            token_hash=token_hash(record.session_token),
            expires=aware(record.expires),
            created_at=aware(record.created_at) if record.created_at is not None else now,
            updated_at=now,
            user_agent=(record.user_agent or "")[:512],
            ip_address=_valid_ip(record.ip_address),
            auth_hash=(record.auth_hash or "")[:128],
            amr=(record.amr or "")[:64],
            mfa_at=aware(record.mfa_at) if record.mfa_at is not None else None,
        )
        obj.save(using=self.using, force_insert=True)
        return self._session_record(obj, record.session_token)

    def get_session_and_user(self, session_token: str) -> tuple[AdapterSession, AdapterUser] | None:
        """The session and its user in one joined query."""
        alias = self.using or router.db_for_read(Session)
        lookup = _session_lookup(alias, settings.AUTH_USER_MODEL)
        if lookup is not None:
            obj = lookup.fetch(token_hash(session_token))
        else:
            obj = (
                Session.objects.using(alias)
                .select_related("user")
                .filter(token_hash=token_hash(session_token))
                .first()
            )
        if obj is None:
            return None
        return self._session_record(obj, session_token), self.to_record(obj.user)

    def update_session(self, session: AdapterSession | Mapping[str, Any]) -> AdapterSession | None:
        """Set a new ``expires`` and/or ``auth_hash`` (what a session update carries)."""
        if isinstance(session, Mapping):
            token = session.get("session_token") or session.get("sessionToken")
            expires = session.get("expires")
            user_id = session.get("user_id") or session.get("userId")
            new_hash = session.get("auth_hash")
        else:
            token, expires, user_id = session.session_token, session.expires, session.user_id
            new_hash = session.auth_hash
        if not token:
            raise ValueError("update_session needs session_token")
        rows = Session.objects.using(self.using).filter(token_hash=token_hash(token))
        if new_hash is not None:
            changes: dict[str, object] = {"auth_hash": str(new_hash)[:128]}
            if expires is not None:
                changes.update(expires=aware(expires), updated_at=timezone.now())
            if not rows.update(**changes):
                return None
        elif expires is not None:
            if not rows.update(expires=aware(expires), updated_at=timezone.now()):
                return None
            if user_id:  # the caller knows the rest: spare the request a second query
                return AdapterSession(session_token=token, user_id=str(user_id), expires=expires)
        obj = rows.first()
        return self._session_record(obj, token) if obj is not None else None

    def delete_session(self, session_token: str) -> AdapterSession | None:
        """Delete the session; returns it when it existed."""
        obj = Session.objects.using(self.using).filter(token_hash=token_hash(session_token)).first()
        if obj is None:
            return None
        record = self._session_record(obj, session_token)
        Session.objects.using(self.using).filter(pk=obj.pk).delete()
        return record

    def list_sessions_by_user_id(
        self, user_id: str, current_session_token: str | None = None
    ) -> list[UserSession]:
        """The user's unexpired sessions, newest first; ``current`` by token hash."""
        current = token_hash(current_session_token) if current_session_token else None
        rows = Session.objects.using(self.using).filter(user_id=user_id, expires__gt=timezone.now())
        return [
            UserSession(
                id=row.pk,
                created_at=row.created_at,
                last_extended_at=row.updated_at,
                expires=row.expires,
                user_agent=row.user_agent,
                ip_address=row.ip_address,
                current=row.token_hash == current,
            )
            for row in rows.order_by("-created_at")
        ]

    def delete_session_by_id(self, user_id: str, session_id: Any) -> bool:
        """Delete one of the user's sessions; ``False`` if it is not theirs or is gone."""
        try:
            deleted, _ = (
                Session.objects.using(self.using).filter(user_id=user_id, pk=session_id).delete()
            )
        except (TypeError, ValueError):  # not a session id at all
            return False
        return bool(deleted)

    def delete_sessions_by_user_id(
        self, user_id: str, keep_session_token: str | None = None
    ) -> int:
        """Delete the user's sessions except the kept one; returns how many went."""
        rows = Session.objects.using(self.using).filter(user_id=user_id)
        if keep_session_token:
            rows = rows.exclude(token_hash=token_hash(keep_session_token))
        deleted, _ = rows.delete()
        return deleted

    # -- verification tokens ------------------------------------------------------
    def _new_grant(
        self, record: VerificationTokenRecord, attempts: int, using: str
    ) -> VerificationToken:
        obj = VerificationToken(
            identifier=record.identifier,
            token_hash=token_hash(record.token),
            code_hash=token_hash(record.code) if record.code else "",
            expires=aware(record.expires),
            attempts=max(attempts, 0),
        )
        obj.save(using=using, force_insert=True)
        return obj

    def create_verification_token(
        self, token: VerificationTokenRecord | Mapping[str, object]
    ) -> VerificationTokenRecord:
        """Store the token's hash (and the code's, when the record has one)."""
        record = _given(as_verification_token(token), "token")
        self._new_grant(record, record.attempts, self._write_db(VerificationToken))
        return record

    def replace_verification_token(
        self, token: VerificationTokenRecord | Mapping[str, object]
    ) -> VerificationTokenRecord:
        """Store a new grant and delete the identifier's earlier ones, in one transaction.

        The new row is inserted first (on SQLite that takes the write lock before
        anything is read), then the earlier rows of the identifier (smaller
        primary keys) are locked, read for their ``attempts`` and deleted: the
        new grant starts at the highest count among the unexpired ones, so a
        resend does not reset the code's attempts. The latest grant wins:
        concurrent replaces (and code redemptions) of one identifier run one
        after the other (see ``grant_transaction``), so exactly one grant
        survives them.
        """
        record = _given(as_verification_token(token), "token")
        alias = self._write_db(VerificationToken)
        identifier = record.identifier
        now = timezone.now()
        with grant_transaction(alias, identifier):
            obj = self._new_grant(record, record.attempts, alias)
            earlier = VerificationToken.objects.using(alias).filter(
                identifier=identifier, pk__lt=obj.pk
            )
            locked = earlier.select_for_update().values_list("identifier", "expires", "attempts")
            # SQL compares identifiers under the column's collation (case-
            # insensitively on most MariaDB and MySQL databases): count exact ones.
            carried = max(
                (n for ident, expires, n in locked if ident == identifier and expires > now),
                default=0,
            )
            # Rows of another identifier that only the collation matches stay.
            doomed = [
                pk for pk, ident in earlier.values_list("pk", "identifier") if ident == identifier
            ]
            VerificationToken.objects.using(alias).filter(pk__in=doomed).delete()
            if carried > obj.attempts:
                VerificationToken.objects.using(alias).filter(pk=obj.pk).update(attempts=carried)
                obj.attempts = carried
        return VerificationTokenRecord(
            identifier=identifier,
            token=record.token,
            expires=record.expires,
            code=record.code,
            attempts=obj.attempts,
        )

    def use_verification_token(self, identifier: str, token: str) -> VerificationTokenRecord | None:
        """Return the token and delete it; of concurrent callers exactly one gets it.

        The row is read, then deleted by primary key; only the caller whose DELETE
        removed the row (row count 1) wins. Both happen inside the identifier's
        ``grant_transaction``, queued behind its code redemptions and replaces:
        on MariaDB and MySQL a code redemption's ``UPDATE`` locks the grant's
        row through the identifier's index and then its primary key, while a
        bare ``DELETE`` by primary key takes the two in the other order, and
        InnoDB can refuse one of the two as a deadlock (CI saw error 1213 for
        one of 50 callers racing by link and by code).
        """
        alias = self._write_db(VerificationToken)
        rows = VerificationToken.objects.using(alias).filter(
            identifier=identifier, token_hash=token_hash(token)
        )
        with grant_transaction(alias, identifier):
            obj = rows.first()
            if obj is None or obj.identifier != identifier:
                return None
            deleted, _ = VerificationToken.objects.using(alias).filter(pk=obj.pk).delete()
        if not deleted:
            return None
        return VerificationTokenRecord(
            identifier=identifier, token=token, expires=obj.expires, attempts=obj.attempts
        )

    def use_verification_code(
        self, identifier: str, code: str, max_attempts: int
    ) -> VerificationTokenRecord | None:
        """Redeem the identifier's live grant by its code; count a wrong code.

        In one transaction (queued behind any other of the identifier's, see
        ``grant_transaction``): first one attempt is claimed on the identifier's
        unexpired grants that have fewer than *max_attempts* (an ``UPDATE ...
        attempts = attempts + 1 WHERE attempts < max``, which holds the row lock
        to the end); nothing claimed means no live grant, and ``None``. Then the
        grant with this code is deleted by primary key, and the caller whose
        DELETE removed it gets it. A wrong code keeps its attempt, and a grant
        that has reached *max_attempts* is deleted. Claiming before comparing
        means that however many callers race, no more than *max_attempts* codes
        are ever compared against one grant.
        """
        alias = self._write_db(VerificationToken)
        hashed = token_hash(code)
        now = timezone.now()
        grants = VerificationToken.objects.using(alias).filter(identifier=identifier)
        with grant_transaction(alias, identifier):
            claimed = grants.filter(expires__gt=now, attempts__lt=max_attempts).update(
                attempts=models.F("attempts") + 1
            )
            if not claimed:
                return None
            rows = list(
                grants.filter(expires__gt=now).values_list(
                    "pk", "identifier", "code_hash", "expires", "attempts"
                )
            )
            mine = [row for row in rows if row[1] == identifier]
            for pk, _ident, stored, expires, attempts in mine:
                if not (stored and hmac.compare_digest(stored, hashed)):
                    continue
                if VerificationToken.objects.using(alias).filter(pk=pk).delete()[0]:
                    return VerificationTokenRecord(
                        identifier=identifier,
                        token="",  # only its hash is stored
                        expires=expires,
                        code=code,
                        attempts=attempts - 1,  # the wrong codes before this one
                    )
            spent = [pk for pk, _ident, _stored, _expires, n in mine if n >= max_attempts]
            if spent:
                VerificationToken.objects.using(alias).filter(pk__in=spent).delete()
        return None

    # -- authenticators -----------------------------------------------------------
    def _authenticator_record(self, obj: Authenticator) -> AdapterAuthenticator:
        return AdapterAuthenticator(
            user_id=str(obj.user_id),
            **{name: getattr(obj, name) for name in _AUTHENTICATOR_FIELDS},
            name=obj.name or None,
            aaguid=obj.aaguid or None,
            backup_eligible=obj.backup_eligible,
            created_at=obj.created_at,
            last_used_at=obj.last_used_at,
        )

    def _authenticator(self, credential_id: str) -> Authenticator | None:
        """The row of this exact credential id, found through its hash.

        The unique ``credential_id_hash`` index finds the row; the full id is then
        compared in Python, exactly (SQL would compare it under the column's
        collation, case-insensitive on most MariaDB and MySQL databases).
        """
        if not isinstance(credential_id, str):
            return None
        obj = (
            Authenticator.objects.using(self.using)
            .filter(credential_id_hash=credential_id_hash(credential_id))
            .first()
        )
        return obj if obj is not None and obj.credential_id == credential_id else None

    def _users_authenticator(self, user_id: str, credential_id: str) -> Authenticator | None:
        """The user's passkey with this exact credential id; ``None`` if it is someone else's."""
        obj = self._authenticator(credential_id)
        return obj if obj is not None and str(obj.user_id) == str(user_id) else None

    def create_authenticator(
        self, authenticator: AdapterAuthenticator | Mapping[str, object]
    ) -> AdapterAuthenticator:
        """Store a credential; raises ``IntegrityError`` for a duplicate credential id.

        The unique index on ``credential_id_hash`` refuses the duplicate.
        """
        record = _given(as_authenticator(authenticator), "authenticator")
        obj = Authenticator(
            user_id=record.user_id,
            **{name: getattr(record, name) for name in _AUTHENTICATOR_FIELDS},
            credential_id_hash=credential_id_hash(record.credential_id),
            name=(record.name or "")[:100],
            aaguid=(record.aaguid or "")[:36],
            backup_eligible=bool(record.backup_eligible),
            last_used_at=aware(record.last_used_at) if record.last_used_at else None,
        )
        with transaction.atomic(using=self._write_db(Authenticator)):
            obj.save(using=self.using, force_insert=True)
        return self._authenticator_record(obj)

    def get_authenticator(self, credential_id: str) -> AdapterAuthenticator | None:
        """The credential, or ``None``."""
        obj = self._authenticator(credential_id)
        return self._authenticator_record(obj) if obj is not None else None

    def list_authenticators_by_user_id(self, user_id: str) -> list[AdapterAuthenticator]:
        """The user's credentials, oldest first (empty for an unknown user)."""
        try:
            rows = Authenticator.objects.using(self.using).filter(user_id=user_id)
            return [self._authenticator_record(obj) for obj in rows.order_by("pk")]
        except (ValueError, TypeError):
            return []

    def update_authenticator_counter(
        self, credential_id: str, new_counter: int
    ) -> AdapterAuthenticator | None:
        """Store a signature counter that went up; ``None`` when it did not.

        One conditional ``UPDATE ... SET counter = new, last_used_at = now WHERE
        id = ... AND (counter < new OR (counter = 0 AND new = 0))``: the database
        checks and writes in one step, so of concurrent callers with the same
        counter exactly one changes the row (every one of them for 0/0, what
        authenticators that keep no counter send) and the others get ``None``.
        Raises ``LookupError`` for an unknown credential id.
        """
        obj = self._authenticator(credential_id)
        if obj is None:
            raise LookupError(f"no authenticator with credential id {credential_id[:64]!r}")
        new_counter = int(new_counter)
        now = timezone.now()
        went_up = Q(counter__lt=new_counter)
        if new_counter == 0:
            went_up |= Q(counter=0)
        rows = Authenticator.objects.using(self.using).filter(went_up, pk=obj.pk)
        if not rows.update(counter=new_counter, last_used_at=now):
            return None  # it stood still or went back (or the passkey is gone)
        obj.counter, obj.last_used_at = new_counter, now
        return self._authenticator_record(obj)

    def rename_authenticator(
        self, user_id: str, credential_id: str, name: str
    ) -> AdapterAuthenticator | None:
        """Set the passkey's name (up to 100 characters); ``None`` if it is not the user's."""
        obj = self._users_authenticator(user_id, credential_id)
        if obj is None:
            return None
        name = str(name)[:100]
        if not Authenticator.objects.using(self.using).filter(pk=obj.pk).update(name=name):
            return None
        obj.name = name
        return self._authenticator_record(obj)

    def delete_authenticator(self, user_id: str, credential_id: str) -> AdapterAuthenticator | None:
        """Remove the user's passkey and its ``webauthn`` account, unless it is their last way in.

        As ``unlink_user_account``: in one transaction the user's accounts and
        passkeys are locked, the passkey (and the account registered with it) is
        deleted and what is left is counted; if nothing is, the transaction rolls
        back and ``LastSignInMethod`` is raised.
        """
        obj = self._users_authenticator(user_id, credential_id)
        if obj is None:
            return None
        record = self._authenticator_record(obj)
        alias = self._write_db(Authenticator)
        with transaction.atomic(using=alias):
            self._lock_ways_in(alias, obj.user_id)
            if not Authenticator.objects.using(alias).filter(pk=obj.pk).delete()[0]:
                return None  # removed meanwhile
            accounts = self._paired_rows(Account, alias, obj.user_id, obj.provider_account_id)
            if accounts:
                Account.objects.using(alias).filter(pk__in=accounts).delete()
            if self._count_sign_in_methods(obj.user_id, alias) < 1:
                raise LastSignInMethod(
                    "this passkey is the only way this user can sign in; add a password, "
                    "another passkey or an account first"
                )
        return record

    # -- the second factor (webauth.mfa) -----------------------------------------------
    def _factor_record(self, obj: SecondFactor) -> SecondFactorRecord:
        return SecondFactorRecord(
            id=str(obj.pk),
            user_id=str(obj.user_id),
            kind=obj.kind,
            secret=obj.secret,
            name=obj.name,
            confirmed=obj.confirmed,
            last_step=obj.last_step,
            created_at=obj.created_at,
            last_used_at=obj.last_used_at,
        )

    def _users_factors(self, user_id: str) -> models.QuerySet[SecondFactor]:
        return SecondFactor.objects.using(self.using).filter(user_id=user_id)

    def create_second_factor(
        self, factor: SecondFactorRecord | Mapping[str, object]
    ) -> SecondFactorRecord:
        """Store a new factor, unconfirmed whatever the record says."""
        record = _given(as_second_factor(factor), "second factor")
        obj = SecondFactor(
            user_id=record.user_id, kind=record.kind, secret=record.secret, name=record.name[:100]
        )
        obj.save(using=self._write_db(SecondFactor), force_insert=True)
        return self._factor_record(obj)

    def list_second_factors(self, user_id: str) -> list[SecondFactorRecord]:
        """The user's factors, oldest first (empty for an unknown user)."""
        try:
            return [self._factor_record(obj) for obj in self._users_factors(user_id).order_by("pk")]
        except (ValueError, TypeError):
            return []

    def confirm_second_factor(self, user_id: str, factor_id: str, step: int) -> bool:
        """One conditional ``UPDATE``: only an unconfirmed factor of the user's is confirmed."""
        try:
            changed = (
                self._users_factors(user_id)
                .filter(pk=factor_id, confirmed=False)
                .update(confirmed=True, last_step=step, last_used_at=timezone.now())
            )
        except (ValueError, TypeError):
            return False
        return changed == 1

    def delete_second_factor(self, user_id: str, factor_id: str) -> bool:
        """Delete the user's factor; ``False`` when it is not the user's."""
        try:
            return self._users_factors(user_id).filter(pk=factor_id).delete()[0] > 0
        except (ValueError, TypeError):
            return False

    def use_totp_step(self, factor_id: str, step: int) -> bool:
        """``UPDATE ... SET last_step = step WHERE id = ... AND (last_step IS NULL OR
        last_step < step)``: the database compares and writes in one statement, so
        of concurrent requests with the same code exactly one changes the row."""
        try:
            rows = SecondFactor.objects.using(self.using).filter(pk=factor_id, confirmed=True)
            changed = rows.filter(Q(last_step__isnull=True) | Q(last_step__lt=step)).update(
                last_step=step, last_used_at=timezone.now()
            )
        except (ValueError, TypeError):
            return False
        return changed == 1

    def touch_second_factor(self, factor_id: str) -> bool:
        """Set a confirmed factor's ``last_used_at``; ``False`` when there is none such."""
        try:
            rows = SecondFactor.objects.using(self.using).filter(pk=factor_id, confirmed=True)
            return rows.update(last_used_at=timezone.now()) == 1
        except (ValueError, TypeError):
            return False

    def replace_recovery_codes(self, user_id: str, code_hashes: Sequence[str]) -> None:
        """Delete the user's codes and store the new ones, in one transaction."""
        alias = self._write_db(RecoveryCode)
        with transaction.atomic(using=alias):
            RecoveryCode.objects.using(alias).filter(user_id=user_id).delete()
            RecoveryCode.objects.using(alias).bulk_create(
                [RecoveryCode(user_id=user_id, code_hash=h) for h in dict.fromkeys(code_hashes)]
            )

    def use_recovery_code(self, user_id: str, code_hash: str) -> bool:
        """``UPDATE ... SET used_at = now WHERE user = ... AND code_hash = ... AND used_at IS
        NULL``: one statement, so a code is spent by exactly one of racing requests."""
        if not isinstance(code_hash, str):
            return False
        try:
            rows = RecoveryCode.objects.using(self.using).filter(
                user_id=user_id, code_hash=code_hash, used_at__isnull=True
            )
            return rows.update(used_at=timezone.now()) == 1
        except (ValueError, TypeError):
            return False

    def count_recovery_codes(self, user_id: str) -> int:
        """The user's unused codes."""
        try:
            rows = RecoveryCode.objects.using(self.using).filter(user_id=user_id)
            return rows.filter(used_at__isnull=True).count()
        except (ValueError, TypeError):
            return 0

    # -- trusted browsers (webauth.mfa, mfa.trust_days) ----------------------------------
    def _browser_record(self, obj: TrustedBrowser) -> TrustedBrowserRecord:
        return TrustedBrowserRecord(
            id=str(obj.pk),
            user_id=str(obj.user_id),
            token_hash=obj.token_hash,
            expires=obj.expires,
            user_agent=obj.user_agent,
            created_at=obj.created_at,
            last_used_at=obj.last_used_at,
        )

    def create_trusted_browser(
        self, browser: TrustedBrowserRecord | Mapping[str, object]
    ) -> TrustedBrowserRecord:
        """Store a trusted browser (its token's hash)."""
        record = _given(as_trusted_browser(browser), "trusted browser")
        obj = TrustedBrowser(
            user_id=record.user_id,
            token_hash=record.token_hash,
            user_agent=(record.user_agent or "")[:512],
            expires=aware(record.expires),
        )
        obj.save(using=self._write_db(TrustedBrowser), force_insert=True)
        return self._browser_record(obj)

    def use_trusted_browser(self, user_id: str, token_hash: str) -> TrustedBrowserRecord | None:
        """The user's unexpired browser with this token hash, its last use set to now."""
        if not isinstance(token_hash, str):
            return None
        now = timezone.now()
        try:
            rows = TrustedBrowser.objects.using(self.using).filter(
                user_id=user_id, token_hash=token_hash, expires__gt=now
            )
            obj = rows.first()
        except (ValueError, TypeError):
            return None
        if obj is None:
            return None
        rows.update(last_used_at=now)
        obj.last_used_at = now
        return self._browser_record(obj)

    def list_trusted_browsers(self, user_id: str) -> list[TrustedBrowserRecord]:
        """The user's unexpired trusted browsers, newest first."""
        try:
            rows = TrustedBrowser.objects.using(self.using).filter(
                user_id=user_id, expires__gt=timezone.now()
            )
            return [self._browser_record(obj) for obj in rows.order_by("-created_at", "-pk")]
        except (ValueError, TypeError):
            return []

    def delete_trusted_browser(self, user_id: str, browser_id: str) -> bool:
        """Forget one of the user's trusted browsers."""
        try:
            rows = TrustedBrowser.objects.using(self.using).filter(user_id=user_id, pk=browser_id)
            return rows.delete()[0] > 0
        except (ValueError, TypeError):
            return False

    def delete_trusted_browsers(self, user_id: str) -> int:
        """Forget all the user's trusted browsers."""
        try:
            rows = TrustedBrowser.objects.using(self.using).filter(user_id=user_id)
            return int(rows.delete()[0])
        except (ValueError, TypeError):
            return 0

    # -- API keys (webauth.api_keys) ------------------------------------------------------
    @staticmethod
    def _key_record(obj: ApiKey) -> ApiKeyRecord:
        return ApiKeyRecord(
            key_id=obj.key_id,
            user_id="" if obj.user_id is None else str(obj.user_id),
            name=obj.name,
            secret_hash=obj.secret_hash,
            scopes=list(obj.scopes or ()),
            created_at=obj.created_at,
            expires=obj.expires,
            last_used_at=obj.last_used_at,
            revoked_at=obj.revoked_at,
            owner=obj.owner,
        )

    @staticmethod
    def _key_holder(user_id: str, owner: str) -> dict[str, object]:
        """The filter of one holder's keys: a user's (``owner=""``) or an owner's."""
        return (
            {"user__isnull": True, "owner": owner} if owner else {"user_id": user_id, "owner": ""}
        )

    def create_api_key(
        self, key: ApiKeyRecord | Mapping[str, object], max_keys: int
    ) -> ApiKeyRecord | None:
        """Store a new key, unless its user holds *max_keys* live keys already (``None``).

        The count and the insert run in one transaction with the user's row
        (an owner's key: the owner's row) locked (PostgreSQL and MariaDB), so two
        at once cannot both pass it.
        """
        record = _given(as_api_key(key), "API key")
        db = self._write_db(ApiKey)
        now = timezone.now()
        with transaction.atomic(using=db):
            if record.owner:
                label, _, pk = record.owner.partition(":")
                holders = apps.get_model(label)._default_manager.using(db).filter(pk=pk)
            else:
                holders = self._users().using(db).filter(pk=record.user_id)
            list(holders.select_for_update().values("pk"))
            live = ApiKey.objects.using(db).filter(
                Q(expires__isnull=True) | Q(expires__gt=now),
                revoked_at__isnull=True,
                **self._key_holder(record.user_id, record.owner),
            )
            if live.count() >= max_keys:
                return None
            obj = ApiKey(
                user_id=None if record.owner else record.user_id,
                owner=record.owner,
                name=record.name[:100],
                key_id=record.key_id,
                secret_hash=record.secret_hash,
                scopes=list(record.scopes),
                expires=aware(record.expires) if record.expires is not None else None,
            )
            obj.save(using=db, force_insert=True)
        return self._key_record(obj)

    def get_api_key(self, key_id: str) -> tuple[ApiKeyRecord, Any] | None:
        """The key with this id and its user (the ``AUTH_USER_MODEL`` instance; ``None`` for an
        owner's key), in one query."""
        if not isinstance(key_id, str):
            return None
        alias = self.using or router.db_for_read(ApiKey)
        lookup = _api_key_lookup(alias, settings.AUTH_USER_MODEL)
        if lookup is not None:
            obj = lookup.fetch(key_id)  # compiled once: the compilation costs more than the query
        else:
            obj = ApiKey.objects.using(alias).select_related("user").filter(key_id=key_id).first()
        if obj is None:
            return None
        return self._key_record(obj), obj.user

    def list_api_keys(self, user_id: str, *, owner: str = "") -> list[ApiKeyRecord]:
        """The user's (or *owner*'s) keys, newest first (revoked and expired ones too), at
        most 200."""
        try:
            rows = (
                ApiKey.objects.using(self.using)
                .filter(**self._key_holder(user_id, owner))
                .order_by("-created_at")
            )
            return [self._key_record(obj) for obj in rows[:200]]
        except (ValueError, TypeError):
            return []

    def revoke_api_key(self, user_id: str, key_id: str, *, owner: str = "") -> bool:
        """Revoke the user's (or *owner*'s) key; ``False`` when it is not theirs or is
        revoked already."""
        try:
            done = (
                ApiKey.objects.using(self._write_db(ApiKey))
                .filter(key_id=key_id, revoked_at__isnull=True, **self._key_holder(user_id, owner))
                .update(revoked_at=timezone.now())
            )
        except (ValueError, TypeError):
            return False
        return bool(done)

    def delete_owner_api_keys(self, owner: str) -> int:
        """Delete the keys of *owner* (a project-defined owner whose row was deleted)."""
        deleted, _ = ApiKey.objects.using(self._write_db(ApiKey)).filter(owner=owner).delete()
        return deleted

    def touch_api_key(self, key_id: str, now: datetime, every: float) -> None:
        """Set the key's last use to *now* unless it was set less than *every* seconds ago."""
        ApiKey.objects.using(self._write_db(ApiKey)).filter(key_id=key_id).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - timedelta(seconds=every))
        ).update(last_used_at=now)

    # -- the sessions access tokens were minted for (webauth.tokens.ended) -------------
    def register_token_session(self, sid: str, user_id: str, expires: datetime) -> bool:
        """Keep session *sid* noted at least until *expires*; ``False`` once it has ended.

        One ``SELECT`` for a session noted until then already (no write: a commit
        costs more than the rest of a mint), an ``UPDATE`` when the expiry must
        move, an ``INSERT`` for its first token; two at once for a new session
        both succeed (the loser of the insert moves the expiry as the first would).
        """
        db = self._write_db(TokenSession)
        rows = TokenSession.objects.using(db)
        until = aware(expires)
        lookup = _token_session_lookup(db)
        found = (
            lookup.row(sid)  # compiled once: the compilation costs more than the query
            if lookup is not None
            else rows.filter(sid=sid).values_list("expires", "ended", "minted").first()
        )
        if found is not None:
            stored, ended, minted = found
            if ended is not None:
                return False
            if minted and stored >= until:
                return True
            return bool(rows.filter(sid=sid, ended__isnull=True).update(expires=until, minted=True))
        try:
            with transaction.atomic(using=db):
                TokenSession(sid=sid, user_id=user_id, expires=until, minted=True).save(
                    using=db, force_insert=True
                )
        except IntegrityError:  # noted meanwhile, or ended: the row says which
            return bool(rows.filter(sid=sid, ended__isnull=True).update(expires=until))
        return True

    def end_token_session(self, sid: str, user_id: str, expires: datetime | None) -> bool:
        """End session *sid*; ``True`` if a token had been minted for it and it was live.

        A session no token was minted for is kept as ended until *expires* (when
        its cookie would have), so that none is minted for it later; with
        *expires* ``None`` it is not kept.
        """
        db = self._write_db(TokenSession)
        rows = TokenSession.objects.using(db)
        now = timezone.now()
        if rows.filter(sid=sid, ended__isnull=True).update(ended=now):
            return True
        if expires is None or rows.filter(sid=sid).exists():
            return False  # ended already, or not to be kept
        try:
            with transaction.atomic(using=db):
                TokenSession(sid=sid, user_id=user_id, expires=aware(expires), ended=now).save(
                    using=db, force_insert=True
                )
        except IntegrityError:  # its first token meanwhile: end that
            return bool(rows.filter(sid=sid, ended__isnull=True).update(ended=now))
        return False

    def end_user_token_sessions(self, user_id: str, keep_sid: str | None = None) -> list[str]:
        """End every live session of *user_id* that tokens were minted for, but *keep_sid*.

        Returns the ids it ended.
        """
        db = self._write_db(TokenSession)
        live = TokenSession.objects.using(db).filter(user_id=user_id, ended__isnull=True)
        if keep_sid:
            live = live.exclude(sid=keep_sid)
        sids = list(live.values_list("sid", flat=True))
        if sids:
            TokenSession.objects.using(db).filter(sid__in=sids, ended__isnull=True).update(
                ended=timezone.now()
            )
        return sids

    def list_ended_token_sessions(
        self, since: datetime, limit: int, after_sid: str | None = None
    ) -> list[tuple[str, datetime]]:
        """``(sid, ended)`` of sessions with tokens that ended at or after *since*.

        Ordered by the time and then the sid; with *after_sid*, those at *since*
        itself start after that sid (where a full answer stopped).
        """
        since = aware(since)
        rows = TokenSession.objects.using(self.using).filter(ended__gte=since, minted=True)
        if after_sid is not None:
            rows = rows.exclude(ended=since, sid__lte=after_sid)
        listed = rows.order_by("ended", "sid").values_list("sid", "ended")[: max(0, limit)]
        return [(str(sid), ended) for sid, ended in listed if ended is not None]

    # -- WebAuthn challenges and user handles ---------------------------------------
    def create_webauthn_challenge(
        self, challenge: WebAuthnChallengeRecord | Mapping[str, object]
    ) -> WebAuthnChallengeRecord:
        """Store the challenge under its hash, with the hash of the browser binding."""
        record = _given(as_webauthn_challenge(challenge), "challenge")
        if record.ceremony not in ("register", "authenticate", "mfa-register", "mfa-authenticate"):
            raise ValueError(f"unknown WebAuthn ceremony {record.ceremony!r}")
        WebAuthnChallenge(
            challenge_hash=token_hash(record.challenge),
            ceremony=record.ceremony,
            binding_hash=token_hash(record.binding),
            user_data=record.user_data,
            expires=aware(record.expires),
        ).save(using=self._write_db(WebAuthnChallenge), force_insert=True)
        return record

    def use_webauthn_challenge(
        self, challenge: str, ceremony: str, binding: str
    ) -> WebAuthnChallengeRecord | None:
        """Delete and return the challenge if it is live and matches; one caller gets it.

        The row is found by the challenge's hash and checked (ceremony, the
        binding's hash in constant time, expiry) before anything is deleted: a
        caller without the browser's binding spends nothing. Then it is deleted
        by primary key, and only the caller whose ``DELETE`` removed it gets it.
        Read and delete go to the database that writes (a replica might not have
        the challenge yet, or still have it after it was used).
        """
        if not (isinstance(challenge, str) and isinstance(binding, str)):
            return None
        alias = self._write_db(WebAuthnChallenge)
        rows = WebAuthnChallenge.objects.using(alias)
        obj = rows.filter(challenge_hash=token_hash(challenge)).first()
        if obj is None or obj.ceremony != ceremony or obj.expires <= timezone.now():
            return None
        if not hmac.compare_digest(obj.binding_hash, token_hash(binding)):
            return None
        if not rows.filter(pk=obj.pk).delete()[0]:
            return None  # another caller used it first
        return WebAuthnChallengeRecord(
            challenge=challenge,
            ceremony=obj.ceremony,
            binding=binding,
            user_data=obj.user_data,
            expires=obj.expires,
        )

    def get_user_handle(
        self, user_id: str, create: bool = True, handle: str | None = None
    ) -> str | None:
        """The user's WebAuthn user handle, made on first use when *create* is true.

        A new handle is *handle* when given, else :func:`webauth.models.new_user_handle`.
        Two callers making the user's first handle at once: the unique user
        column refuses the second insert, which then reads the first's handle.
        ``None`` for an unknown user, or without *create* for a user without one.
        """
        if handle is not None and not (isinstance(handle, str) and 0 < len(handle) <= 86):
            raise ValueError("a WebAuthn user handle is 1 to 86 characters")
        alias = self._write_db(WebAuthnUserHandle)
        rows = WebAuthnUserHandle.objects.using(alias)
        try:
            found = rows.filter(user_id=user_id).values_list("handle", flat=True).first()
            if found is not None or not create:
                return found
            if not self._users().filter(pk=user_id).exists():
                return None
        except (TypeError, ValueError):  # not a user id at all
            return None
        new = handle or new_user_handle()
        try:
            with transaction.atomic(using=alias):
                rows.create(user_id=user_id, handle=new)
        except IntegrityError:
            found = rows.filter(user_id=user_id).values_list("handle", flat=True).first()
            if found is None:  # not the user's row that was in the way: the handle's
                raise
            return found
        return new

    def update_authenticator_backup_state(self, credential_id: str, backed_up: bool) -> None:
        """Store the passkey's current backup state (one ``UPDATE``)."""
        obj = self._authenticator(credential_id)
        if obj is not None:
            Authenticator.objects.using(self._write_db(Authenticator)).filter(pk=obj.pk).update(
                credential_backed_up=bool(backed_up)
            )

    # -- addresses nobody has proven yet -----------------------------------------
    def mark_email_unproven(self, user_id: str) -> None:
        """Mark a user made by a passkey registration: its address is unproven.

        One ``INSERT`` that a mark already there leaves alone (``ON CONFLICT DO
        NOTHING``, ``INSERT IGNORE``, ``INSERT OR IGNORE``): no read first, so
        on SQLite it queues for the write lock like any write instead of being
        refused at once, as a read-then-write transaction is under contention.
        """
        alias = self._write_db(UnprovenEmail)
        UnprovenEmail.objects.using(alias).bulk_create(
            [UnprovenEmail(user_id=user_id)], ignore_conflicts=True
        )

    def prove_email(self, user_id: str, keep_provider: str, keep_provider_account_id: str) -> bool:
        """Take the unproven mark away; ``True`` when there was one (then the ways in went).

        The mark's ``DELETE`` decides: of concurrent callers exactly one removes
        the row. That caller, in the same transaction, removes the user's
        passkeys, every linked account except the one given (the account the
        owner just proved the address with, when there is one), a usable password
        (a new unusable one changes the session auth hash, which ends the JWT
        sessions) and the database sessions. Without a mark, one indexed
        ``DELETE`` that removes nothing.
        """
        alias = self._write_db(UnprovenEmail)
        with transaction.atomic(using=alias):
            if not UnprovenEmail.objects.using(alias).filter(user_id=user_id).delete()[0]:
                return False
            Authenticator.objects.using(alias).filter(user_id=user_id).delete()
            accounts = Account.objects.using(alias).filter(user_id=user_id)
            kept = [
                pk
                for pk, provider, account_id in accounts.values_list(
                    "pk", "provider", "provider_account_id"
                )
                if provider == keep_provider and account_id == keep_provider_account_id
            ]
            accounts.exclude(pk__in=kept).delete()
            Session.objects.using(alias).filter(user_id=user_id).delete()
            user = self._users().filter(pk=user_id).first()
            if user is not None and callable(getattr(user, "set_unusable_password", None)):
                user.set_unusable_password()
                user.save(update_fields=["password"])
        return True

    def forget_unproven_email(self, user_id: str) -> bool:
        """Delete the user's unproven mark, if any (one indexed ``DELETE``)."""
        alias = self._write_db(UnprovenEmail)
        return bool(UnprovenEmail.objects.using(alias).filter(user_id=user_id).delete()[0])

    def get_user_by_handle(self, handle: str) -> AdapterUser | None:
        """The user with this handle (one joined query; the handle compared exactly)."""
        if not isinstance(handle, str) or not handle:
            return None
        obj = (
            WebAuthnUserHandle.objects.using(self.using)
            .select_related("user")
            .filter(handle=handle)
            .first()
        )
        # A case-insensitive collation (MariaDB, MySQL) matches "AbC" to "abc".
        if obj is None or obj.handle != handle:
            return None
        return self.to_record(obj.user)
