"""Sign-up with a password on the ``DjangoCredentials`` provider (``passwords.signup``).

:func:`submit` takes the sign-up form (:mod:`webauth.passwords.forms`: built
from the user model, or the project's), checks it (``AUTH_PASSWORD_VALIDATORS``
among the rest) and counts it under the ``signup`` rate limit (per client
address and per email address). What happens next never tells the person
asking whether the address or the username is taken:

* **verify_email** (the default): nothing is stored yet but an email grant
  (a link and a code, as an email sign-in's, under an identifier of its own,
  ``signup:<address>``, that no sign-in can redeem). The new user waits *in
  the client*: its fields (the password already hashed) sealed with the
  site's secret in the ``authjs.signup-pending`` cookie (an app gets the same
  as ``signupToken``), together with the grant's binding (:func:`webauth.flows.email.grant_hash`),
  so only the browser or app that asked can redeem it. The link opens a page
  with one button in that browser (a mail scanner, with no cookie, sees a
  "finish where you started" page and uses up nothing). Once the code or the
  button comes back, the user is created through the adapter with
  ``email_verified`` set and signed in through the shared end of every sign-in
  (:func:`webauth.flows.signin.complete`: the ``sign_in`` callback, the
  second-factor step, the session, the events).
  Nothing is stored for a sign-up nobody proves, so no one can squat an
  address or a username by starting sign-ups, and nothing needs cleaning up.
* **verify_email=False**: the user is created and signed in at once, its
  address marked unproven (the adapter's ``mark_email_unproven``, as a passkey
  registration does): the first person who proves the address by email
  takes it over, and the password set here stops working.

When the address belongs to an account already, its owner is mailed
("someone tried to sign up with your address") and the person asking gets the
same answer as for a new address. When the username is taken (and the address
is new), the address is mailed that the username is taken, to choose another:
only the address's owner learns it. The work is the same in every case (the
form, the password hashed, both look-ups, a grant stored, one message rendered
and sent from a background thread), so the time tells nothing either
(``benchmarks/bench_signup_timing.py``). With ``verify_email=False`` the
answer for a taken address or username is the "check your email" page where a
new one is signed in: that mode cannot hide it, and says so (docs/passwords.md).

Creating the user goes through ``config.storage.create_user`` with the form's
unsaved user as the record's ``instance``: ``DjangoAdapter`` serialises one
address's new users (``adapters/_exact.address_transaction``) and refuses a
second user with a username (``UsernameInUse``), so concurrent sign-ups of one
address or one username make one user.

Nothing here logs a password, a hash, a token, a code or an address.
"""

from __future__ import annotations

import hmac
import math
import secrets
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.forms import BaseForm
from django.utils import translation

from .. import challenges, mail, ratelimit
from .. import cookies as ck
from .. import jwt as jose
from ..errors import AuthError, EmailInUse, RateLimited, UsernameInUse
from ..events import emit
from ..flows import providers_with
from ..flows.email import grant_hash, link_fingerprint, use_code
from ..flows.outcomes import Attempt, Outcome, SignedIn
from ..flows.signin import complete
from ..identity import canonical_email
from ..providers.credentials import DjangoCredentials
from ..providers.email import Email
from ..types import AdapterUser, VerificationToken
from ..typing_aliases import SignalSender
from ..utils import aware, user_to_dict
from .forms import signup_form_class

if TYPE_CHECKING:
    from django.http import HttpResponseBase

    from ..conf import Config
    from ..state import AuthState

__all__ = [
    "GRANT_PREFIX",
    "MAX_AGE",
    "PENDING",
    "SIGNUP_METHODS",
    "Held",
    "Invalid",
    "Redeemed",
    "SignupAttempt",
    "Taken",
    "Waiting",
    "app_token",
    "code_attempts_left",
    "credentials_provider",
    "enabled",
    "forget_pending",
    "from_app_token",
    "grant_email",
    "grant_identifier",
    "open_link",
    "read_pending",
    "redeem_code",
    "redeem_link",
    "seal",
    "submit",
    "unseal",
    "wait_for_mail",
    "write_pending",
]

#: The adapter methods a sign-up calls.
SIGNUP_METHODS: tuple[str, ...] = (
    "get_user_by_email",
    "create_user",
    "mark_email_unproven",
    "replace_verification_token",
    "use_verification_token",
    "use_verification_code",
)

#: Sign-up grants' identifiers start with this: no address holds a ``:``, so
#: no email sign-in can redeem one, and no sign-up grant is a sign-in's.
GRANT_PREFIX = "signup:"

#: The pending sign-up's key in ``AuthState.cookies`` (``authjs.signup-pending``).
PENDING = "signup_pending"

#: How long a sign-up waits for its address to be proven (seconds) when no
#: email provider with codes is configured (else that provider's ``max_age``).
MAX_AGE = 60 * 60

#: The salt of an app's ``signupToken`` (a browser's cookie has its name's).
APP_SALT = "webauth.signup-token"

#: The grant's link and code when no email provider with codes is configured.
_DEFAULT_EMAIL = Email(id="signup", max_age=MAX_AGE)


# -- configuration ------------------------------------------------------------------------


def credentials_provider(config: Config) -> DjangoCredentials | None:
    """The ``DjangoCredentials`` provider whose users sign up, or ``None``."""
    for provider in config.providers:
        if isinstance(provider, DjangoCredentials):
            return provider
    return None


def enabled(config: Config) -> bool:
    """Whether sign-up is on: ``passwords.signup`` with a ``DjangoCredentials`` provider."""
    return config.passwords.signup and credentials_provider(config) is not None


def grant_email(config: Config) -> Email:
    """Whose codes and link prove a sign-up's address.

    The first configured email provider that sends codes (its alphabet, its
    ``max_age``, its ``code_max_attempts`` and sender), else webauth's own
    defaults (:data:`MAX_AGE`, Django's ``DEFAULT_FROM_EMAIL``).
    """
    for provider in providers_with(config.providers, "sends_email"):
        if isinstance(provider, Email) and provider.code is not None:
            return provider
    return _DEFAULT_EMAIL


def grant_identifier(address: str) -> str:
    """The grant's identifier for a sign-up of *address*."""
    return f"{GRANT_PREFIX}{address}"


# -- what the client holds ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Held:
    """A sign-up waiting for its address to be proven, as the client holds it (sealed).

    ``fields``: the new user's model fields as text (the password hash among
    them); ``binding``: the grant's (:func:`webauth.flows.email.grant_hash`);
    ``link``: the link's fingerprint (:func:`webauth.flows.email.link_fingerprint`);
    ``expires``: the grant's expiry (seconds since the epoch); ``attempts``:
    wrong codes typed here (the page's "attempts left").
    """

    identifier: str
    fields: dict[str, str | None]
    callback_url: str
    binding: str
    expires: int
    link: str
    attempts: int = 0


def seal(config: Config, held: Held, salt: str) -> str:
    """*held* encrypted and signed with the site's secret (a JWE), for the client to keep."""
    lifetime = max(held.expires - int(time.time()), 1)
    return jose.encode(token=asdict(held), secret=list(config.secret), salt=salt, max_age=lifetime)


def unseal(config: Config, value: object, salt: str) -> Held | None:
    """What :func:`seal` sealed, or ``None``: absent, tampered, expired, another salt's."""
    if not isinstance(value, str) or not value or len(value) > 16_000:
        return None
    claims = jose.decode(token=value, secret=config.secret, salt=salt)
    if claims is None:
        return None
    try:
        held = Held(
            identifier=claims["identifier"],
            fields=dict(claims["fields"]),
            callback_url=claims["callback_url"],
            binding=claims["binding"],
            expires=claims["expires"],
            link=claims["link"],
            attempts=claims.get("attempts", 0),
        )
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(held.expires, int) or held.expires <= int(time.time()):
        return None
    if not all(isinstance(v, str) for v in (held.identifier, held.binding, held.link)):
        return None
    return held


def read_pending(state: AuthState) -> Held | None:
    """The sign-up this browser is waiting to finish (its cookie), or ``None``."""
    spec = state.cookies[PENDING]
    raw = ck.read_chunked(state.request_cookies, spec.name)
    return unseal(state.config, raw, spec.name)


def write_pending(state: AuthState, response: HttpResponseBase, held: Held) -> None:
    """Keep *held* in this browser's ``authjs.signup-pending`` cookie until the grant expires."""
    spec = state.cookies[PENDING]
    if spec.max_age is None:  # unless the project set one in WEBAUTH["cookies"]
        spec = replace(spec, max_age=max(held.expires - int(time.time()), 1))
    value = seal(state.config, held, state.cookies[PENDING].name)
    ck.set_chunked(response, spec, value, state.request_cookies)


def forget_pending(state: AuthState, response: HttpResponseBase) -> None:
    """Delete the pending sign-up's cookie the request carried."""
    spec = state.cookies[PENDING]
    if ck.has_chunked(state.request_cookies, spec.name):
        ck.set_chunked(response, spec, None, state.request_cookies)


# -- outcomes --------------------------------------------------------------------------------


@dataclass(slots=True)
class Invalid:
    """The form has errors (or the limit refused it): shown again with them."""

    form: BaseForm
    #: ``RateLimited`` when the ``signup`` limit refused the attempt.
    limited: RateLimited | None = None


@dataclass(slots=True)
class Waiting:
    """The "check your email" answer: the same for a new, a taken address, a taken username.

    ``held``: what the client keeps until it proves the address (``None``
    with ``verify_email=False``, whose answer has no code to type).
    """

    identifier: str
    held: Held | None
    code: bool


@dataclass(slots=True)
class Taken:
    """The address proven, but an account has it or the username went meanwhile.

    Only ever answered to someone who has just proven the address.
    ``field``: the model's ``USERNAME_FIELD`` when the username is what is
    taken, else ``None``.
    """

    identifier: str
    field: str | None
    held: Held | None = None


@dataclass(slots=True)
class Redeemed:
    """The address proven (or not asked for) and the user made: where the sign-in went."""

    outcome: Outcome
    callback_url: str


Submitted = Invalid | Waiting | Redeemed


def _form_data(params: Mapping[str, object], form_class: type[BaseForm]) -> dict[str, str]:
    """The form's fields among *params*: text only (a JSON number or list is no answer)."""
    names = getattr(form_class, "base_fields", {})
    return {k: v for k, v in params.items() if k in names and isinstance(v, str)}


def _username_field(model: Any) -> str | None:
    """The model's username field when it is not the address, else ``None``."""
    name: str = model.USERNAME_FIELD
    return None if name == model.get_email_field_name() else name


def _username_taken(model: Any, username: object) -> bool:
    # Case-insensitively, as Django's UserCreationForm refuses "Bob" beside "bob".
    # The only case-insensitive lookup of an identity in webauth, and deliberately so:
    # it can only refuse (a look-alike name is called taken), never find an account
    # to sign in to or merge with; the sign-up is then answered as for any taken name.
    if not isinstance(username, str) or not username:
        return False
    field = _username_field(model)
    if field is None:
        return False
    return bool(model._default_manager.filter(**{f"{field}__iexact": username}).exists())


def _fields_of(form: BaseForm, instance: Any) -> dict[str, str | None]:
    """The new user's concrete fields the form set, as text, with the password's hash."""
    model = type(instance)
    declared = getattr(getattr(form, "_meta", None), "fields", None) or list(form.fields)
    names = [*declared, "password"]
    out: dict[str, str | None] = {}
    for name in dict.fromkeys(names):
        try:
            model_field = model._meta.get_field(name)
        except FieldDoesNotExist:  # a form field that is not the model's (terms accepted, say)
            continue
        if not getattr(model_field, "concrete", False) or model_field.many_to_many:
            continue
        value = model_field.value_from_object(instance)
        out[model_field.attname] = None if value is None else model_field.value_to_string(instance)
    return out


def _instance_of(fields: Mapping[str, str | None]) -> Any:
    """An unsaved user of the model with *fields* (what :func:`_fields_of` kept)."""
    model = get_user_model()
    instance = model()
    by_attname = {f.attname: f for f in model._meta.concrete_fields}
    for attname, value in fields.items():
        model_field = by_attname.get(attname)
        if model_field is not None and not model_field.primary_key:
            setattr(instance, attname, None if value is None else model_field.to_python(value))
    return instance


def submit(state: AuthState, params: Mapping[str, object], callback_url: str) -> Submitted:
    """Check the sign-up form in *params*; mail its address; sign in at once or wait.

    :class:`Invalid` for a form with errors (or refused by the ``signup``
    limit); :class:`Waiting` with ``verify_email``, and without it when the
    address or username is taken; :class:`Redeemed` for a new user signed in
    at once (``verify_email=False``). Before anything is read or counted,
    ``ChallengeFailed`` when the bot challenge guards ``signup`` and the
    request did not pass it (:func:`webauth.challenges.require`).
    """
    config = state.config
    if config.challenge is not None:
        challenges.require(state, "signup", params)
    form_class = signup_form_class(config.passwords.signup_form)
    form = form_class(data=_form_data(params, form_class))
    model = get_user_model()
    email_field = model.get_email_field_name()
    if not form.is_valid():
        return Invalid(form)
    try:
        address = canonical_email(form.cleaned_data.get(email_field))
    except ValueError as exc:
        form.add_error(email_field, str(exc))
        return Invalid(form)
    # Each sign-up that would send a message, per client address and per email
    # address, new or taken alike: the limit says nothing.
    decision = ratelimit.hit(state.request, "signup", address, config=config)
    if not decision:
        limited = RateLimited("Too many sign-ups", retry_after=decision.retry_after)
        return Invalid(form, limited)
    # The password is hashed here in every case (save(commit=False) sets it).
    instance = form.save(commit=False)  # type: ignore[attr-defined]
    setattr(instance, email_field, address)
    storage = config.storage
    try:
        owner = storage.get_user_by_email(address)
    except AuthError:  # two users with the address (AmbiguousEmail): it is taken
        owner = AdapterUser(id="")
    username_field = _username_field(model)
    username = getattr(instance, username_field) if username_field else None
    username_taken = _username_taken(model, username)
    kind = "taken" if owner is not None else ("username" if username_taken else "new")
    if not config.passwords.signup_verify_email and kind == "new":
        fields = _fields_of(form, instance)
        return _sign_in_now(state, address, fields, callback_url)
    held = _grant(state, address, _fields_of(form, instance), callback_url, kind)
    if kind != "new":
        emit(
            config,
            "signup",
            sender=_provider_id(config),
            user=None,
            email=address,
            request=state.request,
        )
    if not config.passwords.signup_verify_email:
        return Waiting(address, None, code=False)
    return Waiting(address, held, code=True)


def _sign_in_now(
    state: AuthState, address: str, fields: dict[str, str | None], callback_url: str
) -> Submitted:
    """``verify_email=False``: the user made and signed in, its address unproven."""
    attempt = SignupAttempt(
        provider_id=_provider_id(state.config),
        callback_url=callback_url,
        identifier=address,
        fields=fields,
        verified=False,
    )
    try:
        return Redeemed(complete(state, attempt, browser=not state.bearer), callback_url)
    except _Collided as exc:
        # Taken a moment ago by another request: answered as any taken one.
        kind = "taken" if exc.field is None else "username"
        _grant(state, address, fields, callback_url, kind)
        emit(
            state.config,
            "signup",
            sender=_provider_id(state.config),
            user=None,
            email=address,
            request=state.request,
        )
        return Waiting(address, None, code=False)


def _provider_id(config: Config) -> str:
    provider = credentials_provider(config)
    return provider.id if provider is not None else "credentials"


def _grant(
    state: AuthState,
    address: str,
    fields: dict[str, str | None],
    callback_url: str,
    kind: str,
) -> Held:
    """Store a grant for *address* and mail it (*kind*: ``new``, ``taken`` or ``username``).

    The same work whatever *kind*: a grant is stored for a taken address
    too (its code reaches nobody), and the message is rendered and sent from
    a background thread in every case.
    """
    config = state.config
    email = grant_email(config)
    token, code = email.new_token(), email.new_code()
    assert code is not None  # grant_email() only picks an email provider that sends codes
    binding = secrets.token_urlsafe(32)
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=email.max_age)
    identifier = grant_identifier(address)
    config.storage.replace_verification_token(
        VerificationToken(
            identifier=identifier,
            token=grant_hash(email, token, binding, config.secret),
            expires=expires,
            code=grant_hash(email, code, binding, config.secret),
        )
    )
    held = Held(
        identifier=address,
        fields=fields,
        callback_url=callback_url,
        binding=binding,
        expires=int(expires.timestamp()),
        link=link_fingerprint(token),
    )
    url = f"{state.base_url}/signup?" + urlencode({"token": token, "email": address})
    context = {
        "host": state.request.get_host(),
        "url": url,
        "code": email.display_code(code),
        "minutes": max(1, math.ceil(email.max_age / 60)),
        "signin_url": state.page_url("signin"),
        "signup_url": f"{state.base_url}/signup",
        "username": fields.get(_username_attname() or "") or "",
        "username_taken": kind == "username",
        "verify": config.passwords.signup_verify_email,
        "theme": asdict(config.theme),
    }
    template = "signup_taken" if kind == "taken" else "signup"
    _mail_later(config, template, context, email.sender, address)
    return held


def _username_attname() -> str | None:
    model = get_user_model()
    name = _username_field(model)
    return str(getattr(model._meta.get_field(name), "attname", name)) if name else None


# -- the message, sent from a thread ----------------------------------------------------------

_mailers: set[threading.Thread] = set()
_mailers_lock = threading.Lock()


def _mail_later(
    config: Config, template: str, context: dict[str, object], sender: str, address: str
) -> None:
    """Render and send the message in a thread of its own, whatever it says.

    So that the request's time does not depend on which message it is, nor
    on the mail server. A message that cannot be sent is logged.
    """
    language = translation.get_language()
    thread = threading.Thread(
        target=_send,
        args=(config, template, context, sender or settings.DEFAULT_FROM_EMAIL, address, language),
        name="webauth-signup-mail",
        daemon=True,
    )
    with _mailers_lock:
        _mailers.add(thread)
    thread.start()


def _send(
    config: Config,
    template: str,
    context: dict[str, object],
    sender: str,
    address: str,
    language: str | None,
) -> None:
    try:
        with translation.override(language):
            message = mail.message(template, context, sender, address)
        message.send(fail_silently=False)
    except Exception as exc:  # the answer is given already: a lost message is logged
        config.logger.error(AuthError("The sign-up email could not be sent", cause={"err": exc}))
    finally:
        with _mailers_lock:
            _mailers.discard(threading.current_thread())


def wait_for_mail(timeout: float = 10.0) -> None:
    """Wait until the sign-up messages being sent have gone (for tests and scripts)."""
    deadline = time.monotonic() + timeout
    while True:
        with _mailers_lock:
            threads = list(_mailers)
        if not threads:
            return
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if time.monotonic() >= deadline:
            return


# -- proving the address ----------------------------------------------------------------------


def _same_link(held: Held, token: str) -> bool:
    return hmac.compare_digest(link_fingerprint(token).encode(), held.link.encode())


def open_link(held: Held | None, params: Mapping[str, object]) -> bool:
    """Whether the link in *params* is the one *held* was mailed (nothing is looked up)."""
    token = params.get("token")
    if held is None or not isinstance(token, str) or not token or len(token) > 256:
        return False
    return params.get("email") == held.identifier and _same_link(held, token)


def redeem_link(state: AuthState, held: Held, token: object) -> Redeemed | Taken | None:
    """The confirmation page's button: *token* uses up the grant; ``None`` when it cannot."""
    if not isinstance(token, str) or not token or len(token) > 256 or not _same_link(held, token):
        return None
    config = state.config
    email = grant_email(config)
    record = config.storage.use_verification_token(
        grant_identifier(held.identifier), grant_hash(email, token, held.binding, config.secret)
    )
    if record is None or aware(record.expires) <= datetime.now(UTC):
        return None
    return _create(state, held)


def redeem_code(state: AuthState, held: Held, typed: object) -> Redeemed | Taken | None:
    """The code typed: ``None`` when it is wrong (counted: ``code_failed``, the grant's attempts).

    Raises ``RateLimited`` beyond ``code_failed``.
    """
    config = state.config
    email = grant_email(config)
    right = use_code(
        state.request,
        config,
        config.storage,
        email,
        grant_identifier(held.identifier),
        typed,
        held.binding,
    )
    return _create(state, held) if right else None


def _create(state: AuthState, held: Held) -> Redeemed | Taken:
    attempt = SignupAttempt(
        provider_id=_provider_id(state.config),
        callback_url=held.callback_url,
        identifier=held.identifier,
        fields=held.fields,
        verified=True,
    )
    try:
        return Redeemed(complete(state, attempt, browser=not state.bearer), held.callback_url)
    except _Collided as exc:
        return Taken(held.identifier, exc.field, held)


def code_attempts_left(config: Config, held: Held) -> int:
    """Wrong codes this browser may still type (what the page shows)."""
    return max(grant_email(config).code_max_attempts - held.attempts, 0)


# -- the new user --------------------------------------------------------------------------------


class _Collided(Exception):
    """The address (``field`` ``None``) or the username (its field) was taken as it was stored."""

    def __init__(self, field: str | None) -> None:
        super().__init__(field)
        self.field = field


@dataclass(slots=True)
class SignupAttempt(Attempt):
    """A sign-up to store: the user made through the adapter, then signed in as any sign-in.

    ``verified``: the address was just proven (``email_verified`` set), else
    it is marked unproven.
    """

    provider_id: str
    callback_url: str
    identifier: str
    fields: Mapping[str, str | None]
    verified: bool
    amr: tuple[str, ...] = ("pwd",)
    stand_in: AdapterUser = field(default_factory=lambda: AdapterUser(id=str(uuid.uuid4())))

    def __post_init__(self) -> None:
        self.stand_in = AdapterUser(id=self.stand_in.id, email=self.identifier)

    def _account(self, user_id: str) -> dict[str, object]:
        return {"providerAccountId": user_id, "type": "credentials", "provider": self.provider_id}

    def sign_in_params(self) -> dict[str, object]:
        # The user does not exist yet: the sign_in callback sees a stand-in, as
        # for a new user's first email sign-in.
        return {"user": self.stand_in, "account": self._account(self.stand_in.id)}

    def store(self, state: AuthState) -> SignedIn:
        """Create the user (``EmailInUse``/``UsernameInUse``: :class:`_Collided`)."""
        config = state.config
        storage = config.storage
        instance = _instance_of(self.fields)
        now = datetime.now(UTC) if self.verified else None
        record = AdapterUser(id="", email=self.identifier, email_verified=now, instance=instance)
        try:
            created = storage.create_user(record)
        except EmailInUse:
            raise _Collided(None) from None
        except UsernameInUse:
            raise _Collided(get_user_model().USERNAME_FIELD) from None
        assert created is not None
        if not self.verified:
            # As a passkey registration's: the first person to prove the
            # address by email takes it over (docs/passkeys.md).
            storage.mark_email_unproven(created.id)
        user = created.instance if created.instance is not None else created
        signal: SignalSender = {"sender": self.provider_id, "request": state.request}
        emit(config, "create_user", **signal, user=created)
        emit(config, "signup", **signal, user=user, email=self.identifier)
        user_dict = user_to_dict(user)
        return SignedIn(
            user=user, user_dict=user_dict, account=self._account(created.id), is_new_user=True
        )


# -- the app's token -----------------------------------------------------------------------------


def app_token(config: Config, held: Held) -> str:
    """The ``signupToken`` an app keeps until it sends the code back."""
    return seal(config, held, APP_SALT)


def from_app_token(config: Config, value: object) -> Held | None:
    """The sign-up an app's ``signupToken`` holds, or ``None``."""
    return unseal(config, value, APP_SALT)
