"""The validated configuration: one frozen dataclass per section of ``settings.WEBAUTH``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from django.utils.functional import (
    Promise,
    cached_property,  # unlike functools' (3.11), no lock
)

from ..adapters.storage import Storage
from ..client_ip import TrustedProxies
from ..jwt import DEFAULT_MAX_AGE
from ..logger import AuthLogger
from ..providers.base import Provider
from ..tokens.keys import SigningKey

if TYPE_CHECKING:
    from ..adapters.django import DjangoAdapter

__all__ = [
    "CHALLENGE_ACTIONS",
    "COOKIE_KEYS",
    "DEFAULT_API_KEY_MAX_AGE",
    "DEFAULT_JWKS_MAX_AGE",
    "DEFAULT_MAX_AGE",
    "DEFAULT_RATE_LIMITS",
    "DEFAULT_REAUTH_MAX_AGE",
    "DEFAULT_TOKEN_MAX_AGE",
    "DEFAULT_UPDATE_AGE",
    "MAX_TOKEN_MAX_AGE",
    "MFA_KEYS",
    "RATE_SCOPES",
    "AccountOptions",
    "ApiKeyOptions",
    "CallbacksOptions",
    "ChallengeOptions",
    "ChallengeService",
    "Config",
    "CookieOverride",
    "JWTOptions",
    "MfaOptions",
    "PagesOptions",
    "PasswordOptions",
    "RateLimitOptions",
    "RateRule",
    "SessionOptions",
    "Theme",
    "TokenOptions",
    "parse_rate",
]

DEFAULT_UPDATE_AGE = 24 * 60 * 60

#: ``reauth_max_age``: how long after signing in a session may make sensitive
#: changes (``reauth_required``) without proving who it is again.
DEFAULT_REAUTH_MAX_AGE = 5 * 60

#: The cookies of ``WEBAUTH["cookies"]``, by their snake_case Auth.js keys.
COOKIE_KEYS = frozenset(
    {
        "session_token",
        "callback_url",
        "csrf_token",
        "pkce_code_verifier",
        "state",
        "nonce",
        "webauthn_challenge",
        "email_pending",
        "signin_form",
    }
)


#: ``session.user_check_cache``'s default ``max_staleness``, in seconds.
DEFAULT_MAX_STALENESS = 60


@dataclass(frozen=True, slots=True)
class UserCheckCache:
    """``session.user_check_cache``: where JWT session checks are remembered, and how long.

    ``max_staleness`` (seconds) bounds how long a change made behind the ORM's back
    (``QuerySet.update()``, raw SQL) can go unseen (:mod:`webauth.sessions.check_cache`).
    """

    cache: str = "default"
    max_staleness: int = DEFAULT_MAX_STALENESS


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """``session.*``: the strategy and the session's lifetime.

    ``absolute_max_age`` (seconds, ``None`` = no limit, as in Auth.js) ends a
    session that long after its sign-in however active it is.
    """

    strategy: str = "jwt"
    max_age: int = DEFAULT_MAX_AGE
    update_age: int = DEFAULT_UPDATE_AGE
    generate_session_token: Callable[[], str] | None = None
    absolute_max_age: int | None = None
    user_check_cache: UserCheckCache | None = None


@dataclass(frozen=True, slots=True)
class JWTOptions:
    """``jwt.*``: token lifetime and optional replacements for encode/decode."""

    max_age: int = DEFAULT_MAX_AGE
    encode: Callable[..., str] | None = None
    decode: Callable[..., object] | None = None


@dataclass(frozen=True, slots=True)
class CallbacksOptions:
    """User callbacks; ``None`` means the default behaviour."""

    jwt: Callable[..., object] | None = None
    session: Callable[..., object] | None = None
    sign_in: Callable[..., object] | None = None
    redirect: Callable[..., object] | None = None
    #: webauth's own: the claims of a signed access token (docs/tokens.md).
    token: Callable[..., object] | None = None


@dataclass(frozen=True, slots=True)
class PagesOptions:
    """Custom page URLs that replace the built-in pages."""

    sign_in: str | None = None
    sign_out: str | None = None
    error: str | None = None
    verify_request: str | None = None
    new_user: str | None = None


@dataclass(frozen=True, slots=True)
class Theme:
    """How the built-in pages look."""

    color_scheme: str = "auto"
    logo: str = ""
    brand_color: str = ""
    button_text: str = ""


@dataclass(frozen=True, slots=True)
class AccountOptions:
    """``account``: the account center's header (docs/account.md).

    ``home_url``: where its home link goes (and where signing out from it
    lands): a URL name, a path or an absolute http(s) URL, resolved as Django
    resolves ``LOGIN_REDIRECT_URL`` (``None``: ``settings.LOGIN_REDIRECT_URL``).
    ``site_name``: the name it shows, and the theme logo's text (``None``: the
    current site's name, from ``django.contrib.sites`` when installed, else
    the host). Either may be lazy (``reverse_lazy``, ``gettext_lazy``).
    """

    home_url: str | Promise | None = None
    site_name: str | Promise | None = None


@dataclass(frozen=True, slots=True)
class PasswordOptions:
    """``passwords``: the password's lifecycle around ``DjangoCredentials`` (docs/passwords.md).

    Each part is off unless configured. ``signup``: ``POST /auth/signup`` (and
    ``/auth/app/signup``) makes an account with a password. ``signup_form``: the
    dotted path of a project's form class for it (``None``: one built from the
    user model's ``REQUIRED_FIELDS``). ``signup_verify_email``: the address is
    proven by an email grant before the account can sign in (``False``: signed
    in at once, the address marked unproven, as a passkey registration does).
    ``reset``: ``/auth/reset`` asks for a reset by address or username and
    mails a link and a code. ``change``: the account center's Password section
    changes a password, or sets one for a user who has none. ``notify``: the
    user is mailed when their password changed.
    """

    signup: bool = False
    signup_form: str | None = None
    signup_verify_email: bool = True
    reset: bool = False
    change: bool = False
    notify: bool = True


#: ``challenge.on``: the requests a challenge can guard, each with the rate-limit
#: action whose per-address count says when it is abused (``when: "abuse"``).
CHALLENGE_ACTIONS: Mapping[str, str] = MappingProxyType(
    {
        "signin": "signin_failed",  # POST /auth/callback/<credentials id>: failed passwords
        "signup": "signup",  # POST /auth/signup
        "reset": "password_reset",  # POST /auth/reset
        "email": "email_send",  # POST /auth/signin/<email id>: sign-in emails
    }
)


@runtime_checkable
class ChallengeService(Protocol):
    """What ``challenge.service`` is built into (:class:`webauth.challenges.Challenge` is one)."""

    name: str
    field: str
    script_url: str
    site_key: str
    secret_key: str
    max_token_length: int

    def verify(self, token: str, remote_ip: str | None) -> bool: ...

    def widget(self, *, theme: str = "auto") -> str: ...


@dataclass(frozen=True, slots=True)
class ChallengeOptions:
    """``challenge``: a bot challenge before some requests (docs/configuration.md#challenge).

    ``service``: the service (its keys inside it). ``on``: the actions of
    :data:`CHALLENGE_ACTIONS` it guards. ``when``: ``"always"``, or ``"abuse"``:
    once the client's address has used ``share`` of a per-address rule of the
    action's rate limit in its current window.
    """

    service: ChallengeService
    on: frozenset[str] = frozenset(CHALLENGE_ACTIONS)
    when: str = "always"
    share: float = 0.5


@dataclass(frozen=True, slots=True)
class CookieOverride:
    """A ``cookies`` entry: a different name and/or different attributes."""

    name: str | None = None
    options: Mapping[str, object] = field(default_factory=dict)


# -- rate limits ----------------------------------------------------------------------
#: What a rule counts per: the client's address (IPv6 by /64), the action's key
#: (an identifier, an email address...), or the pair.
RATE_SCOPES = frozenset({"ip", "key", "ip+key"})

#: ``WEBAUTH["rate_limits"]`` defaults: action -> rules (see docs/rate-limits.md).
#: django-allauth's ``ACCOUNT_RATE_LIMITS`` are the reference point ("login"
#: 30/m/ip, "login_failed" 10/m/ip,5/5m/key). ``signin_failed`` splits the
#: identifier limit in two: 5 per 5 minutes for one address and one identifier,
#: 10 per 5 minutes for the identifier from everywhere, so that a stranger at one
#: address is stopped (by the first) before they can block the account's owner
#: (through the second).
DEFAULT_RATE_LIMITS: Mapping[str, str] = MappingProxyType(
    {
        # every credentials sign-in attempt
        "signin": "30/m/ip",
        # failed credentials sign-ins (a success gives its attempt back)
        "signin_failed": "10/m/ip,5/5m/ip+key,10/5m/key",
        # GET/POST /auth/callback/<oauth provider>: each one costs a code exchange
        "oauth_callback": "30/m/ip",
        # POST /auth/session (session update): runs the jwt/session callbacks
        "session_update": "60/m/ip",
        # POST /auth/signin/<email id>: sending a link or code
        "email_send": "20/m/ip,5/5m/key",
        # POST /auth/callback/<email id> with a code: failed code attempts
        "code_failed": "10/m/ip,5/5m/key",
        # GET /auth/webauthn-options/<id>: each one stores a challenge
        "passkey_options": "30/m/ip",
        # POST /auth/callback/<webauthn id>: failed passkey verifications
        # (a success gives its attempt back)
        "passkey_failed": "10/m/ip",
        # POST /auth/mfa: wrong second-factor codes, per address and per user
        # (a success gives its attempt back)
        "mfa_failed": "10/m/ip,5/5m/key",
        # POST /auth/signup: a sign-up (it mails its address), per address and email address
        "signup": "10/m/ip,3/h/key",
        # POST /auth/reset: a reset asked for (it mails), per address and per identifier
        "password_reset": "10/m/ip,3/h/key",
        # a password change or set in the account center, per address and per user
        "password_change": "10/m/ip,5/5m/key",
        # GET /auth/token, POST /auth/app/access-token: an access token minted
        "access_token": "60/m/ip",
        # GET /auth/token/ended: the revocation feed, polled by services
        "token_feed": "120/m/ip",
        # requests authenticated by an API key, per key; and keys that fail, per address
        "api_key": "600/m/key",
        "api_key_failed": "30/m/ip",
    }
)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_RULE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])\s*/\s*([a-z+]+)\s*$")


@dataclass(frozen=True, slots=True)
class RateRule:
    """One rule of a rate: at most ``limit`` per ``period`` seconds per ``scope``."""

    limit: int
    period: int
    scope: str

    def __str__(self) -> str:
        return f"{self.limit}/{self.period}s/{self.scope}"


def parse_rate(text: str) -> tuple[RateRule, ...]:
    """``"10/m/ip,5/5m/key"`` -> its rules; ``ValueError`` says what is wrong.

    Each rule is ``<amount>/<duration>/<scope>``: the duration a unit (``s``,
    ``m``, ``h``, ``d``) with an optional multiplier (``5m``, ``30s``); the
    scope one of :data:`RATE_SCOPES`.
    """
    rules = []
    for part in text.split(","):
        match = _RULE.match(part)
        if match is None:
            raise ValueError(
                f"{part.strip()!r} is not <amount>/<duration>/<scope> (e.g. '10/m/ip', '5/5m/key')"
            )
        amount, multiplier, unit, scope = match.groups()
        if scope not in RATE_SCOPES:
            raise ValueError(f"{scope!r} is not a scope (use {', '.join(sorted(RATE_SCOPES))})")
        period = int(multiplier or 1) * _UNITS[unit]
        if int(amount) < 1 or period < 1:
            raise ValueError(f"{part.strip()!r} allows nothing (amount and duration must be > 0)")
        rules.append(RateRule(limit=int(amount), period=period, scope=scope))
    return tuple(rules)


@dataclass(frozen=True, slots=True)
class RateLimitOptions:
    """``rate_limits``, ``rate_limit_cache``: the limiter's rules and where it counts.

    ``rules`` maps every known action to its rules; an action switched off maps
    to ``()``. ``enabled`` is false when ``WEBAUTH["rate_limits"] = False``.
    """

    enabled: bool = True
    rules: Mapping[str, tuple[RateRule, ...]] = field(
        default_factory=lambda: MappingProxyType(
            {action: parse_rate(rate) for action, rate in DEFAULT_RATE_LIMITS.items()}
        )
    )
    cache: str = "default"


#: The keys of ``WEBAUTH["mfa"]``.
MFA_KEYS = frozenset(
    {
        "enabled",
        "issuer",
        "skew",
        "pending_max_age",
        "attempts",
        "required",
        "notify",
        "trust_days",
        "grace_days",
        "security_keys",
    }
)


@dataclass(frozen=True, slots=True)
class MfaOptions:
    """``mfa``: the second factor (docs/mfa.md).

    ``enabled``: users may add a second factor, and one who has one is asked
    for it after the first. ``issuer``: the name authenticator apps show
    (``None``: the theme's brand name, else the site's host). ``skew``: the
    time steps either side of now a TOTP code may be from. ``pending_max_age``:
    seconds a signed-in-but-unproven sign-in waits for its second factor.
    ``attempts``: wrong codes one such sign-in may have before it is dropped.
    ``required``: who must have a second factor (``None``: nobody; a user
    without one is asked to add one before the first factor's sign-in ends),
    as a function of the user (``webauth.mfa.policy``).
    """

    enabled: bool = False
    issuer: str | None = None
    skew: int = 1
    pending_max_age: int = 300
    attempts: int = 5
    required: Callable[[object], bool] | None = None
    #: Mail the owner when a key is added or removed, or an admin resets them.
    notify: bool = True
    #: Days a browser may skip the code once its user ticks "trust this browser"
    #: (0: never offered).
    trust_days: int = 0
    #: Days a user whom ``required`` names may put off adding a key, from when
    #: they are first asked (0: not at all).
    grace_days: int = 0
    #: Users may add security keys (and platform authenticators) as a second
    #: factor, beside authenticator apps (webauth.mfa.keys).
    security_keys: bool = True


#: ``tokens.max_age``'s default and bounds: an access token's life, in seconds.
DEFAULT_TOKEN_MAX_AGE = 300
MAX_TOKEN_MAX_AGE = 24 * 3600
#: ``tokens.jwks_max_age``'s default: how long a verifier may keep the JWKS.
DEFAULT_JWKS_MAX_AGE = 300


@dataclass(frozen=True, slots=True)
class TokenOptions:
    """``tokens``: signed access tokens for other services (docs/tokens.md).

    ``keys``: the key set, the first signing (:mod:`webauth.tokens.keys`).
    ``audiences``: the services a token may be minted for (its ``aud``).
    ``max_age``: a token's life in seconds. ``issuer``: its ``iss`` (``None``:
    the site's origin and ``base_path``, as the request shows them).
    ``jwks_max_age``: the JWKS's ``Cache-Control`` ``max-age``. ``feed``: serve
    the revocation feed.
    """

    keys: tuple[SigningKey, ...]
    audiences: tuple[str, ...]
    max_age: int = DEFAULT_TOKEN_MAX_AGE
    issuer: str | None = None
    jwks_max_age: int = DEFAULT_JWKS_MAX_AGE
    #: Serve the revocation feed (``GET /auth/token/ended``).
    feed: bool = True


#: ``api_keys.max_age``'s default: a key made without an expiry lives a year.
DEFAULT_API_KEY_MAX_AGE = 365 * 24 * 3600


@dataclass(frozen=True, slots=True)
class ApiKeyOptions:
    """``api_keys``: long-lived keys for scripts and integrations (docs/api-keys.md).

    ``prefix``: what every key starts with (``<prefix>_``), for secret scanners
    and for telling a key from a session token. ``scopes``: the scopes a key may
    carry, the project's own names. ``max_age``: the life of a key made without
    an expiry (``None``: it never expires). ``max_keys``: the most live keys a
    user (or an owner) may hold. ``owners``: the lower-cased labels of the
    project's models whose instances may hold keys too (``"shop.team"``).
    ``owners_of``: a function of a user giving the owners whose keys that user
    manages in the account center (``None``: only their own keys there).
    """

    prefix: str = "wak"
    scopes: tuple[str, ...] = ()
    max_age: int | None = DEFAULT_API_KEY_MAX_AGE
    max_keys: int = 50
    owners: tuple[str, ...] = ()
    owners_of: Callable[[Any], Iterable[Any]] | None = None


@dataclass(frozen=True, eq=False)
class Config:
    """The validated configuration. Get it with :func:`webauth.conf.get_config`."""

    providers: tuple[Provider, ...] = ()
    adapter: object = None
    base_path: str = "/auth"
    secret: tuple[str, ...] = ()
    session: SessionOptions = SessionOptions()
    jwt: JWTOptions = JWTOptions()
    callbacks: CallbacksOptions = CallbacksOptions()
    events: Mapping[str, Callable[..., object]] = field(default_factory=dict)
    cookies: Mapping[str, CookieOverride] = field(default_factory=dict)
    pages: PagesOptions = PagesOptions()
    debug: bool = False
    logger: AuthLogger = field(default_factory=AuthLogger)
    experimental: Mapping[str, bool] = field(default_factory=dict)
    trust_host: bool = True
    use_secure_cookies: bool | None = None
    redirect_proxy_url: str | None = None
    skip_csrf_check: bool = False
    theme: Theme = Theme()
    http_client: Callable[[], object] | None = None
    url: str | None = None
    protected_paths: tuple[str, ...] = ()
    rate_limits: RateLimitOptions = field(default_factory=RateLimitOptions)
    trusted_proxies: TrustedProxies = field(default_factory=TrustedProxies)
    bearer: bool = False
    app_redirect_uris: tuple[str, ...] = ()
    reauth_max_age: int = DEFAULT_REAUTH_MAX_AGE
    mfa: MfaOptions = field(default_factory=MfaOptions)
    account: AccountOptions = AccountOptions()
    passwords: PasswordOptions = PasswordOptions()
    #: A bot challenge before some requests (``None``: off, the default).
    challenge: ChallengeOptions | None = None
    #: Serve the OpenAPI description at ``<base path>/openapi.json`` (docs/openapi.md).
    openapi: bool = False
    #: Signed access tokens (``WEBAUTH["tokens"]``), off (``None``) unless configured.
    tokens: TokenOptions | None = None
    #: API keys (``WEBAUTH["api_keys"]``), off (``None``) unless configured.
    api_keys: ApiKeyOptions | None = None
    _providers_by_id: dict[str, Provider] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_providers_by_id", {p.id: p for p in self.providers})

    def get_provider(self, provider_id: str | None) -> Provider | None:
        """The provider with this id, or ``None``."""
        if provider_id is None:
            return None
        return self._providers_by_id.get(provider_id)

    @cached_property
    def csrf_secret(self) -> str:
        """The secret as Auth.js hashes with it: a list becomes the comma-joined string."""
        return ",".join(self.secret)

    @cached_property
    def url_origin(self) -> str | None:
        """Origin (``scheme://host[:port]``) of ``url``/``AUTH_URL``, when set."""
        if not self.url:
            return None
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    @cached_property
    def storage(self) -> Storage:
        """The :class:`~webauth.adapters.storage.Storage` every flow and helper calls.

        It calls the configured adapter; without one,
        :class:`~webauth.adapters.django.DjangoAdapter` on the default database
        (``storage.configured`` is then false), so that
        ``request.user`` and the project's helpers (session management, linked
        accounts, access tokens, passkeys, the account center) read the
        project's own tables through the same seam. The sign-in flows still
        store nothing without a configured adapter, as in Auth.js: they call
        ``storage.require(...)``, which refuses the fallback.
        """
        if self.adapter is None:
            return Storage(self.django_adapter, self.logger, configured=False)
        return Storage(self.adapter, self.logger)

    @cached_property
    def django_adapter(self) -> DjangoAdapter:
        """A :class:`~webauth.adapters.django.DjangoAdapter` on the default database.

        The store of ``AUTH_USER_MODEL`` when no adapter is configured, and where
        ``request.user`` is found when an adapter's users carry no model instance.
        """
        # Imported on first use, not with the settings: the Django adapter
        # imports models, which need the app registry to be ready.
        from ..adapters.django import DjangoAdapter

        return DjangoAdapter()
