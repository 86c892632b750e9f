"""Errors raised by webauth, one class per Auth.js error type.

Every error is a subclass of :class:`AuthError` and carries Auth.js's type name in
``.type`` (the class name), so logs and ``?error=`` query values match Auth.js.
An optional ``.cause`` is a mapping; its ``"err"`` key, when present, is the
underlying exception.

Where an error lands when it interrupts a route:

* "sign-in kind" errors send the user back to the sign-in page with ``?error=<type>``;
* every other error goes to the error page;
* only "client-safe" errors show their own type to the user; the others are
  reported as ``error=Configuration`` and their detail stays in the server log,
  except those the visitor caused (``user_caused``: a re-opened or forged OAuth
  callback, an unknown provider in the URL), reported as ``error=SignInExpired``
  (a webauth addition: "sign-in expired, try again", not "server error").

``user_caused`` also decides how an error is logged: a warning on one line for
what a visitor did (a wrong password or code, an expired form or link, a
refused passkey, a stale callback), an error with its cause and traceback for
what the server's set-up or code did. Each type is explained in
``docs/errors.md`` (:data:`ERRORS_DOC`), which every message points to.

An error's text (``str(error)``) is always one printable line: messages often
quote what a client or a provider sent (an ``error_description``, a provider id
from the URL), and :func:`log_safe` escapes it so that it cannot forge log lines.
``error.message`` keeps the message as raised.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

__all__ = [
    "CLIENT_SAFE_ERRORS",
    "ERRORS_DOC",
    "LOG_TEXT_LIMIT",
    "PROJECT_NAME",
    "SIGN_IN_ERRORS",
    "SIGN_IN_EXPIRED",
    "AccessDenied",
    "AccountNotLinked",
    "AdapterError",
    "AmbiguousEmail",
    "AuthError",
    "CallbackRouteError",
    "ChallengeFailed",
    "CredentialsSignin",
    "DuplicateConditionalUI",
    "EmailInUse",
    "EmailSignInError",
    "ErrorPageLoop",
    "EventError",
    "ExperimentalFeatureNotEnabled",
    "InvalidCallbackUrl",
    "InvalidCheck",
    "InvalidEndpoints",
    "InvalidProvider",
    "JWTSessionError",
    "LastSignInMethod",
    "MissingAdapter",
    "MissingAdapterMethods",
    "MissingAuthorize",
    "MissingCSRF",
    "MissingSecret",
    "MissingWebAuthnAutocomplete",
    "OAuthAccountNotLinked",
    "OAuthCallbackError",
    "OAuthProfileParseError",
    "OAuthSignInError",
    "RateLimited",
    "SecondFactorExpired",
    "SecondFactorFailed",
    "SessionTokenError",
    "SignOutError",
    "TokenRefreshError",
    "UnknownAction",
    "UnsupportedStrategy",
    "UntrustedHost",
    "UsernameInUse",
    "Verification",
    "WebAuthnVerificationError",
    "checkout_doc_url",
    "doc_link",
    "error_type_for_url",
    "is_sign_in_error",
    "log_safe",
]

#: The most characters of one piece of text that :func:`log_safe` keeps.
LOG_TEXT_LIMIT = 2000

#: The page of webauth's documentation that explains every error type and warning
#: code, one heading (and so one anchor) each: what it means, what the visitor
#: sees, how to fix it. Log lines point there ("Read more at ..."), where
#: Auth.js points to errors.authjs.dev and warnings.authjs.dev.
ERRORS_DOC = "docs/errors.md"

#: The ``error=`` value of an error the visitor caused that is not client-safe
#: (a stale or forged OAuth callback, an unknown provider or route in the URL):
#: the error page says the sign-in expired and offers to try again. A webauth
#: addition; Auth.js reports these as ``Configuration``, a server error.
SIGN_IN_EXPIRED = "SignInExpired"


#: The project's name in the ``pyproject.toml`` of a checkout of webauth.
PROJECT_NAME = "django-webauth"


def checkout_doc_url(package_dir: Path) -> str | None:
    """The ``file://`` URL of :data:`ERRORS_DOC` beside *package_dir*, or ``None``.

    Only in a checkout of webauth (an editable install, tests, the example
    project): the directory above the package holds ``docs/errors.md`` and the
    ``pyproject.toml`` of :data:`PROJECT_NAME`. An installed wheel has no
    ``docs/`` beside it, and a ``docs/errors.md`` that happens to sit above a
    copied package is another project's.
    """
    root = package_dir.parent
    doc = root / ERRORS_DOC
    try:
        if not doc.is_file():
            return None
        with (root / "pyproject.toml").open("rb") as file:
            project = tomllib.load(file).get("project")
    except (OSError, ValueError):  # no pyproject.toml, unreadable, not TOML
        return None
    if not isinstance(project, dict) or project.get("name") != PROJECT_NAME:
        return None
    return doc.resolve().as_uri()


@functools.cache
def _doc_url() -> str | None:
    # Looked for once per process, at the first link asked for (not at import).
    return checkout_doc_url(Path(__file__).resolve().parent)


def doc_link(anchor: str) -> str:
    """Where *anchor* (an error type in lower case, or a warning code) is explained.

    In a checkout of webauth, a ``file://`` URL of its ``docs/errors.md`` with
    the anchor (``file:///home/me/webauth/docs/errors.md#verification``), which
    terminals and editors make clickable; otherwise, with no published
    documentation to point to, ``webauth's docs/errors.md#verification``.
    """
    url = _doc_url()
    if url is None:
        return f"webauth's {ERRORS_DOC}#{anchor}"
    # Anything but RFC 3986's unreserved characters is escaped: a terminal's link
    # detection stops at none of them (the anchors webauth writes need no escape).
    return f"{url}#{quote(anchor, safe='-._~')}"


# What Python's repr() shows for these; every other unprintable character
# becomes \xNN, \uNNNN or \UNNNNNNNN.
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def log_safe(text: object, limit: int | None = LOG_TEXT_LIMIT) -> str:
    """*text* as one printable line: safe to log whoever wrote it.

    Line breaks (``\\n``, ``\\r``, U+2028, NEL), ANSI and other control characters,
    invisible format characters (bidi overrides, zero-width) and lone surrogates
    are shown as Python-style backslash escapes (``\\n``, ``\\x1b``, ``\\u202e``);
    printable text, accented letters and other scripts included, is unchanged.
    Beyond *limit* characters the text is cut and the cut is counted
    (``... [1200 more characters]``). Backslashes are left as they are, so a
    value already shown with ``repr()`` is not escaped twice.
    """
    value = text if isinstance(text, str) else str(text)
    cut = len(value) - limit if limit is not None else 0
    if cut > 0:
        value = value[:limit]
    if not value.isprintable():
        value = "".join(c if c.isprintable() else _escape(c) for c in value)
    return f"{value}... [{cut} more characters]" if cut > 0 else value


class AuthError(Exception):
    """Base class of every webauth error.

    ``type`` is the Auth.js error type (the class name); ``cause`` an optional
    mapping whose ``"err"`` entry is the original exception. ``user_caused``
    says whether what the visitor did (typed, clicked, re-opened) caused it
    rather than the server's set-up or code: the default logger writes it as a
    one-line warning, and one that is not client-safe shows the visitor
    ``error=SignInExpired`` instead of ``Configuration``. Each class has a
    default; ``user_caused=`` decides for one error.
    """

    type: ClassVar[str] = "AuthError"
    user_caused: bool = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # Our own classes are named after Auth.js's types; a project's subclass
        # (say ``class WrongCode(CredentialsSignin)``) keeps its parent's type,
        # so routing and ``?error=`` values stay those of Auth.js.
        if cls.__module__ == __name__:
            cls.type = cls.__name__

    def __init__(
        self,
        message: str = "",
        *,
        cause: Mapping[str, object] | None = None,
        user_caused: bool | None = None,
    ) -> None:
        if isinstance(message, BaseException):  # AuthError(err): keep the original as cause
            cause = {"err": message, **(cause or {})}
            message = str(message)
        super().__init__(message)
        self.message = message
        self.cause: Mapping[str, object] | None = cause
        if user_caused is not None:
            self.user_caused = user_caused

    def __str__(self) -> str:
        # One printable line, whatever the message quotes (see log_safe).
        link = doc_link(self.type.lower())
        if not self.message:
            return f"Read more at {link}"
        text = log_safe(self.message)
        return f"{text}{' ' if text.endswith('.') else '. '}Read more at {link}"


class SignInError(AuthError):
    """Errors that send the user back to the sign-in page instead of the error page."""


class AccessDenied(AuthError):
    """The ``sign_in`` callback refused the sign-in (returned ``False`` or raised).

    ``user_caused`` when the callback said no or the user is inactive (a
    decision about this visitor), not when the callback raised (a bug).
    """


class AdapterError(AuthError):
    """An adapter method failed."""


class CallbackRouteError(AuthError):
    """An unexpected error in the callback route (for example in ``authorize``)."""


class ErrorPageLoop(AuthError):
    """The custom error page itself redirected back to the error route."""


class EventError(AuthError):
    """An event handler raised; logged, never breaks the flow."""


class InvalidCallbackUrl(AuthError):
    """A ``callbackUrl`` that is neither an http(s) URL nor a relative path."""


class CredentialsSignin(SignInError):
    """Raise from a credentials provider's ``authorize`` to refuse the sign-in.

    ``code`` is placed in the ``code`` query parameter of the sign-in page URL.
    It is shown to the user, so it must not reveal which field was wrong.
    Subclass it, or pass ``code=``, to give the client a different code.
    """

    code: str = "credentials"
    user_caused = True  # a wrong password: logged as a warning

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        cause: Mapping[str, object] | None = None,
        user_caused: bool | None = None,
    ) -> None:
        super().__init__(message, cause=cause, user_caused=user_caused)
        if code is not None:
            self.code = code


class InvalidEndpoints(AuthError):
    """An OAuth provider without an issuer or the endpoints it needs."""


class InvalidCheck(AuthError):
    """A PKCE, state or nonce check failed or its cookie was missing.

    ``user_caused`` when the state check failed: a callback URL opened again
    (after the sign-in, or after 15 minutes), replayed, forged, or finished in
    another browser than the one that started it.
    """


class JWTSessionError(AuthError):
    """The JWT session could not be read or the callbacks failed on it."""


class MissingAdapter(AuthError):
    """A feature that needs an adapter is configured without one."""


class MissingAdapterMethods(AuthError):
    """The adapter lacks methods a flow needs; the message names them."""


class MissingAuthorize(AuthError):
    """A credentials provider without an ``authorize`` function."""


class MissingSecret(AuthError):
    """No secret is configured."""


class OAuthAccountNotLinked(SignInError):
    """The OAuth account belongs to another user, or its email is taken."""

    user_caused = True


class OAuthCallbackError(SignInError):
    """The provider answered the callback with an error (the user cancelled).

    ``user_caused`` when the person said no (``access_denied`` and the like) or
    the callback was malformed, not when the provider refused the client.
    """


class OAuthProfileParseError(AuthError):
    """The provider's profile could not be mapped to a user."""


class SessionTokenError(AuthError):
    """The database session could not be read."""


class OAuthSignInError(SignInError):
    """The authorization request could not be built."""


class EmailSignInError(SignInError):
    """The sign-in email could not be sent."""


class SignOutError(AuthError):
    """Sign-out failed; the cookies are cleared all the same."""


class UnknownAction(AuthError):
    """A route/method combination webauth does not serve (``user_caused``: the URL)."""

    user_caused = True


class UnsupportedStrategy(AuthError):
    """A session strategy that the configured providers cannot use."""


class InvalidProvider(AuthError):
    """An unknown provider id, or a provider that does not support the route.

    ``user_caused`` when the provider id or method came from the URL the
    visitor opened.
    """


class UntrustedHost(AuthError):
    """The request's host is not trusted (``trust_host`` is false and no ``AUTH_URL``)."""


class Verification(AuthError):
    """A magic-link token that is unknown, used or expired, or a wrong code."""

    user_caused = True


class MissingCSRF(SignInError):
    """A state-changing request without a valid CSRF token (an expired form)."""

    user_caused = True


class AccountNotLinked(SignInError):
    """A passkey account belongs to another user, or its email is taken."""

    user_caused = True


class DuplicateConditionalUI(AuthError):
    """More than one WebAuthn provider enables conditional UI."""


class MissingWebAuthnAutocomplete(AuthError):
    """A conditional-UI WebAuthn provider without a ``webauthn`` autocomplete field."""


class SecondFactorExpired(AuthError):
    """No sign-in waits for this second factor any more: none, expired, used, or too many
    wrong codes. The visitor signs in again."""

    user_caused = True


class SecondFactorFailed(AuthError):
    """A second-factor code that proved nothing: wrong, used already, or from a removed key.

    The code form is shown again with its message (``400``); the code itself is
    never logged.
    """

    user_caused = True


class WebAuthnVerificationError(AuthError):
    """The passkey response could not be verified.

    ``user_caused`` unless the relying party's set-up is at fault (an origin or
    RP id the configuration does not allow).
    """

    user_caused = True


class ExperimentalFeatureNotEnabled(AuthError):
    """An experimental feature is used without being enabled."""


class TokenRefreshError(AuthError):
    """A provider access token expired and could not be refreshed (webauth addition).

    Raised by :func:`webauth.get_access_token` when there is no refresh token or
    the provider refused it.
    """


class EmailInUse(AuthError):
    """Another user has this address already (webauth addition).

    An adapter's ``create_user``, ``create_user_and_link_account`` and
    ``update_user`` raise it instead of storing a second user with one
    address (exactly equal canonical forms); the flows then treat the sign-in
    as one of that user's (an email sign-in signs them in, an OAuth account is
    linked or refused by the linking rules, a passkey registration is
    refused), so that concurrent first sign-ins of one new address make one user.
    """


class UsernameInUse(AuthError):
    """Another user has this username already (webauth addition).

    ``DjangoAdapter.create_user`` raises it when the new user it was given
    (a sign-up form's, ``AdapterUser.instance``) collides with a stored one on
    the user model's unique ``USERNAME_FIELD``, also against another request
    creating one at the same moment: the sign-up then answers as for any taken
    username (:mod:`webauth.passwords.signup`).
    """


class AmbiguousEmail(AuthError):
    """More than one user has this address: the sign-in is refused, not given to either.

    Raised by ``DjangoAdapter.get_user_by_email`` when the user table holds two
    users whose stored addresses are exactly the same (a model without a
    unique address column, rows written by hand). ``manage.py
    webauth_addresses`` lists them; the operator decides which user keeps
    the address. The visitor sees the error page (``error=Configuration``).
    """


class LastSignInMethod(AuthError):
    """Unlinking would leave the user with no way to sign in (webauth addition).

    Raised by the adapter's ``unlink_user_account`` and so by
    :func:`webauth.linked_accounts.unlink`; it never reaches a route, only the
    project's own code and the admin.
    """


class RateLimited(SignInError):
    """Too many attempts: a rate limit of ``WEBAUTH["rate_limits"]`` refused the request.

    A webauth addition (Auth.js has no rate limits). ``retry_after`` is the number
    of seconds until the limit lets the client try again. The routes answer it
    with ``429`` and ``Retry-After`` (JSON clients) or the sign-in page's message
    (browsers); see :mod:`webauth.ratelimit`.
    """

    user_caused = True

    def __init__(
        self,
        message: str = "",
        *,
        retry_after: int = 0,
        cause: Mapping[str, object] | None = None,
        user_caused: bool | None = None,
    ) -> None:
        super().__init__(message, cause=cause, user_caused=user_caused)
        self.retry_after = retry_after


class ChallengeFailed(SignInError):
    """The bot challenge of ``WEBAUTH["challenge"]`` was not passed (webauth addition).

    ``code`` says how: ``"missing"`` (the request carried no answer of the
    widget) or ``"refused"`` (the service did not accept it, or could not be
    asked: a network failure is a refusal too). ``challenge`` is what a client
    needs to show the widget and try again: ``{"service", "siteKey",
    "field"}``, all public. The routes answer the sign-in page with its
    message (browsers) or ``400`` with ``{"error": "ChallengeFailed", "code",
    "challenge"}`` (JSON clients, apps); see :mod:`webauth.challenges`.
    """

    user_caused = True
    code: str = "refused"

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        challenge: Mapping[str, str] | None = None,
        cause: Mapping[str, object] | None = None,
        user_caused: bool | None = None,
    ) -> None:
        super().__init__(message, cause=cause, user_caused=user_caused)
        if code is not None:
            self.code = code
        self.challenge: Mapping[str, str] = dict(challenge or {})


SIGN_IN_ERRORS: frozenset[str] = frozenset(
    {
        "CredentialsSignin",
        "OAuthAccountNotLinked",
        "OAuthCallbackError",
        "OAuthSignInError",
        "EmailSignInError",
        "MissingCSRF",
        "AccountNotLinked",
        "RateLimited",
        "ChallengeFailed",
    }
)

CLIENT_SAFE_ERRORS: frozenset[str] = frozenset(
    {
        "CredentialsSignin",
        "OAuthAccountNotLinked",
        "OAuthCallbackError",
        "AccessDenied",
        "Verification",
        "MissingCSRF",
        "AccountNotLinked",
        "WebAuthnVerificationError",
        "RateLimited",
        "ChallengeFailed",
    }
)


def is_sign_in_error(error: BaseException) -> bool:
    """Whether *error* lands on the sign-in page rather than the error page."""
    return isinstance(error, AuthError) and error.type in SIGN_IN_ERRORS


def error_type_for_url(error: BaseException) -> str:
    """The ``error=`` value shown to the client: the type if client-safe,
    ``SignInExpired`` for another error the visitor caused, else ``Configuration``."""
    if isinstance(error, AuthError):
        if error.type in CLIENT_SAFE_ERRORS:
            return error.type
        if error.user_caused:
            return SIGN_IN_EXPIRED
    return "Configuration"
