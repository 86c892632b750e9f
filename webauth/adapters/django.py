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

Tokens are stored hashed (:func:`webauth.models.token_hash`).
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.db import router, transaction
from django.utils import timezone

from ..fastquery import PLACEHOLDER, CompiledLookup, user_by_pk
from ..models import (
    Account,
    Authenticator,
    Session,
    VerificationToken,
    credential_id_hash,
    token_hash,
)
from ..types import (
    ACCOUNT_TOKEN_FIELDS,
    AdapterAccount,
    AdapterAuthenticator,
    AdapterSession,
    AdapterUser,
    as_account,
    as_authenticator,
    as_session,
    as_user,
    as_verification_token,
)
from ..types import VerificationToken as VerificationTokenRecord

__all__ = ["DjangoAdapter"]


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


def _aware(value: datetime) -> datetime:
    return value if timezone.is_aware(value) else timezone.make_aware(value, UTC)


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


class DjangoAdapter:
    """Stores users, accounts, sessions, verification tokens and passkeys with the ORM.

    Implements all 19 methods of :class:`webauth.adapters.base.Adapter`.
    ``using`` selects a database alias other than the router's choice.
    """

    def __init__(self, using: str | None = None) -> None:
        self.using = using

    # -- users ------------------------------------------------------------------
    @property
    def user_model(self) -> Any:
        """``settings.AUTH_USER_MODEL``."""
        return get_user_model()

    def _has_field(self, name: str) -> bool:
        try:
            self.user_model._meta.get_field(name)
        except FieldDoesNotExist:
            return False
        return True

    def _users(self) -> Any:
        manager = self.user_model._default_manager
        return manager.db_manager(self.using) if self.using else manager

    def to_record(self, user: Any) -> AdapterUser:
        """The :class:`AdapterUser` for a user model instance (keeping the instance)."""
        model = type(user)
        email = getattr(user, model.get_email_field_name(), None) or None
        if self._has_field("name"):
            name = user.name or None
        elif callable(getattr(user, "get_full_name", None)):
            # As for JWT sessions (webauth.utils.user_to_dict): the username stands in.
            name = user.get_full_name() or user.get_username() or None
        else:
            name = None
        return AdapterUser(
            id=str(user.pk),
            email=email,
            email_verified=getattr(user, "email_verified", None),
            name=name,
            image=getattr(user, "image", None) or None,
            instance=user,
        )

    def _apply(self, obj: Any, data: AdapterUser | Mapping[str, Any], fields: set[str]) -> None:
        """Copy the given AdapterUser fields onto a model instance."""
        record = as_user({"id": "", **data}) if isinstance(data, Mapping) else data
        assert record is not None
        model = self.user_model
        if "email" in fields:
            value = model.objects.normalize_email(record.email) if record.email else None
            email_field = model.get_email_field_name()
            field = model._meta.get_field(email_field)
            setattr(obj, email_field, value if value or field.null else "")
        if "name" in fields:
            if self._has_field("name"):
                obj.name = record.name or ""
            elif self._has_field("first_name"):
                first, _, last = (record.name or "").partition(" ")
                obj.first_name = first[:150]
                if self._has_field("last_name"):
                    obj.last_name = last[:150]
        if "image" in fields and self._has_field("image"):
            obj.image = record.image or ""
        if "email_verified" in fields and self._has_field("email_verified"):
            obj.email_verified = record.email_verified

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

    def create_user(self, user: AdapterUser | Mapping[str, Any]) -> AdapterUser:
        """Create a user from an ``AdapterUser``; its ``id`` is ignored (the database picks it)."""
        record = as_user({"id": "", **user}) if isinstance(user, Mapping) else user
        assert record is not None
        model = self.user_model
        obj = model()
        self._apply(obj, record, {"email", "name", "image", "email_verified"})
        if model.get_email_field_name() != model.USERNAME_FIELD:
            setattr(obj, model.USERNAME_FIELD, self._unique_username(record))
        obj.set_unusable_password()
        obj.save(using=self.using)
        return self.to_record(obj)

    def get_user(self, id: str) -> AdapterUser | None:
        """The user with this primary key."""
        obj = user_by_pk(id, self.using)  # compiled once: JWT sessions call this per request
        return self.to_record(obj) if obj is not None else None

    def get_user_by_email(self, email: str) -> AdapterUser | None:
        """The user with this email (case-insensitive)."""
        if not email:
            return None
        field = self.user_model.get_email_field_name()
        obj = self._users().filter(**{f"{field}__iexact": email}).order_by("pk").first()
        return self.to_record(obj) if obj is not None else None

    def get_user_by_account(self, provider: str, provider_account_id: str) -> AdapterUser | None:
        """The user linked to this provider account (one joined query)."""
        account = (
            Account.objects.using(self.using)
            .select_related("user")
            .filter(provider=provider, provider_account_id=provider_account_id)
            .first()
        )
        account = _exact_account(account, provider_account_id)
        return self.to_record(account.user) if account is not None else None

    def update_user(self, user: AdapterUser | Mapping[str, Any]) -> AdapterUser:
        """Apply the given fields (``id`` required); raises if the user does not exist."""
        if isinstance(user, Mapping):
            data = {k: v for k, v in user.items()}
            fields = {"email_verified" if k == "emailVerified" else k for k in data} - {"id"}
            user_id = data["id"]
        else:
            fields = {"email", "name", "image", "email_verified"}
            user_id = user.id
        obj = self._users().get(pk=user_id)
        self._apply(obj, user, fields)
        obj.save(using=self.using)
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
        return AdapterAccount(
            user_id=str(obj.user_id),
            type=obj.type,
            provider=obj.provider,
            provider_account_id=obj.provider_account_id,
            **{name: getattr(obj, name) for name in ACCOUNT_TOKEN_FIELDS},
            extra=dict(obj.extra or {}),
        )

    def link_account(self, account: AdapterAccount | Mapping[str, Any]) -> AdapterAccount:
        """Store a provider account; raises ``IntegrityError`` if it is already linked."""
        record = as_account(account)
        assert record is not None
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

    def update_account(self, account: AdapterAccount | Mapping[str, Any]) -> AdapterAccount | None:
        """Replace the stored tokens of an account (webauth extension, used on re-sign-in)."""
        record = as_account(account)
        assert record is not None
        obj = (
            Account.objects.using(self.using)
            .filter(provider=record.provider, provider_account_id=record.provider_account_id)
            .first()
        )
        obj = _exact_account(obj, record.provider_account_id)
        if obj is None:
            return None
        for name in ACCOUNT_TOKEN_FIELDS:
            setattr(obj, name, getattr(record, name))
        obj.extra = record.extra
        obj.save(using=self.using)
        return self._account_record(obj)

    def unlink_account(self, provider: str, provider_account_id: str) -> AdapterAccount | None:
        """Remove the account; returns it, or ``None`` if there was none."""
        obj = (
            Account.objects.using(self.using)
            .filter(provider=provider, provider_account_id=provider_account_id)
            .first()
        )
        obj = _exact_account(obj, provider_account_id)
        if obj is None:
            return None
        record = self._account_record(obj)
        obj.delete()
        return record

    def get_account(self, provider_account_id: str, provider: str) -> AdapterAccount | None:
        """The account, or ``None``."""
        obj = (
            Account.objects.using(self.using)
            .filter(provider=provider, provider_account_id=provider_account_id)
            .first()
        )
        obj = _exact_account(obj, provider_account_id)
        return self._account_record(obj) if obj is not None else None

    def create_user_and_link_account(
        self, user: AdapterUser | Mapping[str, Any], account: AdapterAccount | Mapping[str, Any]
    ) -> tuple[AdapterUser, AdapterAccount]:
        """Create a user and link its first account in one transaction: both or neither."""
        with transaction.atomic(using=self.using):
            created = self.create_user(user)
            record = as_account(account)
            assert record is not None
            record.user_id = created.id
            linked = self.link_account(record)
        return created, linked

    # -- sessions ---------------------------------------------------------------
    def _session_record(self, obj: Session, session_token: str) -> AdapterSession:
        return AdapterSession(
            session_token=session_token,
            user_id=str(obj.user_id),
            expires=obj.expires,
            user_agent=obj.user_agent or None,
            ip_address=obj.ip_address,
        )

    def create_session(self, session: AdapterSession | Mapping[str, Any]) -> AdapterSession:
        """Store a session under the hash of its token."""
        record = as_session(session)
        assert record is not None
        now = timezone.now()
        obj = Session(
            user_id=record.user_id,
            token_hash=token_hash(record.session_token),
            expires=_aware(record.expires),
            created_at=now,
            updated_at=now,
            user_agent=(record.user_agent or "")[:512],
            ip_address=_valid_ip(record.ip_address),
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
        """Set a new ``expires`` (the only field a session update carries)."""
        if isinstance(session, Mapping):
            token = session.get("session_token") or session.get("sessionToken")
            expires = session.get("expires")
            user_id = session.get("user_id") or session.get("userId")
        else:
            token, expires, user_id = session.session_token, session.expires, session.user_id
        if not token:
            raise ValueError("update_session needs session_token")
        rows = Session.objects.using(self.using).filter(token_hash=token_hash(token))
        if expires is not None:
            if not rows.update(expires=_aware(expires), updated_at=timezone.now()):
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

    # -- verification tokens ------------------------------------------------------
    def create_verification_token(
        self, token: VerificationTokenRecord | Mapping[str, Any]
    ) -> VerificationTokenRecord:
        """Store the token's hash."""
        record = as_verification_token(token)
        assert record is not None
        VerificationToken.objects.using(self.using).create(
            identifier=record.identifier,
            token_hash=token_hash(record.token),
            expires=_aware(record.expires),
        )
        return record

    def use_verification_token(self, identifier: str, token: str) -> VerificationTokenRecord | None:
        """Return the token and delete it; of concurrent callers exactly one gets it.

        The row is read, then deleted by primary key; only the caller whose DELETE
        removed the row (row count 1) wins. No lock is held between the two.
        """
        rows = VerificationToken.objects.using(self.using).filter(
            identifier=identifier, token_hash=token_hash(token)
        )
        obj = rows.first()
        if obj is None:
            return None
        deleted, _ = VerificationToken.objects.using(self.using).filter(pk=obj.pk).delete()
        if not deleted:
            return None
        return VerificationTokenRecord(identifier=identifier, token=token, expires=obj.expires)

    # -- authenticators -----------------------------------------------------------
    def _authenticator_record(self, obj: Authenticator) -> AdapterAuthenticator:
        return AdapterAuthenticator(
            credential_id=obj.credential_id,
            user_id=str(obj.user_id),
            provider_account_id=obj.provider_account_id,
            credential_public_key=obj.credential_public_key,
            counter=obj.counter,
            credential_backed_up=obj.credential_backed_up,
            credential_device_type=obj.credential_device_type,
            transports=obj.transports,
        )

    def _authenticator(self, credential_id: str) -> Authenticator | None:
        """The row of this exact credential id, found through its hash.

        The unique ``credential_id_hash`` index finds the row; the full id is then
        compared in Python, exactly (SQL would compare it under the column's
        collation, case-insensitive on most MariaDB and MySQL databases).
        """
        obj = (
            Authenticator.objects.using(self.using)
            .filter(credential_id_hash=credential_id_hash(credential_id))
            .first()
        )
        return obj if obj is not None and obj.credential_id == credential_id else None

    def create_authenticator(
        self, authenticator: AdapterAuthenticator | Mapping[str, Any]
    ) -> AdapterAuthenticator:
        """Store a credential; raises ``IntegrityError`` for a duplicate credential id.

        The unique index on ``credential_id_hash`` refuses the duplicate.
        """
        record = as_authenticator(authenticator)
        assert record is not None
        obj = Authenticator(
            user_id=record.user_id,
            credential_id=record.credential_id,
            credential_id_hash=credential_id_hash(record.credential_id),
            provider_account_id=record.provider_account_id,
            credential_public_key=record.credential_public_key,
            counter=record.counter,
            credential_backed_up=record.credential_backed_up,
            credential_device_type=record.credential_device_type,
            transports=record.transports,
        )
        with transaction.atomic(using=self.using):
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
    ) -> AdapterAuthenticator:
        """Store the new signature counter; raises ``LookupError`` for an unknown id."""
        obj = self._authenticator(credential_id)
        now = timezone.now()
        if obj is None or not Authenticator.objects.using(self.using).filter(pk=obj.pk).update(
            counter=new_counter, last_used_at=now
        ):
            raise LookupError(f"no authenticator with credential id {credential_id[:64]!r}")
        obj.counter, obj.last_used_at = new_counter, now
        return self._authenticator_record(obj)
