"""The tables of the Django ORM adapter.

``Account``, ``Session``, ``VerificationToken`` and ``Authenticator`` belong to
``settings.AUTH_USER_MODEL``. :class:`User` is an optional ready-made user model
with every ``AdapterUser`` field; it exists only in projects that set
``AUTH_USER_MODEL = "webauth.User"`` (it is swappable, like ``auth.User``).

Secrets are stored hashed: a database session is found by the SHA-256 of its
token, a verification token (link and code) by the SHA-256 of the value the flow
hands over.
A passkey is found by the SHA-256 of its credential id (``credential_id_hash``):
a fixed-length column that every backend can index uniquely, where the id itself
(up to 1400 characters) cannot be on MySQL, and whose comparison is
case-sensitive under any collation. A WebAuthn challenge is found by the
SHA-256 of the challenge, and the browser binding it to one browser is kept as
a SHA-256 too.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any, ClassVar

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .fields import ExactCharField, ExactEmailField
from .identity import canonical_email_or_none

__all__ = [
    "Account",
    "ApiKey",
    "Authenticator",
    "RecoveryCode",
    "SecondFactor",
    "Session",
    "TokenSession",
    "TrustedBrowser",
    "UnprovenEmail",
    "User",
    "UserManager",
    "VerificationToken",
    "WebAuthnChallenge",
    "WebAuthnUserHandle",
    "credential_id_hash",
    "new_user_handle",
    "token_hash",
]


def token_hash(value: str) -> str:
    """The hex SHA-256 under which a session or verification token is stored."""
    return hashlib.sha256(value.encode()).hexdigest()


def credential_id_hash(credential_id: str) -> str:
    """The hex SHA-256 of a WebAuthn credential id: ``Authenticator.credential_id_hash``."""
    return hashlib.sha256(credential_id.encode()).hexdigest()


def new_user_handle() -> str:
    """A new WebAuthn user handle: base64url (unpadded) of 64 random bytes, 86 characters.

    64 bytes is the most WebAuthn allows for ``user.id``; being random, the handle
    says nothing about the user, unlike a primary key.
    """
    return base64.urlsafe_b64encode(secrets.token_bytes(64)).rstrip(b"=").decode()


def _users(related_name: str, *, one: bool = False, **options: Any) -> Any:
    """The ``user`` of a row that belongs to one user (a ``OneToOneField`` with *one*),
    deleted with the user."""
    field = models.OneToOneField if one else models.ForeignKey
    return field(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name=related_name,
        verbose_name=_("user"),
        **options,
    )


class UserManager(BaseUserManager["User"]):
    """Creates users identified by email address, stored in webauth's canonical form."""

    use_in_migrations = True

    @classmethod
    def normalize_email(cls, email: str | None) -> str:
        """The canonical form (:func:`webauth.identity.canonical_email`) of a valid address.

        What it does not accept as an address is left to Django's own rule
        (the domain lower-cased): such a user signs in by password only.
        """
        return canonical_email_or_none(email) or super().normalize_email(email)

    def get_by_natural_key(self, username: str | None) -> User:
        """The user whose address is *username*'s canonical form (``ModelBackend`` asks this).

        So ``Alice@Example.COM`` typed into a password form finds
        ``alice@example.com`` on every database, and nothing else does.
        """
        if isinstance(username, str):
            username = canonical_email_or_none(username) or username
        return self.get(**{self.model.USERNAME_FIELD: username})

    def _create(self, email: str | None, password: str | None, **fields: Any) -> User:
        user = self.model(email=self.normalize_email(email) if email else None, **fields)
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save(using=self._db)
        return user

    def create_user(
        self, email: str | None = None, password: str | None = None, **fields: Any
    ) -> User:
        """A regular user; without a password the user can sign in only through providers."""
        fields.setdefault("is_staff", False)
        fields.setdefault("is_superuser", False)
        return self._create(email, password, **fields)

    def create_superuser(self, email: str, password: str | None = None, **fields: Any) -> User:
        """A staff superuser (used by ``createsuperuser``)."""
        fields.update(is_staff=True, is_superuser=True)
        return self._create(email, password, **fields)


class User(AbstractBaseUser, PermissionsMixin):
    """A user model with every ``AdapterUser`` field, identified by email.

    Recommended for new projects: ``AUTH_USER_MODEL = "webauth.User"``.
    """

    # Canonical (webauth.identity.canonical_email) and compared exactly on every database.
    email = ExactEmailField(_("email address"), unique=True, null=True, blank=True)
    email_verified = models.DateTimeField(_("email verified"), null=True, blank=True)
    name = models.CharField(_("name"), max_length=255, blank=True)
    image = models.CharField(_("image URL"), max_length=2048, blank=True)
    is_active = models.BooleanField(_("active"), default=True)
    is_staff = models.BooleanField(_("staff status"), default=False)
    date_joined = models.DateTimeField(_("date joined"), default=timezone.now)

    objects: ClassVar[UserManager] = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    class Meta:
        verbose_name = _("user")
        verbose_name_plural = _("users")
        swappable = "AUTH_USER_MODEL"

    def __str__(self) -> str:
        return self.email or self.name or f"user {self.pk}"

    def clean(self) -> None:
        """Bring the address to its canonical form (the admin's forms call this)."""
        super().clean()
        self.email = type(self).objects.normalize_email(self.email) or None

    def get_full_name(self) -> str:
        """The display name."""
        return self.name

    def get_short_name(self) -> str:
        """The display name."""
        return self.name


class Account(models.Model):
    """A provider account (OAuth, OIDC, email, WebAuthn) linked to a user."""

    user = _users("webauth_accounts")
    type = models.CharField(_("type"), max_length=32)
    provider = ExactCharField(_("provider"), max_length=128)
    # Opaque and case-sensitive (an OIDC "sub"): compared exactly on every database.
    provider_account_id = ExactCharField(_("provider account id"), max_length=255)
    access_token = models.TextField(_("access token"), null=True, blank=True)
    refresh_token = models.TextField(_("refresh token"), null=True, blank=True)
    id_token = models.TextField(_("ID token"), null=True, blank=True)
    scope = models.TextField(_("scope"), null=True, blank=True)
    token_type = models.CharField(_("token type"), max_length=64, null=True, blank=True)
    expires_at = models.BigIntegerField(_("expires at"), null=True, blank=True)
    session_state = models.TextField(_("session state"), null=True, blank=True)
    extra = models.JSONField(_("other fields"), default=dict, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("account")
        verbose_name_plural = _("accounts")
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["provider", "provider_account_id"],
                name="webauth_account_provider_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.provider_account_id}"


class Session(models.Model):
    """A database session; the cookie holds the token, the table its SHA-256.

    ``created_at`` is the sign-in (``session.absolute_max_age`` counts from it).
    """

    # The (user, expires) index serves lookups by user.
    user = _users("webauth_sessions", db_index=False)
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True, editable=False)
    expires = models.DateTimeField(_("expires"), db_index=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    updated_at = models.DateTimeField(_("last extended"), default=timezone.now)
    user_agent = models.CharField(_("user agent"), max_length=512, blank=True)
    ip_address = models.GenericIPAddressField(_("IP address"), null=True, blank=True)
    # The user's session auth hash (an HMAC of the password hash) at sign-in: the
    # session ends when the password changes. Empty for sessions older than it.
    auth_hash = models.CharField(_("auth hash"), max_length=128, blank=True, editable=False)
    # How the user proved who they are (webauth.mfa, docs/mfa.md): the methods,
    # space-separated, and when two factors last were. Empty for older sessions.
    amr = models.CharField(_("methods"), max_length=64, blank=True, default="", editable=False)
    mfa_at = models.DateTimeField(_("second factor proven"), null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("session")
        verbose_name_plural = _("sessions")
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["user", "expires"], name="webauth_session_user_exp"),
        ]

    def __str__(self) -> str:
        return f"session {self.pk} of user {self.user_id}"


class VerificationToken(models.Model):
    """A single-use email sign-in grant: the link token and the code, stored hashed.

    One sign-in request makes one row. ``code_hash`` is empty for a link-only
    grant; ``attempts`` counts the wrong codes tried against it (the adapter
    deletes the row when they reach the provider's limit).
    """

    identifier = ExactCharField(_("identifier"), max_length=320)
    token_hash = models.CharField(_("token hash"), max_length=64, editable=False)
    code_hash = models.CharField(
        _("code hash"), max_length=64, blank=True, default="", editable=False
    )
    expires = models.DateTimeField(_("expires"), db_index=True)
    attempts = models.PositiveSmallIntegerField(_("failed code attempts"), default=0)

    class Meta:
        verbose_name = _("verification token")
        verbose_name_plural = _("verification tokens")
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["identifier", "token_hash"], name="webauth_vtoken_unique"
            )
        ]

    def __str__(self) -> str:
        return f"token for {self.identifier}"


class Authenticator(models.Model):
    """A WebAuthn credential (passkey) registered to a user."""

    user = _users("webauth_authenticators")
    # The full id; uniqueness and lookups go through its hash below.
    credential_id = ExactCharField(_("credential id"), max_length=1400)
    credential_id_hash = models.CharField(
        _("credential id hash"), max_length=64, unique=True, editable=False
    )
    provider_account_id = ExactCharField(_("provider account id"), max_length=255)
    credential_public_key = models.TextField(_("public key"))
    counter = models.BigIntegerField(_("counter"), default=0)
    credential_backed_up = models.BooleanField(_("backed up"), default=False)
    credential_device_type = models.CharField(_("device type"), max_length=32)
    transports = models.CharField(_("transports"), max_length=255, null=True, blank=True)
    name = models.CharField(_("name"), max_length=100, blank=True, default="")
    # The authenticator model's AAGUID (a UUID string); empty when unknown or all zeros.
    aaguid = models.CharField(_("AAGUID"), max_length=36, blank=True, default="")
    backup_eligible = models.BooleanField(_("backup eligible"), default=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)

    class Meta:
        verbose_name = _("passkey")
        verbose_name_plural = _("passkeys")

    def __str__(self) -> str:
        return f"passkey {self.pk} of user {self.user_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Keep ``credential_id_hash`` in step with ``credential_id``.

        ``QuerySet.update()`` and ``bulk_create()`` bypass this: set the hash
        yourself there (:func:`credential_id_hash`).
        """
        self.credential_id_hash = credential_id_hash(self.credential_id)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "credential_id" in update_fields:
            kwargs["update_fields"] = {*update_fields, "credential_id_hash"}
        super().save(*args, **kwargs)


class WebAuthnUserHandle(models.Model):
    """The opaque WebAuthn user handle of a user (``user.id`` in the browser's terms).

    One per user, made at the user's first passkey registration: the base64url
    form of 64 random bytes. Every passkey of the user carries it, so the
    browser keeps them together, and it reveals nothing (it is not the primary
    key, nor derived from it).
    """

    user = _users("webauth_user_handle", one=True)
    handle = ExactCharField(_("user handle"), max_length=86, unique=True, editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("WebAuthn user handle")
        verbose_name_plural = _("WebAuthn user handles")

    def __str__(self) -> str:
        return f"user handle of user {self.user_id}"


class UnprovenEmail(models.Model):
    """A user whose address nobody has proven yet: made by a passkey registration.

    A visitor may register a passkey under any address (as with Auth.js); the
    user made then is marked here. The first time someone proves the address
    (an email sign-in, or a provider trusted to link by email) the mark is
    taken away, and with it every way in added before: the passkeys, other
    linked accounts, a password and the sessions of whoever typed the address
    (the "pre-account hijacking" defence).
    """

    user = _users("webauth_unproven_email", one=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("unproven address")
        verbose_name_plural = _("unproven addresses")

    def __str__(self) -> str:
        return f"unproven address of user {self.user_id}"


class WebAuthnChallenge(models.Model):
    """A WebAuthn challenge waiting for its one answer, stored hashed.

    The options route makes one row; the callback deletes it as it verifies
    (whoever deletes it first gets it, so a replayed answer finds nothing).
    ``binding_hash`` ties it to the browser that asked: the SHA-256 of a random
    value that only that browser's challenge cookie holds.
    """

    CEREMONIES: ClassVar[list[tuple[str, str]]] = [
        ("register", "register"),
        ("authenticate", "authenticate"),
        # A security key as a second factor (webauth.mfa.keys): never a passkey's.
        ("mfa-register", "mfa-register"),
        ("mfa-authenticate", "mfa-authenticate"),
    ]

    challenge_hash = models.CharField(
        _("challenge hash"), max_length=64, unique=True, editable=False
    )
    ceremony = models.CharField(_("ceremony"), max_length=16, choices=CEREMONIES)
    binding_hash = models.CharField(_("binding hash"), max_length=64, editable=False)
    # Registration: the new user's email and name, or the signed-in user's id.
    user_data = models.JSONField(_("user data"), null=True, blank=True)
    expires = models.DateTimeField(_("expires"), db_index=True)

    class Meta:
        verbose_name = _("WebAuthn challenge")
        verbose_name_plural = _("WebAuthn challenges")

    def __str__(self) -> str:
        return f"{self.ceremony} challenge {self.pk}"


class SecondFactor(models.Model):
    """A user's second factor (:mod:`webauth.mfa`): a TOTP key or a security key.

    ``secret`` is the TOTP key, or the security key's credential id and public
    key, encrypted with ``WEBAUTH["secret"]`` (the database alone neither gives
    a key away nor can be given one); ``last_step`` the last accepted TOTP
    time step, or the security key's signature counter, raised by one
    conditional ``UPDATE`` so that a code (or a cloned key's count) is accepted once.
    A factor counts once ``confirmed``: enrolment confirms it with its first
    right code.
    """

    KINDS: ClassVar[list[tuple[str, Any]]] = [
        ("totp", _("authenticator app")),
        ("webauthn", _("security key")),
    ]

    user = _users("webauth_second_factors")
    kind = models.CharField(_("kind"), max_length=16, choices=KINDS)
    name = models.CharField(_("name"), max_length=100, blank=True, default="")
    secret = models.TextField(_("secret"), editable=False)
    confirmed = models.BooleanField(_("confirmed"), default=False)
    last_step = models.BigIntegerField(_("last time step"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)

    class Meta:
        verbose_name = _("second factor")
        verbose_name_plural = _("second factors")

    def __str__(self) -> str:
        return f"{self.kind} {self.pk} of user {self.user_id}"


class RecoveryCode(models.Model):
    """One of a user's single-use recovery codes, stored as the SHA-256 of its normal form.

    A code is 80 random bits, so its hash cannot be searched back; spending it
    is one conditional ``UPDATE`` (``used_at`` from null), so it works once
    even for requests racing each other.
    """

    user = _users("webauth_recovery_codes")
    code_hash = models.CharField(_("code hash"), max_length=64, editable=False)
    used_at = models.DateTimeField(_("used"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("recovery code")
        verbose_name_plural = _("recovery codes")
        constraints = [
            models.UniqueConstraint(fields=["user", "code_hash"], name="webauth_recovery_code_once")
        ]

    def __str__(self) -> str:
        return f"recovery code {self.pk} of user {self.user_id}"


class TrustedBrowser(models.Model):
    """A browser whose sign-ins skip the second factor for a while (``mfa.trust_days``).

    The browser's cookie holds a random token; this row its SHA-256. Forgotten
    from the account center, at "sign out everywhere", and by an admin's reset;
    a password change makes the cookie worthless (it carries the user's
    session auth hash).
    """

    user = _users("webauth_trusted_browsers")
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True, editable=False)
    user_agent = models.CharField(_("user agent"), max_length=512, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    expires = models.DateTimeField(_("expires"), db_index=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)

    class Meta:
        verbose_name = _("trusted browser")
        verbose_name_plural = _("trusted browsers")

    def __str__(self) -> str:
        return f"trusted browser {self.pk} of user {self.user_id}"


class TokenSession(models.Model):
    """A session that access tokens were minted for, and whether it has ended (docs/tokens.md).

    ``sid`` is the tokens' ``sid`` claim (:func:`webauth.sessions.base.session_id`,
    never the session's token). A row is made by the first token of a session, or
    by its sign-out; ``ended`` is set when the session ends (sign-out, sign out
    everywhere, a password change, the user deactivated or deleted), and from
    then on no token is minted for it and the revocation feed lists it.
    ``expires`` is when its last token expires (or, for a session signed out
    before any, when its cookie would have): the row is purged after it.
    No foreign key: the row outlives a deleted user for as long as its tokens do.
    """

    sid = models.CharField(_("session id"), max_length=32, unique=True, editable=False)
    user_id = models.CharField(_("user id"), max_length=255, db_index=True, editable=False)
    expires = models.DateTimeField(_("expires"), db_index=True)
    ended = models.DateTimeField(_("ended"), null=True, blank=True, db_index=True)
    # Whether a token was minted for it: a session signed out before its first
    # token is kept (so that none is minted for it later) but not fed to services.
    minted = models.BooleanField(_("token minted"), default=False)

    class Meta:
        verbose_name = _("access token session")
        verbose_name_plural = _("access token sessions")

    def __str__(self) -> str:
        return f"access token session {self.sid} of user {self.user_id}"


class ApiKey(models.Model):
    """A long-lived credential for a script or an integration (docs/api-keys.md).

    The key is shown once, when it is made; this row keeps its public part
    (``key_id``, which the key starts with after ``WEBAUTH["api_keys"]["prefix"]``)
    and the SHA-256 of its secret. A key authenticates requests as its user and
    never makes a browser session; it stops working when revoked, when it
    expires, or when its user is deactivated.

    A key belongs to a user (``user``) or, with ``WEBAUTH["api_keys"]["owners"]``,
    to another of the project's models (``owner``: ``"<app_label>.<model>:<pk>"``,
    such as ``"shop.team:42"``; ``user`` is then empty): never to both.
    """

    user = _users("webauth_api_keys", null=True, blank=True)
    # A project-defined owner, by model label and primary key ("" for a user's key).
    owner = models.CharField(_("owner"), max_length=150, blank=True, default="", db_index=True)
    name = models.CharField(_("name"), max_length=100)
    key_id = models.CharField(_("key id"), max_length=16, unique=True, editable=False)
    secret_hash = models.CharField(_("secret hash"), max_length=64, editable=False)
    scopes = models.JSONField(_("scopes"), default=list, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now, editable=False)
    expires = models.DateTimeField(_("expires"), null=True, blank=True)
    # Written at most once a minute (webauth.api_keys.LAST_USED_EVERY).
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)

    class Meta:
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")
        constraints = [
            # A user's key or an owner's, never both, never neither.
            models.CheckConstraint(
                condition=(
                    (models.Q(user__isnull=False) & models.Q(owner=""))
                    | (models.Q(user__isnull=True) & ~models.Q(owner=""))
                ),
                name="webauth_api_key_one_holder",
            )
        ]

    def __str__(self) -> str:
        if self.owner:
            return f"API key {self.key_id} of {self.owner}"
        return f"API key {self.key_id} of user {self.user_id}"
