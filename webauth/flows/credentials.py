"""The credentials flow: the project's ``authorize`` function says who signed in.

Its first half runs ``authorize(credentials, request)``: ``None`` (or a falsy
result) refuses with ``CredentialsSignin``; the user it returns is signed in as
it is, with nothing stored (as in Auth.js; webauth also gives it a database
session when that is the strategy). The rest is :func:`webauth.flows.signin.finish`.

``POST /auth/callback/<id>`` calls :func:`callback` after checking the CSRF
token; :func:`webauth.sign_in` calls it directly (Django's own CSRF protection
guards the view that calls it).

Both go through the rate limits (:mod:`webauth.ratelimit`) before ``authorize``
runs: ``signin`` counts every attempt per address; ``signin_failed`` counts
failures per address, per identifier and per both. A failure is counted before
the password is checked and given back when it turns out right, so that
concurrent guesses cannot slip past the limit between check and count. Both are
counted in one step (:func:`webauth.ratelimit.hit_many`): on Redis a refused or
failed sign-in costs one round trip, a successful one two (the refund).

A refused attempt from the built-in sign-in page keeps Auth.js's answer (a
redirect to the sign-in page with ``error=CredentialsSignin``) and leaves what
the form had in its fields that are not passwords in a short-lived encrypted
cookie (:func:`remember_form`), which the sign-in page shows once
(:func:`typed_values`): the username stays filled in, the password never is.

Timing: the limits count per identifier whether or not such a user exists, and
refuse before ``authorize`` runs, so neither the answer nor its time says which
identifiers have accounts. ``DjangoCredentials`` relies on Django's
``ModelBackend``, which runs the password hasher for an unknown username too
(``benchmarks/bench_credentials_timing.py`` measures it); a project's own
``authorize`` must do the same (docs/credentials.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from django.contrib.auth import get_user_model

from .. import challenges, ratelimit
from .. import cookies as ck
from .. import jwt as jose
from ..errors import (
    AuthError,
    CallbackRouteError,
    ChallengeFailed,
    CredentialsSignin,
    MissingAuthorize,
    RateLimited,
)
from ..providers.credentials import Credentials, DjangoCredentials
from ..responses import redirect
from ..utils import call, user_to_dict
from .signin import Attempt, SignedIn, finish

if TYPE_CHECKING:
    from django.http import HttpResponse, HttpResponseBase

    from ..providers.base import Provider
    from ..state import AuthState

__all__ = [
    "FORM_COOKIE",
    "CredentialsAttempt",
    "attempt_for",
    "authorize",
    "callback",
    "forget_form",
    "identifier",
    "refused_form",
    "remember_form",
    "typed_values",
]

#: The key in ``AuthState.cookies`` of the refused form's cookie (``authjs.signin-form``).
FORM_COOKIE = "signin_form"
#: The most characters of one field, and the most fields, the cookie keeps.
_FIELD_LIMIT = 256
_FIELDS_LIMIT = 8


@dataclass(slots=True)
class CredentialsAttempt(Attempt):
    """A user that ``authorize`` accepted."""

    amr = ("pwd",)

    provider_id: str
    callback_url: str
    user: object
    user_dict: dict[str, object]
    credentials: Mapping[str, object]

    @property
    def account(self) -> dict[str, object]:
        """Auth.js's account of a credentials sign-in: the user's id at this provider."""
        return {
            "providerAccountId": self.user_dict["id"],
            "type": "credentials",
            "provider": self.provider_id,
        }

    def sign_in_params(self) -> dict[str, object]:
        return {"user": self.user, "account": self.account, "credentials": self.credentials}

    def store(self, state: AuthState) -> SignedIn:
        # Nothing to store: the project's authorize() owns these users.
        return SignedIn(user=self.user, user_dict=self.user_dict, account=self.account)


def authorize(
    state: AuthState, provider: Credentials, credentials: Mapping[str, object]
) -> tuple[object, dict[str, object]]:
    """Run the provider's ``authorize``: ``(what it returned, its id/name/email/image)``."""
    fn = provider.authorize_function
    if fn is None:
        raise MissingAuthorize(f"Credentials provider {provider.id!r} has no authorize function")
    try:
        user = call(fn, credentials, state.request)
    except AuthError:
        raise
    except Exception as exc:
        raise CallbackRouteError(cause={"err": exc, "provider": provider.id}) from exc
    if not user:
        raise CredentialsSignin()
    user_dict = user_to_dict(user)
    if not user_dict.get("id"):
        user_dict["id"] = str(uuid.uuid4())
    return user, user_dict


#: Fields that name who is signing in, in the order they are looked for.
_IDENTIFIER_FIELDS = ("username", "email", "login", "identifier", "phone")


def identifier(provider: Credentials, params: Mapping[str, object]) -> str | None:
    """What the per-identifier limits count a sign-in attempt under, or ``None``.

    The first field, in this order, that the form filled in with a non-blank
    string: for ``DjangoCredentials``, ``username`` and the user model's
    ``USERNAME_FIELD`` (what its ``authorize`` reads); the provider's declared
    fields named ``username``, ``email``, ``login``, ``identifier`` or ``phone``;
    its other declared fields that are not passwords; then those five names
    undeclared. Declared fields come first so that an extra field a client adds
    cannot move the count away from the one ``authorize`` checks.
    """
    declared = [
        name
        for name, attrs in provider.credentials.items()
        if str(attrs.get("type", "text")) != "password"
    ]
    names: list[str] = []
    if isinstance(provider, DjangoCredentials):
        names += ["username", get_user_model().USERNAME_FIELD]
    names += [name for name in declared if name in _IDENTIFIER_FIELDS]
    names += declared
    names += _IDENTIFIER_FIELDS
    for name in dict.fromkeys(names):
        value = params.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _kept_fields(provider: Credentials) -> list[str]:
    """The declared fields a refused form may show again: every one but passwords."""
    return [
        name
        for name, attrs in provider.credentials.items()
        if str(attrs.get("type", "text")).lower() != "password"
    ][:_FIELDS_LIMIT]


def refused_form(
    state: AuthState,
    provider: Provider,
    params: Mapping[str, object],
    exc: CredentialsSignin | ChallengeFailed,
) -> HttpResponse:
    """A refused form of the built-in sign-in page (this kind's ``Flow.refused_form``).

    Auth.js's answer (the redirect to the sign-in page with
    ``error=CredentialsSignin&code=<code>``), plus the cookie that lets the page
    show the username again (:func:`remember_form`). The same for a form the
    bot challenge refused (``error=ChallengeFailed&code=<code>``).
    """
    state.config.logger.error(exc)
    response = redirect(state.page_url("signin", {"error": exc.type, "code": exc.code}))
    remember_form(state, response, provider, params)
    return response


def remember_form(
    state: AuthState, response: HttpResponseBase, provider: Provider, params: Mapping[str, object]
) -> None:
    """Keep what a refused form had in its fields other than passwords, for the page to show.

    The cookie (``authjs.signin-form``, 5 minutes, encrypted like the check
    cookies so that no one else can plant values in the page) names the
    provider. Nothing is set when no such field was filled in.
    """
    fields = _kept_fields(cast(Credentials, provider))
    values = {
        name: value[:_FIELD_LIMIT]
        for name in fields
        if isinstance(value := params.get(name), str) and value.strip()
    }
    if not values:
        return
    spec = state.cookies[FORM_COOKIE]
    token = jose.encode(
        token={"provider": provider.id, "values": values},
        secret=list(state.config.secret),
        salt=spec.name,
        max_age=spec.max_age or 300,
    )
    ck.set_cookie(response, spec, token)


def typed_values(state: AuthState) -> dict[str, dict[str, str]]:
    """What :func:`remember_form` kept: ``{provider id: {field: value}}``, or ``{}``.

    Only fields the provider declares and that are not passwords count, whatever
    the cookie says.
    """
    spec = state.cookies[FORM_COOKIE]
    raw = state.request_cookies.get(spec.name)
    if not raw:
        return {}
    payload = jose.decode(token=ck.decode_value(raw), secret=state.config.secret, salt=spec.name)
    provider_id = payload.get("provider") if payload is not None else None
    if not isinstance(provider_id, str):
        return {}
    provider = state.config.get_provider(provider_id)
    values = payload.get("values") if payload is not None else None
    if not isinstance(provider, Credentials) or not isinstance(values, dict):
        return {}
    kept = {
        name: values[name][:_FIELD_LIMIT]
        for name in _kept_fields(provider)
        if isinstance(values.get(name), str)
    }
    return {provider.id: kept} if kept else {}


def forget_form(state: AuthState, response: HttpResponseBase) -> None:
    """Delete the refused form's cookie the request carried (it is shown once)."""
    spec = state.cookies[FORM_COOKIE]
    if spec.name in state.request_cookies:
        ck.delete_cookie(response, spec)


def callback(
    state: AuthState, provider: Provider, params: Mapping[str, object], callback_url: str
) -> HttpResponse:
    """Check the submitted fields (*params*: the whole form, as Auth.js passes it) and sign in.

    Raises :class:`~webauth.errors.RateLimited` when a limit refuses the attempt.
    """
    return finish(state, attempt_for(state, provider, params, callback_url))


def attempt_for(
    state: AuthState, provider: Provider, params: Mapping[str, object], callback_url: str
) -> CredentialsAttempt:
    """The rate limits and ``authorize``: the sign-in *params* prove, before it is finished.

    Shared by :func:`callback` and the app sign-in. Raises ``ChallengeFailed``
    when the bot challenge is on and not passed (checked first: nothing is
    counted then), ``RateLimited`` when a limit refuses the attempt and
    ``CredentialsSignin`` when ``authorize`` does.
    """
    credentials_provider = cast(Credentials, provider)
    request, config = state.request, state.config
    if config.challenge is not None:
        challenges.require(state, "signin", params)
    # The attempt and its failure are counted together (one round trip on Redis).
    key = identifier(credentials_provider, params)
    attempt, failure = ratelimit.hit_many(
        request, (("signin", None), ("signin_failed", key)), config=config
    )
    if not attempt:
        raise RateLimited("Too many sign-in attempts", retry_after=attempt.retry_after)
    if not failure:
        raise RateLimited("Too many failed sign-in attempts", retry_after=failure.retry_after)
    # A refusal (CredentialsSignin) or an error leaves the failure counted.
    user, user_dict = authorize(state, credentials_provider, params)
    ratelimit.refund(failure)  # the right password: this was not a failure
    return CredentialsAttempt(
        provider_id=provider.id,
        callback_url=callback_url,
        user=user,
        user_dict=user_dict,
        credentials=params,
    )
