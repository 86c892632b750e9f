"""Resetting a forgotten password by email (``WEBAUTH["passwords"]["reset"]``).

The person types an email address or a username (:func:`ask`). If it names an
active user with a usable password and an address, that address is mailed a
link and a code, under the same rules as an email sign-in's
(:mod:`webauth.flows.email`):

* **One grant** of a link token and a code, stored hashed through the adapter's
  ``replace_verification_token`` (which voids the user's earlier reset grants)
  under an identifier of its own, ``password-reset:<user id>``: no sign-in can
  redeem it (a sign-in's identifier is an address, which never holds a ``:``),
  and no reset grant is a sign-in's or an address change's
  (``email-change:...``).
* **Bound to the browser or app that asked**: a random *binding* that only its
  encrypted ``authjs.reset-pending`` cookie (an app: the ``resetToken`` it was
  answered) holds is hashed into both the token and the code, so a code or a
  link read out of the message redeems nothing anywhere else.
* **Bound to the password**: a fingerprint of the user's password hash is
  hashed in too, so a grant dies when the password changes by any means (this
  reset, the account center, the admin, ``manage.py changepassword``).
* **Scanner-proof**: ``GET`` of the link looks nothing up and changes nothing.
  In the browser that asked it shows the form to choose the new password; in
  any other browser a page that says where to finish. Only a ``POST`` with the
  token (or the code) and the new password redeems.
* **Single-use**: the adapter's conditional ``DELETE`` decides between
  concurrent redemptions; a wrong code counts against the grant (void after
  the provider's ``code_max_attempts``, 5) and the ``code_failed`` rate limit.

**The same answer and the same time whoever asked.** An unknown address or
username, an inactive user, a user without a usable password or without an
address: every case does the same work as a real one, under a *decoy*
identifier (``password-reset:~`` and a keyed hash of what was typed): the same
look-ups, a grant stored, the message rendered, handed to the outbox, the
``password_reset_requested`` event (``user`` is ``None``), the same cookie and
redirect. The message itself leaves from a background thread (:data:`outbox`),
for every case (a decoy's hand-off carries nothing), so the time SMTP takes is
never part of the answer; nothing is mailed for a decoy
(``benchmarks/bench_reset_timing.py`` measures both choices).

**The new password** is checked by Django's ``SetPasswordForm`` (the
``AUTH_PASSWORD_VALIDATORS``). With the code, the validators that do not look
at the user run before the code is used, and the ones that do only once the
code has proven the mailbox (a "too similar to the username" before that would
say the account exists); if those refuse, the browser or app is given a token
grant of its own to choose another password with, without another email. Then
the password is saved, an address nobody had proven becomes the user's as an
email sign-in makes it (:func:`webauth.flows.accounts.prove_address`), and
:func:`webauth.passwords.changed.password_changed` ends every session of the
user under both strategies, forgets the trusted browsers and mails the owner.
A reset never signs anyone in: the mailbox is one factor, and the sign-in that
follows asks for the second factor as any does.

Which email provider's rules apply: the first ``Email`` provider that sends
codes (its sender, ``max_age``, code alphabet, ``code_max_attempts`` and
secret); without one, webauth's own defaults (one hour, alphanumeric codes, 5
attempts) from ``DEFAULT_FROM_EMAIL``.

Nothing here logs a token, a code, a hash, a password or what was typed.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import hmac
import math
import os
import queue
import secrets
import threading
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.forms import SetPasswordForm
from django.core.checks import CheckMessage, Error, Warning
from django.core.mail import EmailMultiAlternatives, get_connection
from django.utils.translation import gettext as _

from .. import challenges, mail, ratelimit
from .. import cookies as ck
from .. import jwt as jose
from ..adapters.base import missing_methods
from ..errors import AmbiguousEmail, AuthError, RateLimited, Verification
from ..events import emit
from ..flows.accounts import prove_address
from ..flows.email import LINKS_KEPT, REMEMBER_LINKS, grant_hash, link_fingerprint
from ..identity import canonical_email_or_none, identifier_key
from ..pages import usable_providers
from ..providers.credentials import DjangoCredentials
from ..providers.email import Email
from ..types import VerificationToken
from ..utils import aware, user_model
from .changed import password_changed
from .forms import PASSWORD_MAX_LENGTH

if TYPE_CHECKING:
    from django.http import HttpResponseBase

    from ..conf import Config
    from ..logger import AuthLogger
    from ..state import AuthState

__all__ = [
    "APP_SALT",
    "DEFAULT_MAX_AGE",
    "GRANT_PREFIX",
    "MAX_IDENTIFIER_LENGTH",
    "MAX_PASSWORD_LENGTH",
    "RESET_METHODS",
    "InvalidIdentifier",
    "PasswordRefused",
    "ResetExpired",
    "Ticket",
    "WrongCode",
    "ask",
    "asked_for",
    "can_reset",
    "clean_identifier",
    "earlier_links",
    "enabled",
    "find_user",
    "grant_email",
    "is_current_link",
    "is_over",
    "outbox",
    "read_ticket",
    "read_used",
    "redeem_code",
    "redeem_link",
    "seal",
    "system_checks",
    "unseal",
    "write_ticket",
    "write_used",
]

#: The identifiers of reset grants start with this (no address holds a ``:``).
GRANT_PREFIX = "password-reset:"

#: The pending cookie's key in ``AuthState.cookies`` (``authjs.reset-pending``).
PENDING = "reset_pending"

#: The salt of an app's ``resetToken`` (an app's ticket is not a browser's cookie).
APP_SALT = "webauth.password-reset.app"

#: Seconds a link and its code stay valid without an email provider to follow.
DEFAULT_MAX_AGE = 60 * 60

#: The longest identifier looked up (an address is at most 254 characters).
MAX_IDENTIFIER_LENGTH = 254

#: The longest new password accepted: a hasher is not made to spend its time on more
#: (the same as sign-up's, change's and set's).
MAX_PASSWORD_LENGTH = PASSWORD_MAX_LENGTH

#: Messages waiting for the outbox beyond which new ones are dropped (and logged).
OUTBOX_LIMIT = 1000

#: The adapter methods a reset calls.
RESET_METHODS: tuple[str, ...] = (
    "replace_verification_token",
    "use_verification_token",
    "use_verification_code",
    "get_user_by_email",
)

#: The password fingerprint of a decoy grant: the length of a real one (:func:`_stamp`).
_DECOY_STAMP = "0" * 64

#: Where a decoy's message is addressed (it is rendered, never sent).
_DECOY_ADDRESS = "nobody@invalid"


# -- errors --------------------------------------------------------------------------------------


class InvalidIdentifier(AuthError):
    """What was typed cannot be an address or a username; ``field_message`` says why."""

    user_caused = True

    def __init__(self, field_message: str) -> None:
        super().__init__("The identifier of a password reset is not valid")
        self.field_message = field_message


class ResetExpired(Verification):
    """The grant is over: used, expired, replaced by a newer request, or the password
    changed meanwhile (or its user is gone or deactivated)."""


class WrongCode(Verification):
    """A wrong or expired code: ``ticket`` counts it, ``left`` says how many may follow."""

    def __init__(self, ticket: Ticket, *, left: int) -> None:
        super().__init__("A wrong or expired password reset code was entered")
        self.ticket = ticket
        self.left = left


class PasswordRefused(AuthError):
    """The new password was refused: ``errors`` maps a field to its messages.

    When the code was right (and used up) but the validators that look at the
    user refused, ``ticket`` and ``token`` are a token grant of the client's own
    to choose another password with (the message's link is spent with it).
    """

    user_caused = True

    def __init__(
        self,
        errors: Mapping[str, Sequence[str]],
        *,
        ticket: Ticket | None = None,
        token: str | None = None,
    ) -> None:
        super().__init__("The new password was refused")
        self.errors = {name: list(messages) for name, messages in errors.items()}
        self.ticket = ticket
        self.token = token

    @property
    def messages(self) -> list[str]:
        """Every message, in the fields' order."""
        return [m for messages in self.errors.values() for m in messages]


# -- configuration -------------------------------------------------------------------------------


def enabled(config: Config) -> bool:
    """Whether the reset routes exist (``WEBAUTH["passwords"]["reset"]``)."""
    return config.passwords.reset


_default_email: Email | None = None


def grant_email(config: Config) -> Email:
    """The email provider whose rules a reset follows.

    The first ``Email`` provider that sends codes, else webauth's defaults
    (:data:`DEFAULT_MAX_AGE`, alphanumeric codes, 5 attempts, the site's
    secret, ``DEFAULT_FROM_EMAIL``): a site whose only way in is a password can
    reset it too.
    """
    for provider in usable_providers(config):
        if isinstance(provider, Email) and provider.code is not None:
            return provider
    global _default_email
    if _default_email is None:
        _default_email = Email(id="password-reset", name="Password reset", max_age=DEFAULT_MAX_AGE)
    return _default_email


def system_checks(config: Config) -> list[CheckMessage]:
    """``webauth.E016``, ``W016``, ``W017``: what keeps a reset that is on from working."""
    if not enabled(config):
        return []
    messages: list[CheckMessage] = []
    missing = missing_methods(config.storage.adapter, RESET_METHODS)
    if missing:
        messages.append(
            Error(
                f"The webauth adapter {type(config.storage.adapter).__name__} lacks "
                f"{', '.join(missing)}, which the password reset (passwords.reset) calls.",
                hint="Implement the methods (see webauth.adapters.base.Adapter), or use "
                "webauth.adapters.django.DjangoAdapter.",
                id="webauth.E016",
            )
        )
    email = grant_email(config)
    if (
        not email.from_email
        and settings.DEFAULT_FROM_EMAIL == "webmaster@localhost"
        and not settings.DEBUG
    ):
        messages.append(
            Warning(
                "The password reset emails are sent from Django's default "
                "'webmaster@localhost', which mail servers reject or file as spam.",
                hint="Set DEFAULT_FROM_EMAIL, or give an Email provider a from_email "
                "(the reset follows the first one that sends codes).",
                id="webauth.W016",
            )
        )
    if not any(isinstance(provider, DjangoCredentials) for provider in config.providers):
        messages.append(
            Warning(
                "WEBAUTH['passwords']['reset'] is on, but no DjangoCredentials provider is "
                "configured: the new password signs in nowhere on webauth's pages.",
                hint="Add webauth.providers.DjangoCredentials() to WEBAUTH['providers'], or "
                "turn the reset off (docs/passwords.md).",
                id="webauth.W017",
            )
        )
    return messages


# -- who asked -----------------------------------------------------------------------------------


def clean_identifier(typed: object) -> str:
    """*typed* as it is looked up (surrounding spaces dropped); :class:`InvalidIdentifier`.

    Nothing about accounts decides here: what is refused could never name one.
    """
    if not isinstance(typed, str) or not typed.strip():
        raise InvalidIdentifier(_("Enter your email address or username."))
    text = typed.strip()
    if len(text) > MAX_IDENTIFIER_LENGTH:
        raise InvalidIdentifier(_("That is too long for an email address or a username."))
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in text):
        raise InvalidIdentifier(_("Enter a valid email address or username."))
    return text


def _by_username(text: str) -> Any:
    # As Django's ModelBackend finds a username (the manager's natural key): what
    # a password sign-in means by one.
    model = user_model()
    try:
        return model._default_manager.get_by_natural_key(text)
    except (model.DoesNotExist, model.MultipleObjectsReturned, ValueError, TypeError):
        return None


def _by_address(config: Config, address: str) -> Any:
    try:
        record = config.storage.get_user_by_email(address)
    except AmbiguousEmail as exc:  # two users with the address: neither gets it
        config.logger.error(exc)
        return None
    if record is None:
        return None
    model = user_model()
    if isinstance(record.instance, model):
        return record.instance
    # An adapter whose records carry no instance: the model's user of that id.
    return model._default_manager.filter(pk=record.id).first()


def find_user(config: Config, text: str) -> Any:
    """The ``AUTH_USER_MODEL`` user *text* names, or ``None``.

    An address (webauth's canonical form) is looked up through the adapter and
    as a username, both every time, so that the time does not tell which one
    found it; anything else as a username. The address's owner comes first.
    """
    address = canonical_email_or_none(text)
    by_address = _by_address(config, address) if address is not None else None
    by_name = _by_username(text)
    return by_address if by_address is not None else by_name


def _address_of(user: Any) -> str | None:
    field = user.get_email_field_name() if hasattr(user, "get_email_field_name") else "email"
    return canonical_email_or_none(getattr(user, field, None))


def can_reset(user: Any) -> bool:
    """Whether *user* may reset a password: active, with a usable one and an address.

    As Django's ``PasswordResetForm``: a user without a usable password (one
    made by an email, OAuth or passkey sign-in, or by single sign-on) has no
    password to reset; the account center sets one.
    """
    if user is None or not getattr(user, "is_active", True):
        return False
    usable = getattr(user, "has_usable_password", None)
    if not callable(usable) or not usable():
        return False
    return _address_of(user) is not None


def _stamp(user: Any) -> str:
    """What the grant knows of the password: a fingerprint of its hash (64 hex digits)."""
    password = getattr(user, "password", "") or ""
    return hashlib.sha256(b"webauth password reset\0" + password.encode()).hexdigest()


def _decoy(config: Config, text: str) -> str:
    """The decoy identifier of *text*: the same for each spelling of it, nobody's."""
    key = config.secret[0].encode() if config.secret else b""
    digest = hmac.new(
        key, b"webauth password reset decoy\0" + identifier_key(text).encode(), "sha256"
    )
    return "~" + base64.urlsafe_b64encode(digest.digest()[:16]).rstrip(b"=").decode()


@dataclass(frozen=True, slots=True)
class _Grant:
    """The grant *text* leads to: its user (``None`` for a decoy), identifier and stamp."""

    user: Any
    identifier: str
    stamp: str


def _grant_for(config: Config, text: str) -> _Grant:
    # The same look-ups whoever it names, at the request and at the redemption.
    user = find_user(config, text)
    if can_reset(user):
        return _Grant(user, f"{GRANT_PREFIX}{user.pk}", _stamp(user))
    return _Grant(None, GRANT_PREFIX + _decoy(config, text), _DECOY_STAMP)


def _bound(binding: str, stamp: str) -> str:
    # The client's binding and the password's fingerprint, hashed with the value.
    return f"{binding}\0{stamp}"


# -- the ticket: what the client that asked holds ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ticket:
    """A reset this client asked for (its ``authjs.reset-pending`` cookie, an app's ``resetToken``).

    ``identifier``: what was typed (looked up again at the redemption);
    ``binding``: the grant's binding; ``expires``: its expiry (seconds since the
    epoch); ``attempts``: the wrong codes typed here (for "attempts left" only:
    the adapter's count voids the grant); ``links``: the fingerprints of the
    links this client asked for (:func:`~webauth.flows.email.link_fingerprint`),
    this grant's first.
    """

    identifier: str
    binding: str
    expires: int
    callback_url: str = ""
    attempts: int = 0
    links: tuple[str, ...] = ()


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _links_of(payload: Mapping[str, Any]) -> tuple[str, ...]:
    links = payload.get("links")
    if not isinstance(links, list):
        return ()
    return tuple(link for link in links[:LINKS_KEPT] if isinstance(link, str) and len(link) == 22)


def _ticket_of(payload: Mapping[str, Any] | None) -> Ticket | None:
    """The live ticket of a decoded cookie or token; ``None`` once used or expired."""
    if payload is None or payload.get("used") is not None:
        return None
    identifier, binding = payload.get("identifier"), payload.get("binding")
    expires, attempts = _count(payload.get("expires")), _count(payload.get("attempts"))
    callback_url = payload.get("callbackUrl")
    if not isinstance(identifier, str) or not identifier or not isinstance(binding, str):
        return None
    if not binding or expires is None or expires <= int(time.time()):
        return None
    return Ticket(
        identifier=identifier,
        binding=binding,
        expires=expires,
        callback_url=callback_url if isinstance(callback_url, str) else "",
        attempts=min(max(attempts or 0, 0), 1000),
        links=_links_of(payload),
    )


def _claims(ticket: Ticket) -> dict[str, object]:
    return {
        "identifier": ticket.identifier,
        "binding": ticket.binding,
        "expires": ticket.expires,
        "callbackUrl": ticket.callback_url,
        "attempts": ticket.attempts,
        "links": list(ticket.links),
    }


def seal(config: Config, ticket: Ticket, salt: str = APP_SALT) -> str:
    """*ticket* encrypted with the site's secret: an app's ``resetToken``."""
    lifetime = max(ticket.expires - int(time.time()), 1)
    return jose.encode(
        token=_claims(ticket), secret=list(config.secret), salt=salt, max_age=lifetime
    )


def _decode(config: Config, value: object, salt: str) -> dict[str, Any] | None:
    if not isinstance(value, str) or not value or len(value) > 8192:
        return None
    return jose.decode(token=value, secret=config.secret, salt=salt)


def unseal(config: Config, value: object, salt: str = APP_SALT) -> Ticket | None:
    """The live ticket an app's ``resetToken`` holds; ``None`` when tampered, expired or used."""
    return _ticket_of(_decode(config, value, salt))


def _payload(state: AuthState) -> dict[str, Any] | None:
    spec = state.cookies[PENDING]
    raw = state.request_cookies.get(spec.name)
    return _decode(state.config, ck.decode_value(raw), spec.name) if raw else None


def read_ticket(state: AuthState) -> Ticket | None:
    """The reset this browser asked for and can still finish, or ``None``."""
    return _ticket_of(_payload(state))


def read_used(state: AuthState) -> str | None:
    """The callback URL of the reset this browser finished, else ``None``."""
    payload = _payload(state)
    if payload is None or payload.get("used") is not True or payload.get("done") is not True:
        return None
    url = payload.get("callbackUrl")
    return url if isinstance(url, str) else ""


def is_over(state: AuthState) -> bool:
    """Whether this browser asked for a reset that is over (finished, expired or found void)."""
    payload = _payload(state)
    return payload is not None and _ticket_of(payload) is None


def earlier_links(state: AuthState) -> tuple[str, ...]:
    """The links this browser asked for before (kept behind a new request's)."""
    payload = _payload(state)
    return _links_of(payload) if payload is not None else ()


def _spec(state: AuthState, lifetime: int) -> ck.CookieSpec:
    spec = state.cookies[PENDING]
    return spec if spec.max_age is not None else replace(spec, max_age=lifetime)


def write_ticket(state: AuthState, response: HttpResponseBase, ticket: Ticket) -> None:
    """Set the pending cookie to *ticket* (outliving its grant by a week, as email's)."""
    lifetime = max(ticket.expires - int(time.time()), 0) + REMEMBER_LINKS
    spec = _spec(state, lifetime)
    value = jose.encode(
        token=_claims(ticket), secret=list(state.config.secret), salt=spec.name, max_age=lifetime
    )
    ck.set_cookie(response, spec, value)


def write_used(
    state: AuthState, response: HttpResponseBase, callback_url: str, *, done: bool
) -> None:
    """After a reset (*done*) or a grant found over: the cookie keeps only its links.

    Opened again here, one of them is "no longer valid", not "finish where you
    started". No identifier, no binding: nothing left can redeem anything.
    """
    payload = _payload(state)
    links = _links_of(payload) if payload is not None else ()
    spec = _spec(state, REMEMBER_LINKS)
    claims = {"used": True, "done": done, "links": list(links), "callbackUrl": callback_url}
    value = jose.encode(
        token=claims, secret=list(state.config.secret), salt=spec.name, max_age=REMEMBER_LINKS
    )
    ck.set_cookie(response, spec, value)


def _among(fingerprint: str, links: Sequence[str]) -> bool:
    found = False
    for link in links:  # every one compared, in constant time
        found |= hmac.compare_digest(fingerprint.encode(), link.encode())
    return found


def is_current_link(ticket: Ticket, token: object) -> bool:
    """Whether *token* is the link of *ticket*'s grant (nothing looked up)."""
    if not isinstance(token, str) or not token or len(token) > 512 or not ticket.links:
        return False
    return hmac.compare_digest(link_fingerprint(token).encode(), ticket.links[0].encode())


def asked_for(state: AuthState, token: object) -> bool:
    """Whether this browser asked for the link whose token is *token* (live, used or over)."""
    payload = _payload(state)
    if payload is None or not isinstance(token, str) or not token or len(token) > 512:
        return False
    return _among(link_fingerprint(token), _links_of(payload))


# -- asking --------------------------------------------------------------------------------------


def ask(
    state: AuthState,
    typed: object,
    callback_url: str,
    *,
    earlier: Sequence[str] = (),
    params: Mapping[str, object] | None = None,
) -> Ticket:
    """Mail a link and a code for the account *typed* names; the ticket for the client.

    The same work, answer and time whoever *typed* names (see the module's
    docstring). *earlier*: the links this client asked for before, kept behind
    the new one. *params*: the request's fields, where the bot challenge's
    answer is (the form's, ``state.body``, unless given: an app's JSON).
    Raises :class:`InvalidIdentifier` for what cannot name an account,
    ``RateLimited`` beyond ``password_reset`` (per client address and per
    identifier, counted before anything is looked up), and first of all
    ``ChallengeFailed`` when the bot challenge guards ``reset`` and the request
    did not pass it (:func:`webauth.challenges.require`).
    """
    config = state.config
    if config.challenge is not None:
        challenges.require(state, "reset", state.body if params is None else params)
    text = clean_identifier(typed)
    decision = ratelimit.hit(state.request, "password_reset", text, config=config)
    if not decision:
        raise RateLimited("Too many password reset requests", retry_after=decision.retry_after)
    email = grant_email(config)
    grant = _grant_for(config, text)
    token = email.new_token()
    code = email.new_code()
    assert code is not None  # grant_email() only picks a provider that sends codes
    binding = secrets.token_urlsafe(32)
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=email.max_age)
    bound = _bound(binding, grant.stamp)
    config.storage.replace_verification_token(
        VerificationToken(
            identifier=grant.identifier,
            token=grant_hash(email, token, bound, config.secret),
            expires=expires,
            code=grant_hash(email, code, bound, config.secret),
        )
    )
    url = f"{state.base_url}/reset/confirm?" + urlencode({"token": token})
    address = _address_of(grant.user) if grant.user is not None else None
    message = _message(state, email, address or _DECOY_ADDRESS, url, code, expires)
    # Every case hands the outbox one message; a decoy's is built, never sent.
    outbox.submit(message, config.logger, send=address is not None)
    emit(
        config,
        "password_reset_requested",
        user=grant.user,
        identifier=text,
        request=state.request,
    )
    links = (link_fingerprint(token), *earlier)[:LINKS_KEPT]
    return Ticket(text, binding, int(expires.timestamp()), callback_url, 0, links)


def _message(
    state: AuthState, email: Email, address: str, url: str, code: str, expires: datetime
) -> EmailMultiAlternatives:
    """The message with the link and the code (templates ``webauth/email/password_reset_*``)."""
    config = state.config
    seconds = (expires - datetime.now(UTC)).total_seconds()
    context = {
        "url": url,
        "code": email.display_code(code),
        "host": urlsplit(url).netloc,
        "expires": expires,
        "minutes": max(1, math.ceil(seconds / 60)),
        "theme": asdict(config.theme),
    }
    return mail.message("password_reset", context, email.sender, address, state.request)


class Outbox:
    """Messages sent from one background thread, in the order they were handed over.

    The request that hands one over never waits for the mail server, and a
    request with nothing to send (a decoy) hands over its rendered message all
    the same, which the thread builds and drops: both cost the thread the same.
    A failed delivery is logged (the request was answered long ago). Beyond
    :data:`OUTBOX_LIMIT` waiting jobs new ones are dropped and logged: a flood
    cannot grow the process without bound.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[EmailMultiAlternatives, AuthLogger, bool]] = (
            queue.SimpleQueue()
        )
        self._idle = threading.Condition()
        self._waiting = 0
        self._thread: threading.Thread | None = None
        self._pid = 0

    def submit(self, message: EmailMultiAlternatives, logger: AuthLogger, *, send: bool) -> bool:
        """Hand *message* to the thread; whether it was taken.

        With *send* false (a decoy's) the thread does what a delivery costs it
        (the connection made, the message built) and sends nothing.
        """
        with self._idle:
            if self._waiting >= OUTBOX_LIMIT:
                logger.error(AuthError("The password reset outbox is full: a message was dropped"))
                return False
            self._waiting += 1
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                # Started on first use, and again in a forked worker (threads do not fork).
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="webauth-reset-outbox", daemon=True
                )
                self._thread.start()
        self._jobs.put((message, logger, send))
        return True

    def _run(self) -> None:
        while True:
            message, logger, send = self._jobs.get()
            try:
                if send:
                    message.send(fail_silently=False)
                else:  # a decoy's: the same work, nothing delivered
                    get_connection(fail_silently=False)
                    message.message().as_bytes()
            except Exception as exc:  # the answer went long ago: logged, never raised
                logger.error(
                    AuthError("The password reset email could not be sent", cause={"err": exc})
                )
            finally:
                with self._idle:
                    self._waiting -= 1
                    self._idle.notify_all()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every message handed over has been sent (or failed); whether they were.

        At most *timeout* seconds (10 by default): a mail server that hangs
        makes it answer ``False``, never wait for ever.
        """
        with self._idle:
            return self._idle.wait_for(lambda: self._waiting == 0, timeout)


#: The outbox of the reset messages (``outbox.flush()`` waits for it, as tests do).
outbox = Outbox()
#: How long a process that exits (a worker restarted, ``manage.py`` finished)
#: waits for the outbox to send what is still waiting, in seconds.
EXIT_WAIT = 5.0
atexit.register(outbox.flush, EXIT_WAIT)


# -- redeeming -----------------------------------------------------------------------------------


def _check_password(user: Any, password1: object, password2: object) -> None:
    """Django's ``SetPasswordForm`` on the two fields; :class:`PasswordRefused` if it refuses.

    *user* ``None``: only the validators that do not look at the user can
    refuse (``UserAttributeSimilarityValidator`` skips without one).
    """
    data = {
        "new_password1": password1 if isinstance(password1, str) else "",
        "new_password2": password2 if isinstance(password2, str) else "",
    }
    if any(len(value) > MAX_PASSWORD_LENGTH for value in data.values()):
        raise PasswordRefused({"new_password1": [_("This password is too long.")]})
    form = SetPasswordForm(user, data=data)
    if not form.is_valid():
        raise PasswordRefused(
            {name: [str(m) for m in messages] for name, messages in form.errors.items()}
        )


def redeem_link(
    state: AuthState, ticket: Ticket, token: str, password1: object, password2: object
) -> Any:
    """Set the new password with the link's *token*; the user whose password it is now.

    The caller has checked :func:`is_current_link` (the client's own link: its
    holder read the message, so every validator may speak before the grant is
    used). Raises :class:`PasswordRefused` (nothing used), :class:`ResetExpired`.
    """
    config = state.config
    email = grant_email(config)
    grant = _grant_for(config, ticket.identifier)
    if grant.user is None:
        raise ResetExpired("The account of the password reset can no longer reset it")
    _check_password(grant.user, password1, password2)
    hashed = grant_hash(email, token, _bound(ticket.binding, grant.stamp), config.secret)
    record = config.storage.use_verification_token(grant.identifier, hashed)
    if record is None or aware(record.expires) <= datetime.now(UTC):
        raise ResetExpired("The password reset link is unknown, used, expired or replaced")
    return _set_password(state, grant.user, str(password1), email)


def redeem_code(
    state: AuthState, ticket: Ticket, code: object, password1: object, password2: object
) -> Any:
    """Set the new password with the *code* from the message; the user.

    Raises :class:`PasswordRefused` (before the code is looked at, or after it
    was used: then with a token grant of the client's own), :class:`WrongCode`
    (counted against the grant and ``code_failed``), ``RateLimited``.
    """
    config = state.config
    _check_password(None, password1, password2)
    # Counted before the check and given back on success, as a sign-in code is,
    # per identifier typed (not per account: that would tell two spellings apart).
    decision = ratelimit.hit(state.request, "code_failed", ticket.identifier, config=config)
    if not decision:
        raise RateLimited("Too many wrong password reset codes", retry_after=decision.retry_after)
    email = grant_email(config)
    grant = _grant_for(config, ticket.identifier)
    bound = _bound(ticket.binding, grant.stamp)
    cleaned = email.clean_code(code)
    record = None
    if cleaned is not None:  # what cannot be a code is wrong without asking the adapter
        record = config.storage.use_verification_code(
            grant.identifier,
            grant_hash(email, cleaned, bound, config.secret),
            email.code_max_attempts,
        )
    if record is None or aware(record.expires) <= datetime.now(UTC):
        counted = replace(ticket, attempts=ticket.attempts + 1)
        raise WrongCode(counted, left=max(email.code_max_attempts - counted.attempts, 0))
    ratelimit.refund(decision)
    if grant.user is None:  # a decoy's code was never sent: one guessed is still nobody's
        raise ResetExpired("The password reset code belongs to no account")
    try:
        _check_password(grant.user, password1, password2)
    except PasswordRefused as refused:
        # The code is spent; the client gets a grant of its own to try another
        # password, until the same expiry (no new email: the mailbox is proven).
        token = email.new_token()
        config.storage.replace_verification_token(
            VerificationToken(
                identifier=grant.identifier,
                token=grant_hash(email, token, bound, config.secret),
                expires=aware(record.expires),
            )
        )
        links = (link_fingerprint(token), *ticket.links)[:LINKS_KEPT]
        raise PasswordRefused(
            refused.errors, ticket=replace(ticket, attempts=0, links=links), token=token
        ) from None
    return _set_password(state, grant.user, str(password1), email)


def _set_password(state: AuthState, user: Any, password: str, email: Email) -> Any:
    """Save *password* as *user*'s and end what the old one allowed."""
    # The mailbox is proven: an address nobody had proven becomes the user's, and
    # whatever a stranger had put on the account goes, as after an email sign-in
    # (prove_address does nothing for an adapter without prove_email). The old
    # password it may take is replaced below all the same.
    record = state.config.storage.get_user(str(user.pk))
    if record is not None:
        prove_address(state, record, email.id, _address_of(user) or "")
    user.set_password(password)
    user.save(update_fields=["password"])
    password_changed(state.request, user, how="reset", keep_current=False)
    return user
