"""The WebAuthn flow: passkey registration and sign-in, with single-use challenges.

Two routes, as Auth.js has them (protocol section 8):

``GET /auth/webauthn-options/<id>`` (:func:`options`) decides between
registration and authentication as Auth.js does (``action=register|authenticate``,
``email`` for a new user), and answers ``{"action": ..., "options": {...}}``:
the options py_webauthn generated, in the JSON form browsers parse
(``PublicKeyCredential.parseCreationOptionsFromJSON``).

``POST /auth/callback/<id>`` (:func:`callback`) takes ``action`` and ``data``
(the browser's credential, ``credential.toJSON()``, as a JSON string), verifies
it with py_webauthn, and signs in through :func:`~webauth.flows.signin.finish`
with a :class:`WebAuthnAttempt`.

Where webauth differs from Auth.js, and why:

* **A challenge is used once, by the browser that asked.** Auth.js keeps the
  challenge only in an encrypted cookie, so a captured assertion can be
  replayed for the cookie's 15 minutes. Here the challenge (32 random bytes)
  is stored through the adapter (``create_webauthn_challenge``), bound to the
  ceremony and to a random *binding* value that only the asking browser's
  challenge cookie holds. The callback reads the challenge from the response's
  client data and consumes it (``use_webauthn_challenge``: one conditional
  DELETE decides, so of any number of concurrent replays exactly one finds it)
  **before** any signature is verified; a replay, a response for another
  browser's challenge or another ceremony's, and a missing cookie all find
  nothing.
* **Passwordless means user verification**: the server refuses a response
  whose authenticator did not verify the person (``require_user_verification``,
  default on), and a :class:`~webauth.providers.Passkey` asks for a
  discoverable credential.
* **The signature counter is updated atomically** (``update_authenticator_counter``
  refuses a counter that does not go up, 0/0 allowed for synced passkeys), so a
  cloned authenticator cannot sign in between two reads.
* **One opaque user handle per user** (``get_user_handle``), never the primary
  key, so the browser keeps a user's passkeys together; an unknown credential
  gets an answer the script passes to ``PublicKeyCredential.signalUnknownCredential``.
* Failures land on the error page with ``WebAuthnVerificationError``; a JSON
  client (``X-Auth-Return-Redirect`` or ``Accept: application/json``) gets
  ``400 {"error": "WebAuthnVerificationError", "url": ...}`` instead.

Nothing here logs a challenge, a binding or a credential.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import json
import secrets
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import (
    base64url_to_bytes,
    bytes_to_base64url,
    options_to_json_dict,
    parse_authentication_credential_json,
    parse_client_data_json,
    parse_registration_credential_json,
)
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    AuthenticatorTransport,
    CredentialDeviceType,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from .. import cookies as ck
from .. import jwt as jose
from .. import ratelimit
from ..clients import reads_json
from ..errors import (
    AccountNotLinked,
    AuthError,
    EmailInUse,
    ExperimentalFeatureNotEnabled,
    RateLimited,
    WebAuthnVerificationError,
)
from ..events import emit
from ..identity import canonical_email
from ..providers.webauthn import RelyingParty, WebAuthn
from ..responses import json_response, redirect
from ..types import (
    AdapterAccount,
    AdapterAuthenticator,
    AdapterUser,
    WebAuthnChallenge,
)
from ..typing_aliases import SignalSender
from ..utils import aware
from .accounts import create_and_link, current_user
from .signin import Attempt, SignedIn, finish

if TYPE_CHECKING:
    from django.http import HttpResponse, HttpResponseBase

    from ..adapters.storage import Storage
    from ..providers.base import Provider
    from ..state import AuthState

__all__ = [
    "BINDING_LENGTHS",
    "CHALLENGE_COOKIE",
    "INVALID_ACTION",
    "INVALID_REQUEST",
    "MAX_CREDENTIAL_LENGTH",
    "MFA_HANDLE_PREFIX",
    "WEBAUTHN_METHODS",
    "Prepared",
    "UnknownCredential",
    "WebAuthnAttempt",
    "callback",
    "descriptor",
    "options",
    "prepare",
    "read_credential",
    "refusal",
    "require_enabled",
    "setup_mismatch",
    "verify",
]

#: The adapter methods passkey sign-in and registration call (its entry's
#: ``adapter_methods`` in :data:`webauth.flows.FLOWS`): Auth.js's eight,
#: single-use challenges and user handles, ``get_user_by_email`` for the
#: linking rule, and a new user's address unproven until its owner signs in by email.
WEBAUTHN_METHODS: tuple[str, ...] = (
    "create_webauthn_challenge",
    "use_webauthn_challenge",
    "get_user_handle",
    "get_authenticator",
    "list_authenticators_by_user_id",
    "update_authenticator_counter",
    "create_authenticator",
    "get_account",
    "get_user",
    "get_user_by_email",
    "create_user",
    "link_account",
    "mark_email_unproven",
    "prove_email",
)

#: The challenge cookie's key in ``AuthState.cookies`` (``authjs.challenge``).
CHALLENGE_COOKIE = "webauthn_challenge"

#: The longest ``data`` (a credential as JSON) the callback reads. A registration
#: with a full attestation certificate chain is a few kilobytes.
MAX_CREDENTIAL_LENGTH = 64 * 1024

_CEREMONIES = frozenset({"register", "authenticate"})
#: Auth.js's answers to options it cannot give: an unknown action, an undecidable request.
INVALID_ACTION = "Invalid action"
INVALID_REQUEST = "Invalid request"
# As SimpleWebAuthn names them, and so Auth.js stores them (py_webauthn says
# "single_device" / "multi_device").
_DEVICE_TYPES = {
    CredentialDeviceType.SINGLE_DEVICE: "singleDevice",
    CredentialDeviceType.MULTI_DEVICE: "multiDevice",
}
_CHALLENGE_BYTES = 32
#: The lengths a binding may have (a new one is 43 characters: 32 random bytes).
BINDING_LENGTHS = range(32, 129)
_USER_HANDLE_BYTES = 64
#: How the user handle of a security key added as a second factor
#: (:mod:`webauth.mfa.keys`) begins: such a key never signs in as a passkey,
#: and a browser that offers it anyway is not told to forget it.
MFA_HANDLE_PREFIX = b"webauth-mfa:"


class UnknownCredential(WebAuthnVerificationError):
    """A sign-in with a credential the site does not know (its type stays Auth.js's).

    ``rp_id`` and ``credential_id`` (base64url) go into the JSON answer, so that
    the browser can forget the credential (``signalUnknownCredential``).
    """

    def __init__(self, message: str, *, rp_id: str, credential_id: str) -> None:
        super().__init__(message)
        self.rp_id = rp_id
        self.credential_id = credential_id


# -- shared pieces ----------------------------------------------------------------------------


def require_enabled(state: AuthState) -> None:
    """Raise ``ExperimentalFeatureNotEnabled`` unless ``experimental.enable_webauthn`` is on."""
    if not state.config.experimental.get("enable_webauthn"):
        raise ExperimentalFeatureNotEnabled(
            "WebAuthn is an experimental feature. To enable it, set "
            "WEBAUTH['experimental'] = {'enable_webauthn': True}"
        )


def _b64(value: bytes) -> str:
    # How Auth.js stores credential ids and public keys: standard, padded base64.
    return base64.b64encode(value).decode("ascii")


def _unb64(value: str) -> bytes:
    return base64.b64decode(value.encode("ascii"), validate=True)


def _account(provider_id: str, credential_id: str, user_id: str) -> dict[str, object]:
    return {
        "providerAccountId": credential_id,
        "userId": user_id,
        "type": "webauthn",
        "provider": provider_id,
    }


# -- the challenge cookie: which browser asked ----------------------------------------------------


def _read_binding(state: AuthState, provider: WebAuthn) -> str | None:
    """The binding value of the request's challenge cookie for *provider*, or ``None``."""
    spec = state.cookies[CHALLENGE_COOKIE]
    raw = state.request_cookies.get(spec.name)
    if not raw:
        return None
    payload = jose.decode(token=ck.decode_value(raw), secret=state.config.secret, salt=spec.name)
    if payload is None or payload.get("provider") != provider.id:
        return None
    binding = payload.get("binding")
    return binding if isinstance(binding, str) and len(binding) in BINDING_LENGTHS else None


def _write_binding(
    state: AuthState, response: HttpResponseBase, provider: WebAuthn, binding: str
) -> None:
    spec = state.cookies[CHALLENGE_COOKIE]
    value = jose.encode(
        token={"binding": binding, "provider": provider.id},
        secret=list(state.config.secret),
        salt=spec.name,
        max_age=spec.max_age or ck.CHECK_MAX_AGE,
    )
    ck.set_cookie(response, spec, value)


def _clear_binding(state: AuthState, response: HttpResponseBase) -> None:
    spec = state.cookies[CHALLENGE_COOKIE]
    if spec.name in state.request_cookies:
        ck.delete_cookie(response, spec)


# -- GET /auth/webauthn-options/<id> --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _UserInfo:
    """Who the options are for (Auth.js's ``getUserInfo``): a user, and whether it exists."""

    user: AdapterUser
    exists: bool


def _user_info(
    storage: Storage, signed_in: AdapterUser | None, params: Mapping[str, object]
) -> _UserInfo | None:
    if signed_in is not None:
        return _UserInfo(signed_in, exists=True)
    try:
        email = canonical_email(params.get("email"))
    except ValueError:
        return None
    existing = storage.get_user_by_email(email)
    if existing is not None:
        return _UserInfo(existing, exists=True)
    return _UserInfo(AdapterUser(id="", email=email), exists=False)


def _decide(action: str | None, signed_in: bool, info: _UserInfo | None) -> str | None:
    """Protocol 8.1: register, authenticate, or ``None`` (undecidable: "Invalid request")."""
    if action == "authenticate":
        return "authenticate"
    if action == "register":
        # A signed-in user adds a passkey; a visitor registers with a new address.
        if info is not None and signed_in == info.exists:
            return "register"
        return None
    if signed_in:
        return None  # a signed-in user must say what they want
    if info is None or info.exists:
        return "authenticate"
    return "register"


def descriptor(credential_id: bytes, transports: Iterable[str]) -> PublicKeyCredentialDescriptor:
    """A credential for ``allowCredentials`` / ``excludeCredentials``, with its known transports.

    Shared by passkeys and security keys; a transport name this version of
    WebAuthn does not know is left out, not refused.
    """
    known = []
    for name in transports:
        try:
            known.append(AuthenticatorTransport(name.strip()))
        except ValueError:
            continue
    return PublicKeyCredentialDescriptor(id=credential_id, transports=known or None)


def _descriptors(storage: Storage, user_id: str) -> list[PublicKeyCredentialDescriptor]:
    """The user's credentials, for ``allowCredentials`` / ``excludeCredentials``."""
    descriptors = []
    for record in storage.list_authenticators_by_user_id(user_id):
        try:
            credential_id = _unb64(record.credential_id)
        except (binascii.Error, ValueError):
            continue
        descriptors.append(descriptor(credential_id, (record.transports or "").split(",")))
    return descriptors


def options(
    state: AuthState, provider: Provider, params: Mapping[str, object], callback_url: str
) -> HttpResponse:
    """Answer Auth.js's ``{"action", "options"}`` and store the challenge it carries.

    ``400 {"error": "Invalid action"}`` for an ``action`` other than ``register``
    or ``authenticate``; ``400 {"error": "Invalid request"}`` when the request
    cannot be decided (a visitor asking to register an address that has an
    account, a signed-in user without an action); ``429`` beyond
    ``passkey_options``.
    """
    wa = cast(WebAuthn, provider)
    try:
        prepared = prepare(state, wa, params, _read_binding(state, wa))
    except RateLimited as exc:
        state.config.logger.error(exc)
        return ratelimit.limited_response(exc.retry_after)
    if not isinstance(prepared, Prepared):
        return json_response({"error": prepared}, status=400, no_cache=True)
    answer = {"action": prepared.action, "options": prepared.options}
    response = json_response(answer, no_cache=True)
    response["Cache-Control"] = "no-store"
    _write_binding(state, response, wa, prepared.binding)
    return response


@dataclass(frozen=True, slots=True)
class Prepared:
    """A ceremony's options, its challenge stored under *binding*."""

    action: str
    options: dict[str, object]
    binding: str


def prepare(
    state: AuthState, wa: WebAuthn, params: Mapping[str, object], binding: str | None
) -> Prepared | str:
    """The work of :func:`options` without its cookie, shared with the app sign-in.

    The challenge is stored under *binding* (the asking client's, or a new one
    when ``None``). Returns the options, or Auth.js's reason for a ``400``
    (``"Invalid action"``, ``"Invalid request"``); raises ``RateLimited``
    beyond ``passkey_options``.
    """
    require_enabled(state)
    storage = state.config.storage.require(*WEBAUTHN_METHODS, feature="WebAuthn")
    config = state.config
    decision = ratelimit.hit(state.request, "passkey_options", config=config)
    if not decision:
        raise RateLimited("Too many passkey options requests", retry_after=decision.retry_after)
    action = params.get("action") or None
    if action is not None and action not in _CEREMONIES:
        return INVALID_ACTION
    signed_in = current_user(state)
    info = _user_info(storage, signed_in, params)
    ceremony = _decide(action, signed_in is not None, info)
    if ceremony is None or (ceremony == "register" and info is None):
        return INVALID_REQUEST

    rp = wa.relying_party_for(state.origin)
    challenge = secrets.token_bytes(_CHALLENGE_BYTES)
    user_data: dict[str, object] | None = None
    if ceremony == "authenticate":
        known = info.user if info is not None and info.exists else None
        generated: Any = generate_authentication_options(
            rp_id=rp.id,
            challenge=challenge,
            timeout=wa.timeout_ms,
            allow_credentials=_descriptors(storage, known.id) if known is not None else None,
            user_verification=UserVerificationRequirement(wa.user_verification),
        )
        answer = options_to_json_dict(generated)
    else:
        assert info is not None
        user = info.user
        handle = None
        if signed_in is not None:
            handle = storage.get_user_handle(signed_in.id, False)
        if not isinstance(handle, str) or not handle:
            handle = bytes_to_base64url(secrets.token_bytes(_USER_HANDLE_BYTES))
        user_name = user.email or user.name or rp.name
        generated = generate_registration_options(
            rp_id=rp.id,
            rp_name=rp.name,
            user_name=user_name,
            user_id=base64url_to_bytes(handle),
            user_display_name=user.name or user_name,
            challenge=challenge,
            timeout=wa.timeout_ms,
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement(wa.resident_key),
                user_verification=UserVerificationRequirement(wa.user_verification),
            ),
            exclude_credentials=_descriptors(storage, signed_in.id) if signed_in else None,
        )
        answer = options_to_json_dict(generated)
        # Ask the browser whether the credential is discoverable (credProps), as
        # SimpleWebAuthn does for Auth.js: the callback refuses a "no" when the
        # provider requires one.
        answer["extensions"] = {"credProps": True}
        user_data = {"handle": handle}
        if signed_in is not None:
            user_data["user_id"] = signed_in.id
        else:
            user_data["email"] = user.email

    # The browser's binding: kept when it has one (several tabs may each have a
    # ceremony under way), else a new one; only its hash is stored.
    binding = binding or secrets.token_urlsafe(32)
    storage.create_webauthn_challenge(
        WebAuthnChallenge(
            challenge=bytes_to_base64url(challenge),
            ceremony=ceremony,
            binding=binding,
            user_data=user_data,
            expires=datetime.now(UTC) + timedelta(seconds=wa.timeout),
        ),
    )
    return Prepared(action=ceremony, options=answer, binding=binding)


# -- POST /auth/callback/<id> --------------------------------------------------------------------


def callback(
    state: AuthState, provider: Provider, params: Mapping[str, object], callback_url: str
) -> HttpResponse:
    """Verify the browser's credential and sign in (or register and sign in).

    Every failure of verification answers ``WebAuthnVerificationError``
    (:func:`_refused`); an attempt counts against ``passkey_failed`` and is
    given back on success.
    """
    wa = cast(WebAuthn, provider)
    try:
        attempt, decision = verify(state, wa, params, _read_binding(state, wa), callback_url)
    except WebAuthnVerificationError as exc:
        return _refused(state, exc)
    response = finish(state, attempt)
    ratelimit.refund(decision)
    _clear_binding(state, response)
    return response


def verify(
    state: AuthState,
    wa: WebAuthn,
    params: Mapping[str, object],
    binding: str | None,
    callback_url: str,
) -> tuple[WebAuthnAttempt, ratelimit.Decision]:
    """Verify ``params["data"]`` against the challenge stored under *binding*.

    The work of :func:`callback` before its sign-in, shared with the app
    sign-in: the attempt, and the ``passkey_failed`` count to give back once
    the sign-in succeeds. Raises ``WebAuthnVerificationError`` (or
    :class:`UnknownCredential`) for a response that does not verify, and
    ``RateLimited`` beyond ``passkey_failed``.
    """
    require_enabled(state)
    storage = state.config.storage.require(*WEBAUTHN_METHODS, feature="WebAuthn")
    action = params.get("action")
    if action not in _CEREMONIES:
        # Auth.js: "Invalid action parameter" (a configuration error).
        raise AuthError("Invalid action parameter")
    decision = ratelimit.hit(state.request, "passkey_failed", config=state.config)
    if not decision:
        raise RateLimited("Too many passkey attempts", retry_after=decision.retry_after)
    attempt = _verify(state, storage, wa, action, params.get("data"), binding, callback_url)
    return attempt, decision


def _refused(state: AuthState, exc: WebAuthnVerificationError) -> HttpResponse:
    """The error page, or ``400`` JSON for the script and Auth.js's clients."""
    state.config.logger.error(exc)
    url = state.page_url("error", {"error": "WebAuthnVerificationError"})
    response: HttpResponse
    if reads_json(state.request):
        body: dict[str, object] = {"error": "WebAuthnVerificationError", "url": url}
        if isinstance(exc, UnknownCredential):
            body["unknownCredential"] = {"rpId": exc.rp_id, "credentialId": exc.credential_id}
        response = json_response(body, status=400, no_cache=True)
    else:
        response = redirect(url)
    _clear_binding(state, response)
    return response


def setup_mismatch(exc: BaseException) -> bool:
    """Whether py_webauthn refused a response for the relying party's set-up.

    An origin or RP id the configuration does not allow fails every passkey of
    the site (``relying_party`` is wrong: an error to fix); a bad signature, no
    user verification or a counter that went back is this response's fault.
    """
    text = str(exc)
    return text.startswith(("Unexpected client data origin", "Unexpected RP ID hash"))


@contextlib.contextmanager
def refusal(what: str) -> Iterator[None]:
    """Turn py_webauthn's refusal of a response (each check raises its own class)
    into ``WebAuthnVerificationError("<what> was refused: ...")``, the user's
    fault unless the relying party's set-up is (:func:`setup_mismatch`)."""
    try:
        yield
    except Exception as exc:
        raise WebAuthnVerificationError(
            f"{what} was refused: {exc}", cause={"err": exc}, user_caused=not setup_mismatch(exc)
        ) from exc


def read_credential(action: str, data: Any) -> tuple[dict[str, object], Any, Any]:
    """The credential's JSON, py_webauthn's reading of it, and its client data.

    ``data`` is a JSON string, as Auth.js's client sends it; a JSON body may
    also carry the object itself.
    """
    if isinstance(data, Mapping):
        data = json.dumps(data)
    if not isinstance(data, str) or not data or len(data) > MAX_CREDENTIAL_LENGTH:
        raise WebAuthnVerificationError("The request carries no credential")
    try:
        raw = json.loads(data)
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        if action == "authenticate":
            credential: Any = parse_authentication_credential_json(raw)
        else:
            credential = parse_registration_credential_json(raw)
        client_data = parse_client_data_json(credential.response.client_data_json)
    except Exception as exc:  # py_webauthn, json and base64 each raise their own
        raise WebAuthnVerificationError(
            "The credential could not be read", cause={"err": exc}
        ) from exc
    return raw, credential, client_data


def _verify(
    state: AuthState,
    storage: Storage,
    wa: WebAuthn,
    action: str,
    data: Any,
    binding: str | None,
    callback_url: str,
) -> WebAuthnAttempt:
    raw, credential, client_data = read_credential(action, data)
    if binding is None:
        raise WebAuthnVerificationError(
            "No challenge cookie or binding: the options were not asked by this client"
        )
    # Consumed before any signature is checked: whatever happens next, this
    # challenge is spent, and a second use (a replay) finds nothing.
    record = storage.use_webauthn_challenge(
        bytes_to_base64url(client_data.challenge), action, binding
    )
    if record is None or aware(record.expires) <= datetime.now(UTC):
        raise WebAuthnVerificationError(
            "The challenge is unknown, used, expired, or was made for another browser"
        )
    rp = wa.relying_party_for(state.origin)
    expected = base64url_to_bytes(record.challenge)
    if action == "authenticate":
        return _authenticate(state, storage, wa, rp, credential, expected, callback_url)
    return _register(state, storage, wa, rp, raw, credential, record, expected, callback_url)


def _authenticate(
    state: AuthState,
    storage: Storage,
    wa: WebAuthn,
    rp: RelyingParty,
    credential: Any,
    expected_challenge: bytes,
    callback_url: str,
) -> WebAuthnAttempt:
    credential_id = _b64(credential.raw_id)
    stored = storage.get_authenticator(credential_id)
    presented = credential.response.user_handle
    if stored is None and presented and bytes(presented).startswith(MFA_HANDLE_PREFIX):
        # A discoverable security key the user added as a second factor: not a
        # passkey, but no "unknown credential" either (the browser would delete it).
        raise WebAuthnVerificationError("A second-factor security key is not a passkey")
    if stored is None:
        raise UnknownCredential(
            "The passkey is not registered here",
            rp_id=rp.id,
            credential_id=bytes_to_base64url(credential.raw_id),
        )
    with refusal("The passkey's assertion"):
        verified = verify_authentication_response(
            credential=credential,
            expected_challenge=expected_challenge,
            credential_public_key=_unb64(stored.credential_public_key),
            credential_current_sign_count=int(stored.counter),
            require_user_verification=wa.require_user_verification,
            **rp.expected,
        )
    # A discoverable credential names its user: it must be the passkey's owner
    # (a handle stored for another user means a credential moved between users).
    if presented:
        stored_handle = storage.get_user_handle(stored.user_id, False)
        if isinstance(stored_handle, str) and not hmac.compare_digest(
            base64url_to_bytes(stored_handle), bytes(presented)
        ):
            raise WebAuthnVerificationError("The passkey's user handle is not its owner's")
    # The adapter refuses a counter that did not go up (a cloned authenticator,
    # or a concurrent use of the same count): one conditional UPDATE decides.
    updated = storage.update_authenticator_counter(credential_id, verified.new_sign_count)
    if updated is None:
        raise WebAuthnVerificationError("The passkey's signature counter did not go up")
    backed_up = bool(verified.credential_backed_up)
    if backed_up != bool(stored.credential_backed_up) and storage.has(
        "update_authenticator_backup_state"
    ):
        # Backup state may change over a passkey's life (a password manager
        # starts syncing it); the list of passkeys shows the current one.
        storage.update_authenticator_backup_state(credential_id, backed_up)
    user = storage.get_user(stored.user_id)
    if user is None:
        raise WebAuthnVerificationError("The passkey's user no longer exists")
    account = AdapterAccount(
        user_id=user.id,
        type="webauthn",
        provider=wa.id,
        provider_account_id=stored.provider_account_id or credential_id,
    )
    return WebAuthnAttempt(
        provider_id=wa.id,
        callback_url=callback_url,
        account=account,
        user=user,
        user_verified=wa.require_user_verification,
    )


def _register(
    state: AuthState,
    storage: Storage,
    wa: WebAuthn,
    rp: RelyingParty,
    raw: Mapping[str, object],
    credential: Any,
    record: WebAuthnChallenge,
    expected_challenge: bytes,
    callback_url: str,
) -> WebAuthnAttempt:
    with refusal("The passkey's registration"):
        verified = verify_registration_response(
            credential=credential,
            expected_challenge=expected_challenge,
            require_user_verification=wa.require_user_verification,
            **rp.expected,
        )
    if wa.resident_key == "required" and _says_not_discoverable(raw):
        raise WebAuthnVerificationError("The authenticator made no discoverable credential")

    user_data = record.user_data if isinstance(record.user_data, Mapping) else {}
    handle = user_data.get("handle")
    if not isinstance(handle, str) or not handle:
        raise WebAuthnVerificationError("The registration challenge carries no user handle")
    signed_in = current_user(state)
    owner_id = user_data.get("user_id")
    email = user_data.get("email")
    if owner_id is not None:
        # Asked by a signed-in user: only that user, still signed in, may finish.
        if signed_in is None or str(signed_in.id) != str(owner_id):
            raise WebAuthnVerificationError("The passkey was asked for by another session")
    elif not isinstance(email, str) or not email:
        raise WebAuthnVerificationError("The registration challenge carries no address")
    elif signed_in is not None:
        raise WebAuthnVerificationError("A new account's passkey was asked for before sign-in")

    credential_id = _b64(verified.credential_id)
    if storage.get_authenticator(credential_id) is not None:
        raise WebAuthnVerificationError("This passkey is already registered")
    transports = credential.response.transports or []
    # A signed-in user's new passkey: its default name told apart from theirs.
    taken = (
        [a.name for a in storage.list_authenticators_by_user_id(signed_in.id)]
        if signed_in is not None and storage.has("list_authenticators_by_user_id")
        else []
    )
    authenticator = AdapterAuthenticator(
        credential_id=credential_id,
        user_id="",
        provider_account_id=credential_id,
        credential_public_key=_b64(verified.credential_public_key),
        counter=int(verified.sign_count),
        credential_backed_up=bool(verified.credential_backed_up),
        credential_device_type=_DEVICE_TYPES[verified.credential_device_type],
        transports=",".join(t.value for t in transports) or None,
        name=wa.passkey_name(verified.aaguid, state.request.META.get("HTTP_USER_AGENT"), taken),
        aaguid=verified.aaguid,
        backup_eligible=verified.credential_device_type == CredentialDeviceType.MULTI_DEVICE,
    )
    account = AdapterAccount(
        user_id=signed_in.id if signed_in is not None else "",
        type="webauthn",
        provider=wa.id,
        provider_account_id=credential_id,
    )
    return WebAuthnAttempt(
        provider_id=wa.id,
        callback_url=callback_url,
        account=account,
        user=signed_in,
        authenticator=authenticator,
        email=email if signed_in is None else None,
        handle=handle,
        user_verified=wa.require_user_verification,
    )


def _says_not_discoverable(raw: Mapping[str, object]) -> bool:
    # The browser's credProps answer (clientExtensionResults.credProps.rk): False
    # means the authenticator stored no discoverable credential. Absent means the
    # browser did not say; the options' residentKey "required" already asked.
    results = raw.get("clientExtensionResults")
    props = results.get("credProps") if isinstance(results, Mapping) else None
    return isinstance(props, Mapping) and props.get("rk") is False


# -- what a verified ceremony stores -------------------------------------------------------------


@dataclass(slots=True)
class WebAuthnAttempt(Attempt):
    """A verified passkey: a sign-in with a known credential, or a registration.

    For a sign-in, *user* is the credential's user. For a registration,
    *authenticator* is the credential to store, *user* the signed-in user it is
    added to, or ``None`` for a new user with *email*; *handle* is the user
    handle the browser was given.
    """

    provider_id: str
    callback_url: str
    account: AdapterAccount
    user: AdapterUser | None = None
    authenticator: AdapterAuthenticator | None = None
    email: str | None = None
    handle: str | None = None
    #: Auth.js's stand-in for a new user, in the ``sign_in`` callback.
    stand_in: AdapterUser | None = field(default=None)
    #: The provider required user verification (``require_user_verification``).
    user_verified: bool = True

    @property
    def amr(self) -> tuple[str, ...]:  # type: ignore[override]
        """``passkey``, and ``mfa`` when user verification was required: something the
        user has, unlocked by something they are or know, is two factors."""
        return ("passkey", "mfa") if self.user_verified else ("passkey",)

    def __post_init__(self) -> None:
        if self.user is None:
            self.stand_in = AdapterUser(id=str(uuid.uuid4()), email=self.email)

    def sign_in_params(self) -> dict[str, object]:
        user = self.user or self.stand_in
        assert user is not None
        return {
            "user": user,
            "account": _account(self.provider_id, self.account.provider_account_id, user.id),
        }

    def store(self, state: AuthState) -> SignedIn:
        """Apply protocol 8.2's linking rules, then store a registration's passkey.

        A known credential signs its user in, unless the request is signed in as
        someone else (``AccountNotLinked``). A registration is added to the
        signed-in user; for a visitor, an address that has an account refuses
        (``AccountNotLinked``), else a new user and its ``webauthn`` account are
        created (both or neither), then the authenticator and the user handle.
        A failure to store the authenticator takes back what was created.
        """
        config = state.config
        signal: SignalSender = {"sender": self.provider_id, "request": state.request}
        signed_in = current_user(state)
        if self.authenticator is None:
            user = self.user
            assert user is not None
            if signed_in is not None and signed_in.id != user.id:
                raise AccountNotLinked("The passkey belongs to another user")
            return self._signed_in(user, is_new_user=False)

        # Made by a flow that required a configured adapter; never the fallback.
        storage = config.storage.require()
        known = storage.get_account(self.account.provider_account_id, self.provider_id)
        if known is not None:
            raise AccountNotLinked("The passkey is already linked to a user")
        is_new_user = False
        if self.user is not None:
            user = self.user
            account = replace(self.account, user_id=user.id)
            linked = storage.link_account(account) or account
            emit(config, "link_account", **signal, user=user, account=linked, profile=user)
            undo_method = "unlink_account"
            undo: Callable[[], object] = partial(
                storage.unlink_account, self.provider_id, account.provider_account_id
            )
        else:
            if self.email and storage.get_user_by_email(self.email) is not None:
                raise AccountNotLinked(
                    "Another account already exists with the same e-mail address"
                )
            try:
                user, linked = create_and_link(
                    storage, AdapterUser(id="", email=self.email), self.account
                )
            except EmailInUse:
                # Another request gave a new user this address a moment ago.
                raise AccountNotLinked(
                    "Another account already exists with the same e-mail address"
                ) from None
            is_new_user = True
            emit(config, "create_user", **signal, user=user)
            emit(config, "link_account", **signal, user=user, account=linked, profile=user)
            undo_method, undo = "delete_user", partial(storage.delete_user, user.id)
        try:
            self.authenticator.user_id = user.id
            storage.create_authenticator(self.authenticator)
            storage.get_user_handle(user.id, True, self.handle)
            if is_new_user:
                # Nobody has proven the address typed for this user; its owner's
                # first email sign-in removes whatever was added before
                # (flows.accounts.prove_address).
                storage.mark_email_unproven(user.id)
        except Exception:
            if storage.has(undo_method):
                # The first error is the one to report; a failed clean-up is logged.
                with contextlib.suppress(AuthError):
                    undo()
            raise
        self.user = user
        # A passkey added to the signed-in user proves no more than that session did.
        return self._signed_in(user, is_new_user=is_new_user, linked=not is_new_user)

    def _signed_in(self, user: AdapterUser, *, is_new_user: bool, linked: bool = False) -> SignedIn:
        return SignedIn(
            user=user,
            user_dict={"id": user.id, "name": user.name, "email": user.email, "image": user.image},
            account=_account(self.provider_id, self.account.provider_account_id, user.id),
            is_new_user=is_new_user,
            linked_to_session=linked,
        )
