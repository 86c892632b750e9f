"""One small builder per section of ``settings.WEBAUTH``.

Each takes the raw value of its section (and, where a rule spans sections, what
an earlier builder decided) and returns the frozen options, or raises
:class:`~webauth.conf.values.ConfigError` naming the key and the fix. None of
them changes what it was given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from django.utils.functional import Promise

from ..client_ip import TrustedProxies, networks_from
from ..jwt import DEFAULT_MAX_AGE
from ..logger import AuthLogger
from ..mfa.policy import requirement
from ..providers.base import Provider
from ..providers.catalog import CATALOG, provider_class
from ..tokens.keys import KeyProblem, read_keys
from ..utils import did_you_mean, resolve
from .options import (
    CHALLENGE_ACTIONS,
    COOKIE_KEYS,
    DEFAULT_API_KEY_MAX_AGE,
    DEFAULT_JWKS_MAX_AGE,
    DEFAULT_MAX_STALENESS,
    DEFAULT_RATE_LIMITS,
    DEFAULT_REAUTH_MAX_AGE,
    DEFAULT_TOKEN_MAX_AGE,
    DEFAULT_UPDATE_AGE,
    MAX_TOKEN_MAX_AGE,
    MFA_KEYS,
    AccountOptions,
    ApiKeyOptions,
    CallbacksOptions,
    ChallengeOptions,
    ChallengeService,
    CookieOverride,
    JWTOptions,
    MfaOptions,
    PagesOptions,
    PasswordOptions,
    RateLimitOptions,
    RateRule,
    SessionOptions,
    Theme,
    TokenOptions,
    UserCheckCache,
    parse_rate,
)
from .values import as_bool, as_callable, as_seconds, as_str, config_error, keys_of

__all__ = [
    "ACCOUNT_KEYS",
    "TOP_LEVEL_KEYS",
    "absolute_max_age",
    "account",
    "adapter",
    "api_keys",
    "base_path",
    "callbacks",
    "challenge",
    "cookies",
    "events",
    "experimental",
    "home_url_problem",
    "jwt",
    "logger",
    "mfa",
    "pages",
    "passwords",
    "protected_paths",
    "provider",
    "providers",
    "rate_limits",
    "reauth_max_age",
    "secret",
    "session",
    "theme",
    "tokens",
    "trusted_proxies",
    "url",
]

TOP_LEVEL_KEYS = frozenset(
    {
        "providers",
        "adapter",
        "base_path",
        "secret",
        "session",
        "jwt",
        "callbacks",
        "events",
        "cookies",
        "pages",
        "debug",
        "logger",
        "experimental",
        "trust_host",
        "use_secure_cookies",
        "redirect_proxy_url",
        "skip_csrf_check",
        "theme",
        "http_client",
        # webauth additions (documented in docs/configuration.md)
        "url",
        "protected_paths",
        "rate_limits",
        "rate_limit_cache",
        "trusted_proxies",
        "mfa",
        "bearer",
        "app_redirect_uris",
        "reauth_max_age",
        "openapi",
        "account",
        "passwords",
        "challenge",
        "tokens",
        "api_keys",
    }
)


# -- providers -----------------------------------------------------------------------
def provider(index: int, value: Any) -> Provider:
    """One ``providers`` entry: an instance, a class, a dotted path or a built-in id."""
    obj = value
    if isinstance(obj, str) and "." not in obj:
        # A built-in provider by id: "github", "google", "microsoft-entra-id"...
        try:
            obj = provider_class(obj)
        except KeyError:
            guess = did_you_mean(obj, CATALOG)
            raise config_error(
                f"providers[{index}]",
                f"{value!r} is not a built-in provider id",
                (f"Did you mean {guess!r}? " if guess else "")
                + "See docs/providers.md for the catalog, or give a dotted path.",
            ) from None
    elif isinstance(obj, str):
        try:
            obj = resolve(obj)
        except ImportError as exc:
            raise config_error(
                f"providers[{index}]",
                f"could not import {value!r} ({exc})",
                "Give a provider object, or the dotted path of a provider class such as "
                "'webauth.providers.DjangoCredentials'.",
            ) from exc
    if isinstance(obj, type) and issubclass(obj, Provider):
        obj = obj()
    if not isinstance(obj, Provider):
        raise config_error(
            f"providers[{index}]",
            f"must be a webauth provider, got {obj!r}",
            "Use e.g. webauth.providers.DjangoCredentials() or a dotted path to one.",
        )
    return obj


def _provider_fix(p: Provider) -> str:
    """Where to fix a provider's problem: its entry in ``providers``, and its page."""
    page = p.docs_page  # the page that documents its kind
    return (
        f"Give {type(p).__name__}(id={p.id!r}, ...) in WEBAUTH['providers'] the option "
        f"the message names ({page})."
    )


def providers(value: object) -> tuple[Provider, ...]:
    """``providers``: a list of entries (see :func:`provider`)."""
    value = value or []
    if not isinstance(value, list | tuple):
        raise config_error("providers", "must be a list", "Use [Provider(), ...].")
    return tuple(provider(i, p) for i, p in enumerate(value))


def validate_providers(configured: tuple[Provider, ...]) -> None:
    """Each provider's own checks, and one provider per id."""
    seen: set[str] = set()
    for p in configured:
        for problem in p.validate():
            raise config_error("providers", problem, _provider_fix(p), "webauth.E004")
        if p.id in seen:
            raise config_error(
                "providers",
                f"has two providers with id {p.id!r}",
                f"Give one of them another id: {type(p).__name__}(id='{p.id}-2', ...).",
            )
        seen.add(p.id)


# -- secret, adapter, paths --------------------------------------------------------------
def secret(value: object) -> tuple[str, ...]:
    """``secret``: one string or a list (newest first); empty entries are dropped."""
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list | tuple) and all(isinstance(s, str) for s in value):
        return tuple(s for s in value if s)
    if value is None:
        return ()
    raise config_error(
        "secret",
        "must be a string or a list of strings",
        "Give one secret, or a list of them with the newest first (see secret rotation "
        "in docs/configuration.md).",
    )


def adapter(value: object) -> object:
    """``adapter``: an object, a class (instantiated) or a dotted path to either."""
    obj = value
    if isinstance(obj, str):
        try:
            obj = resolve(obj)
        except ImportError as exc:
            raise config_error(
                "adapter",
                f"could not import {value!r} ({exc})",
                "Give an adapter object, or the dotted path of an adapter class such as "
                "'webauth.adapters.django.DjangoAdapter'.",
            ) from exc
    return obj() if isinstance(obj, type) else obj


def base_path(value: object) -> str:
    """``base_path``: starts with ``/``; the trailing slash is dropped (``/`` becomes ``""``)."""
    path = as_str("base_path", value) or "/auth"
    if not path.startswith("/"):
        raise config_error("base_path", f"must start with '/', got {path!r}", "Use e.g. '/auth'.")
    return path.rstrip("/") or ""


def url(value: object) -> str | None:
    """``url`` (or ``AUTH_URL``): an absolute http(s) URL."""
    site = as_str("url", value)
    if site:
        parts = urlsplit(site)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise config_error(
                "url",
                f"must be an absolute http(s) URL, got {site!r}",
                "Set it (or the AUTH_URL environment variable) to e.g. 'https://example.com/auth'.",
            )
    return site


def protected_paths(value: Any) -> tuple[str, ...]:
    """``protected_paths``: path prefixes that need a session."""
    paths = value or ()
    if isinstance(paths, str) or not all(isinstance(p, str) for p in paths):
        raise config_error(
            "protected_paths", "must be a list of path prefixes", "E.g. ['/account/']."
        )
    return tuple(paths)


# -- session and tokens ----------------------------------------------------------------
SESSION_KEYS = frozenset(
    {
        "strategy",
        "max_age",
        "update_age",
        "generate_session_token",
        "absolute_max_age",
        "user_check_cache",
    }
)
USER_CHECK_CACHE_KEYS = frozenset({"cache", "max_staleness"})
#: The check id of a bad ``session.absolute_max_age``.
ABSOLUTE_MAX_AGE_CHECK = "webauth.E010"
JWT_KEYS = frozenset({"max_age", "encode", "decode"})


#: The session strategies by name, and whether each keeps its sessions through an
#: adapter. The configuration only reads the name; the strategy objects of
#: :mod:`webauth.sessions` (``STRATEGIES``, which these must match) do the rest.
STRATEGY_NEEDS_ADAPTER: Mapping[str, bool] = {"jwt": False, "database": True}


def session(value: object, *, has_adapter: bool) -> SessionOptions:
    """``session``: ``database`` by default when there is an adapter, which it then needs."""
    s = keys_of("session", value, SESSION_KEYS)
    strategy = s.get("strategy") or ("database" if has_adapter else "jwt")
    if strategy not in STRATEGY_NEEDS_ADAPTER:
        raise config_error(
            "session",
            f"strategy must be 'jwt' or 'database', got {strategy!r}",
            "Use 'jwt' (an encrypted cookie) or 'database' (a row per session, needs an "
            "adapter); see docs/sessions.md.",
        )
    if STRATEGY_NEEDS_ADAPTER[strategy] and not has_adapter:
        raise config_error(
            "session",
            "strategy 'database' needs an adapter",
            "Set WEBAUTH['adapter'] (e.g. 'webauth.adapters.django.DjangoAdapter') "
            "or use the 'jwt' strategy.",
            "webauth.E003",
        )
    return SessionOptions(
        strategy=strategy,
        max_age=as_seconds("session.max_age", s.get("max_age"), DEFAULT_MAX_AGE),
        update_age=as_seconds("session.update_age", s.get("update_age"), DEFAULT_UPDATE_AGE),
        generate_session_token=as_callable(
            "session.generate_session_token", s.get("generate_session_token")
        ),
        absolute_max_age=absolute_max_age(s.get("absolute_max_age")),
        user_check_cache=user_check_cache(s.get("user_check_cache")),
    )


def user_check_cache(value: object) -> UserCheckCache | None:
    """``session.user_check_cache``: off (``None``/``False``), ``True`` (the defaults), or
    ``{"cache": alias, "max_staleness": seconds}``."""
    if value is None or value is False:
        return None
    if value is True:
        return UserCheckCache()
    given = keys_of("session.user_check_cache", value, USER_CHECK_CACHE_KEYS)
    alias = given.get("cache", "default")
    if not isinstance(alias, str) or not alias:
        raise config_error(
            "session.user_check_cache.cache",
            f"must be the alias of a cache in CACHES, got {alias!r}",
            "E.g. 'default'.",
        )
    staleness = given.get("max_staleness", DEFAULT_MAX_STALENESS)
    if isinstance(staleness, bool) or not isinstance(staleness, int) or staleness < 1:
        raise config_error(
            "session.user_check_cache.max_staleness",
            f"must be a positive number of seconds, got {staleness!r}",
            "How long a change made behind the ORM's back may go unseen, e.g. 60.",
        )
    return UserCheckCache(cache=alias, max_staleness=staleness)


def absolute_max_age(value: object) -> int | None:
    """``session.absolute_max_age``: ``None`` (no limit) or a positive number of seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise config_error(
            "session.absolute_max_age",
            f"must be a positive number of seconds or None, got {value!r}",
            "Use e.g. 30 * 24 * 3600 to end every session 30 days after its sign-in, "
            "or None for no limit.",
            ABSOLUTE_MAX_AGE_CHECK,
        )
    return value


def mfa(value: object) -> MfaOptions:
    """``mfa``: the second factor; off by default (docs/mfa.md)."""
    given = keys_of("mfa", value, MFA_KEYS)
    numbers: dict[str, int] = {}
    checked = (
        ("skew", 1, 0),
        ("pending_max_age", 300, 30),
        ("attempts", 5, 1),
        ("trust_days", 0, 0),
        ("grace_days", 0, 0),
    )
    for key, default, least in checked:
        number = given.get(key, default)
        if isinstance(number, bool) or not isinstance(number, int) or number < least:
            raise config_error(
                f"mfa.{key}",
                f"must be a whole number of at least {least}, got {number!r}",
                f"Leave it out for the default, {default}.",
            )
        numbers[key] = number
    if numbers["grace_days"] > 365:
        raise config_error(
            "mfa.grace_days",
            f"lets a user put off their second factor for {numbers['grace_days']} days",
            "Use at most 365; 0 (the default) asks at once.",
        )
    if numbers["trust_days"] > 365:
        raise config_error(
            "mfa.trust_days",
            f"trusts a browser for {numbers['trust_days']} days",
            "Use at most 365 (a year); 30 is common, 0 (the default) never offers it.",
        )
    if numbers["skew"] > 2:
        raise config_error(
            "mfa.skew",
            f"accepts codes {numbers['skew']} steps of 30 s either side of now",
            "Use 0 or 1 (the default): a wider window lets an old code through.",
        )
    try:
        required = requirement(
            given.get("required"), lambda path: as_callable("mfa.required", path)
        )
    except ValueError as exc:
        raise config_error(
            "mfa.required",
            str(exc),
            "Use 'all', 'staff', 'superusers', {'groups': ['admins']}, or a function of the "
            "user (or its dotted path) answering whether that user must have a second factor.",
        ) from None
    return MfaOptions(
        enabled=bool(as_bool("mfa.enabled", given.get("enabled"), False)),
        issuer=as_str("mfa.issuer", given.get("issuer")),
        required=required,
        notify=bool(as_bool("mfa.notify", given.get("notify"), True)),
        security_keys=bool(as_bool("mfa.security_keys", given.get("security_keys"), True)),
        **numbers,
    )


def reauth_max_age(value: object) -> int:
    """``reauth_max_age``: seconds after a sign-in during which sensitive changes need no
    new proof (``webauth.decorators.reauth_required``); a positive whole number."""
    if value is None:
        return DEFAULT_REAUTH_MAX_AGE
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise config_error(
            "reauth_max_age",
            f"must be a positive number of seconds, got {value!r}",
            "Use e.g. 300 (the default): a sensitive change asks the user to sign in "
            "again when their sign-in is older than that.",
        )
    return value


ACCOUNT_KEYS = frozenset({"home_url", "site_name"})

# A URL name as reverse() takes it, namespaces and all ("home", "shop:index").
_URL_NAME = re.compile(r"[A-Za-z_][\w-]*(?::[A-Za-z_][\w-]*)*")


def home_url_problem(value: str) -> str | None:
    """What is wrong with *value* as ``account.home_url``, or ``None``.

    Good: a path (``/dashboard/``), an absolute http(s) URL with a host, or a
    URL name (``home``, ``shop:index``), which is reversed when a page is shown.
    """
    if not value or any(c.isspace() or not c.isprintable() for c in value):
        return f"must be a path, a URL or a URL name without spaces, got {value!r}"
    if value.startswith("//") or value.startswith("/\\"):
        return f"must not be a protocol-relative URL, got {value!r}"
    if value.startswith("/") or _URL_NAME.fullmatch(value):
        return None
    parts = urlsplit(value)
    if parts.scheme in ("http", "https") and parts.netloc:
        return None
    return f"must be a path starting with '/', an absolute http(s) URL or a URL name, got {value!r}"


def account(value: object) -> AccountOptions:
    """``account``: the account center's header: ``home_url`` and ``site_name``."""
    acc = keys_of("account", value, ACCOUNT_KEYS)
    home = acc.get("home_url")
    if home is not None and not isinstance(home, Promise):  # a lazy URL is read when used
        text = as_str("account.home_url", home)
        problem = home_url_problem(text or "")
        if problem:
            raise config_error(
                "account.home_url",
                problem,
                "Use e.g. 'home' (a URL name), '/dashboard/' or 'https://example.com/', "
                "or leave it out for settings.LOGIN_REDIRECT_URL.",
            )
    name = acc.get("site_name")
    if name is not None and not isinstance(name, Promise):
        name = (as_str("account.site_name", name) or "").strip() or None
    return AccountOptions(home_url=home, site_name=name)


PASSWORD_KEYS = frozenset({"signup", "reset", "change", "notify"})
SIGNUP_KEYS = frozenset({"form", "verify_email"})


def passwords(value: object) -> PasswordOptions:
    """``passwords``: sign-up, reset, change and set, each off unless configured.

    ``signup`` is ``True`` or a dict with ``form`` (a dotted path) and
    ``verify_email``; the others are booleans.
    """
    p = keys_of("passwords", value, PASSWORD_KEYS)
    signup = p.get("signup", False)
    form: str | None = None
    verify = True
    if isinstance(signup, Mapping):
        s = keys_of("passwords.signup", signup, SIGNUP_KEYS)
        form = as_str("passwords.signup.form", s.get("form"))
        if form is not None and "." not in form:
            raise config_error(
                "passwords.signup.form",
                f"must be a dotted path to a form class, got {form!r}",
                "Use e.g. 'myapp.forms.SignupForm', or leave it out for a form built "
                "from the user model.",
            )
        verify = bool(as_bool("passwords.signup.verify_email", s.get("verify_email"), True))
        signup = True
    return PasswordOptions(
        signup=bool(as_bool("passwords.signup", signup, False)),
        signup_form=form,
        signup_verify_email=verify,
        reset=bool(as_bool("passwords.reset", p.get("reset"), False)),
        change=bool(as_bool("passwords.change", p.get("change"), False)),
        notify=bool(as_bool("passwords.notify", p.get("notify"), True)),
    )


# -- signed access tokens ----------------------------------------------------------------
TOKEN_KEYS = frozenset({"keys", "audiences", "max_age", "issuer", "jwks_max_age", "feed"})
_TOKENS_EXAMPLE = (
    "E.g. {'keys': [os.environ['WEBAUTH_TOKEN_KEY']], 'audiences': ['https://api.example.com']}; "
    "python manage.py webauth_tokenkey prints a new key (docs/tokens.md)."
)
#: The longest audience accepted (a service's URL or name).
MAX_AUDIENCE_LENGTH = 200


def tokens(value: object) -> TokenOptions | None:
    """``tokens``: signed access tokens and their JWKS; off (``None``) by default.

    ``keys`` (required) is the key set, newest first (:func:`webauth.tokens.keys.read_keys`);
    ``audiences`` (required) the services a token may be for; ``max_age`` seconds
    (default 300, at most a day); ``issuer`` the ``iss`` (default: the site's URL
    and ``base_path``); ``jwks_max_age`` how long verifiers may cache the JWKS;
    ``feed`` (default on) serves the revocation feed.
    """
    if value is None or value is False:
        return None
    t = keys_of("tokens", value, TOKEN_KEYS)
    raw_keys = t.get("keys")
    if not isinstance(raw_keys, list | tuple) or not raw_keys:
        raise config_error(
            "tokens.keys",
            "must be a non-empty list of keys (the first signs)",
            _TOKENS_EXAMPLE,
            "webauth.E018",
        )
    try:
        keys = read_keys(raw_keys)
    except KeyProblem as exc:
        raise config_error("tokens", str(exc), _TOKENS_EXAMPLE, "webauth.E018") from None
    audiences = t.get("audiences")
    if (
        not isinstance(audiences, list | tuple)
        or not audiences
        or not all(isinstance(a, str) and 0 < len(a) <= MAX_AUDIENCE_LENGTH for a in audiences)
    ):
        raise config_error(
            "tokens.audiences",
            f"must be a non-empty list of service names or URLs (1 to {MAX_AUDIENCE_LENGTH} "
            f"characters each), got {audiences!r}",
            "List the services a token may be minted for; each verifies its own audience. "
            + _TOKENS_EXAMPLE,
        )
    max_age = as_seconds("tokens.max_age", t.get("max_age"), DEFAULT_TOKEN_MAX_AGE)
    if not 0 < max_age <= MAX_TOKEN_MAX_AGE:
        raise config_error(
            "tokens.max_age",
            f"must be between 1 and {MAX_TOKEN_MAX_AGE} seconds, got {max_age}",
            "A short life is what revokes a token: a few minutes is usual (default 300).",
        )
    issuer = as_str("tokens.issuer", t.get("issuer"))
    if issuer is not None:
        parts = urlsplit(issuer)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.query:
            raise config_error(
                "tokens.issuer",
                f"must be an http(s) URL without a query, got {issuer!r}",
                "Give e.g. 'https://example.com/auth', or leave it out for the site's URL.",
            )
        issuer = issuer.rstrip("/")
    return TokenOptions(
        keys=keys,
        audiences=tuple(dict.fromkeys(audiences)),
        max_age=max_age,
        issuer=issuer,
        jwks_max_age=as_seconds("tokens.jwks_max_age", t.get("jwks_max_age"), DEFAULT_JWKS_MAX_AGE),
        feed=bool(as_bool("tokens.feed", t.get("feed"), True)),
    )


# -- API keys ------------------------------------------------------------------------------
API_KEY_KEYS = frozenset({"prefix", "scopes", "max_age", "max_keys", "owners", "owners_of"})
#: A model label, as in AUTH_USER_MODEL: "app_label.ModelName".
_MODEL_LABEL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")
#: A key's prefix: lower-case letters and digits, starting with a letter.
_PREFIX = re.compile(r"^[a-z][a-z0-9]{1,15}$")
#: A scope: printable, no spaces (it is shown, and written in code).
_SCOPE = re.compile(r"^[A-Za-z0-9_.:/-]{1,64}$")


def api_keys(value: object) -> ApiKeyOptions | None:
    """``api_keys``: ``True`` for the defaults, a dict to choose; off (``None``) by default."""
    if value is None or value is False:
        return None
    if value is True:
        return ApiKeyOptions()
    a = keys_of("api_keys", value, API_KEY_KEYS)
    prefix = a.get("prefix", "wak")
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise config_error(
            "api_keys.prefix",
            f"must be 2 to 16 lower-case letters and digits, starting with a letter, got "
            f"{prefix!r}",
            "A short, distinctive name such as 'acme' lets secret scanners recognise a leaked key.",
        )
    scopes = a.get("scopes", ())
    if not isinstance(scopes, list | tuple) or not all(
        isinstance(s, str) and _SCOPE.match(s) for s in scopes
    ):
        raise config_error(
            "api_keys.scopes",
            f"must be a list of scope names (letters, digits and _ . : / -), got {scopes!r}",
            "E.g. ['orders:read', 'orders:write']; a key carries some of them.",
        )
    max_age: int | None
    if "max_age" in a and a["max_age"] is None:
        max_age = None
    else:
        max_age = as_seconds("api_keys.max_age", a.get("max_age"), DEFAULT_API_KEY_MAX_AGE)
        if max_age <= 0:
            raise config_error(
                "api_keys.max_age", "must be a positive number of seconds, or None", "E.g. 90 days."
            )
    max_keys = a.get("max_keys", 50)
    if not isinstance(max_keys, int) or isinstance(max_keys, bool) or not 0 < max_keys <= 10_000:
        raise config_error(
            "api_keys.max_keys", f"must be a number from 1 to 10000, got {max_keys!r}", "E.g. 50."
        )
    owners = a.get("owners", ())
    if isinstance(owners, str):
        owners = [owners]
    if not isinstance(owners, list | tuple) or not all(
        isinstance(o, str) and _MODEL_LABEL.match(o) for o in owners
    ):
        raise config_error(
            "api_keys.owners",
            f"must be a list of model labels, got {owners!r}",
            "E.g. ['shop.Team']: keys may then belong to a Team as well as to a user.",
            "webauth.E019",
        )
    owners_of = as_callable("api_keys.owners_of", a.get("owners_of"))
    if owners_of is not None and not owners:
        raise config_error(
            "api_keys.owners_of",
            "is set, but api_keys.owners names no model",
            "List the models whose instances may hold keys in api_keys.owners.",
            "webauth.E019",
        )
    return ApiKeyOptions(
        prefix=prefix,
        scopes=tuple(dict.fromkeys(scopes)),
        max_age=max_age,
        max_keys=max_keys,
        owners=tuple(dict.fromkeys(o.lower() for o in owners)),
        owners_of=owners_of,
    )


# -- the bot challenge -------------------------------------------------------------------
CHALLENGE_KEYS = frozenset(
    {
        "service",
        "site_key",
        "secret_key",
        "on",
        "when",
        "share",
        "verify_url",
        "timeout",
        "hostnames",
    }
)
#: ``challenge.service`` by name: the built-in services, imported when one is configured
#: (by its path, as the provider catalog does: the configuration imports no service).
CHALLENGE_SERVICES: Mapping[str, str] = MappingProxyType(
    {
        "turnstile": "webauth.challenges.Turnstile",
        "hcaptcha": "webauth.challenges.HCaptcha",
        "recaptcha": "webauth.challenges.ReCaptcha",
    }
)
CHALLENGE_WHEN = ("always", "abuse")
#: The longest ``challenge.timeout``: a sign-in waits for the verify endpoint.
MAX_CHALLENGE_TIMEOUT = 30
_CHALLENGE_EXAMPLE = (
    "E.g. {'service': 'turnstile', 'site_key': '...', 'secret_key': '...'} "
    "(docs/configuration.md#challenge)."
)


def _challenge_class(value: object) -> type:
    """``challenge.service``: a built-in service's name, or a dotted path to (or a) class."""
    names = ", ".join(repr(name) for name in CHALLENGE_SERVICES)
    if value is None:
        raise config_error(
            "challenge.service", "is missing", f"Name the service: {names}. {_CHALLENGE_EXAMPLE}"
        )
    if isinstance(value, str) and "." not in value:
        path = CHALLENGE_SERVICES.get(value)
        if path is None:
            guess = did_you_mean(value, CHALLENGE_SERVICES)
            raise config_error(
                "challenge.service",
                f"{value!r} is not a built-in service",
                (f"Did you mean {guess!r}? " if guess else "")
                + f"Use {names}, or the dotted path of a webauth.challenges.Challenge subclass.",
            )
        value = path
    if isinstance(value, str):
        try:
            value = resolve(value)
        except ImportError as exc:
            raise config_error(
                "challenge.service",
                f"could not import {value!r} ({exc})",
                f"Use {names}, or the dotted path of a webauth.challenges.Challenge subclass.",
            ) from exc
    if not isinstance(value, type):
        raise config_error(
            "challenge.service",
            f"must be a service's name or class, got {type(value).__name__}",
            f"Use {names}, or a webauth.challenges.Challenge subclass (or its dotted path).",
        )
    return value


def _challenge_on(value: object) -> frozenset[str]:
    """``challenge.on``: some of :data:`~webauth.conf.options.CHALLENGE_ACTIONS`."""
    if value is None:
        return frozenset(CHALLENGE_ACTIONS)
    known = ", ".join(repr(a) for a in CHALLENGE_ACTIONS)
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise config_error("challenge.on", "must be a list of actions", f"Use some of {known}.")
    for action in value:
        if not isinstance(action, str) or action not in CHALLENGE_ACTIONS:
            guess = did_you_mean(action, CHALLENGE_ACTIONS) if isinstance(action, str) else None
            raise config_error(
                "challenge.on",
                f"has {action!r}, which is not an action a challenge guards",
                (f"Did you mean {guess!r}? " if guess else "") + f"Use some of {known}.",
            )
    if not value:
        raise config_error(
            "challenge.on",
            "is empty: the challenge would guard nothing",
            f"Name some of {known}, or leave WEBAUTH['challenge'] out.",
        )
    return frozenset(value)


def _challenge_number(key: str, value: object, default: float, most: float) -> float:
    """A number above 0 and at most *most* (``share``, ``timeout``)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= most:
        raise config_error(
            f"challenge.{key}",
            f"must be a number above 0 and at most {most}, got {value!r}",
            f"Leave it out for the default, {default}.",
        )
    return float(value)


def _verify_url(value: object) -> str | None:
    """``challenge.verify_url``: https, or http on a loopback host only (a local fake)."""
    url = as_str("challenge.verify_url", value)
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    fix = (
        "Leave it out for the service's own endpoint; a test may point it at a local "
        "fake, e.g. 'http://127.0.0.1:8001/siteverify'."
    )
    if parts is None or not host or parts.scheme not in ("http", "https"):
        raise config_error("challenge.verify_url", f"must be an http(s) URL, got {url!r}", fix)
    if parts.scheme == "http" and host not in LOOPBACK_HOSTS:
        raise config_error(
            "challenge.verify_url",
            f"is {url!r}: plain http to another host would send the secret key in clear",
            fix,
        )
    return url


def _hostnames(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise config_error(
            "challenge.hostnames", "must be a list of hostnames", "E.g. ['example.com']."
        )
    if not all(isinstance(h, str) and h and "/" not in h for h in value):
        raise config_error(
            "challenge.hostnames",
            "must hold hostnames such as 'example.com' (no scheme, no path)",
            "E.g. ['example.com', 'www.example.com'].",
        )
    return tuple(h.lower() for h in value)


#: What a service must have, and the class attribute that gives it.
_SERVICE_ATTRIBUTES = {
    "name": "name",
    "field": "field",
    "script_url": "script_url",
    "verify_url": "default_verify_url",
    "widget_class": "widget_class",
}


def challenge(
    value: object, *, http_client: Callable[[], object] | None = None
) -> ChallengeOptions | None:
    """``challenge``: a bot challenge before some requests; off (``None``) by default.

    The keys go to the service's class; a missing key is a system check
    (``webauth.E014``), not an error here, so that a site whose keys come from
    its environment still starts and says what is missing.
    """
    if value is None or value is False:
        return None
    given = keys_of("challenge", value, CHALLENGE_KEYS)
    cls = _challenge_class(given.get("service"))
    when = given.get("when", "always")
    if when not in CHALLENGE_WHEN:
        raise config_error(
            "challenge.when",
            f"must be 'always' or 'abuse', got {when!r}",
            "'always' asks every time; 'abuse' once the client's address has used a share "
            "of the action's rate limit (challenge.share).",
        )
    try:
        service = cls(
            site_key=as_str("challenge.site_key", given.get("site_key")) or "",
            secret_key=as_str("challenge.secret_key", given.get("secret_key")) or "",
            verify_url=_verify_url(given.get("verify_url")),
            timeout=_challenge_number("timeout", given.get("timeout"), 5.0, MAX_CHALLENGE_TIMEOUT),
            hostnames=_hostnames(given.get("hostnames")),
            http_client=http_client,
        )
    except TypeError as exc:
        raise config_error(
            "challenge.service",
            f"{cls.__name__} could not be made with the challenge's keys ({exc})",
            "Subclass webauth.challenges.Challenge, whose constructor takes them.",
        ) from None
    if not isinstance(service, ChallengeService):
        raise config_error(
            "challenge.service",
            f"{cls.__name__} is not a challenge service",
            "Subclass webauth.challenges.Challenge (its verify, field and widget).",
        )
    # A subclass that forgot one would show a widget nobody can use, or post nowhere.
    for attribute, setting in _SERVICE_ATTRIBUTES.items():
        value = getattr(service, attribute, None)
        if not isinstance(value, str) or not value:
            raise config_error(
                "challenge.service",
                f"{cls.__name__} has no {attribute}",
                f"Set {cls.__name__}.{setting} (webauth.challenges.Challenge says what each is).",
            )
    return ChallengeOptions(
        service=service,
        on=_challenge_on(given.get("on")),
        when=when,
        share=_challenge_number("share", given.get("share"), 0.5, 1),
    )


def jwt(value: object, *, session_max_age: int) -> JWTOptions:
    """``jwt``: its ``max_age`` defaults to the session's."""
    j = keys_of("jwt", value, JWT_KEYS)
    return JWTOptions(
        max_age=as_seconds("jwt.max_age", j.get("max_age"), session_max_age),
        encode=as_callable("jwt.encode", j.get("encode")),
        decode=as_callable("jwt.decode", j.get("decode")),
    )


# -- extension points ---------------------------------------------------------------------
CALLBACK_KEYS = frozenset({"jwt", "session", "sign_in", "redirect", "token"})
EVENT_KEYS = frozenset(
    {
        "sign_in",
        "sign_out",
        "create_user",
        "update_user",
        "link_account",
        "session",
        # webauth's own
        "second_factor",
        "signup",
        "password_reset_requested",
        "password_changed",
        "access_token",
        "api_key",
    }
)
LOGGER_KEYS = frozenset({"error", "warn", "debug"})


def callbacks(value: object) -> CallbacksOptions:
    """``callbacks``: functions or dotted paths, sync or ``async def``."""
    c = keys_of("callbacks", value, CALLBACK_KEYS)
    return CallbacksOptions(**{k: as_callable(f"callbacks.{k}", v) for k, v in c.items()})


def events(value: object) -> Mapping[str, Callable[..., object]]:
    """``events``: one handler per event name."""
    e = keys_of("events", value, EVENT_KEYS)
    handlers = {k: fn for k, v in e.items() if (fn := as_callable(f"events.{k}", v)) is not None}
    return MappingProxyType(handlers)


def logger(value: object, *, debug: bool) -> AuthLogger:
    """``logger``: any of ``error``, ``warn``, ``debug`` replaced."""
    lg = keys_of("logger", value, LOGGER_KEYS)
    return AuthLogger(
        debug_enabled=debug,
        error=as_callable("logger.error", lg.get("error")),
        warn=as_callable("logger.warn", lg.get("warn")),
        debug=as_callable("logger.debug", lg.get("debug")),
    )


# -- cookies and pages --------------------------------------------------------------------
COOKIE_OPTION_KEYS = frozenset(
    {"http_only", "same_site", "path", "secure", "domain", "max_age", "partitioned"}
)
PAGE_KEYS = frozenset({"sign_in", "sign_out", "error", "verify_request", "new_user"})
THEME_KEYS = frozenset({"color_scheme", "logo", "brand_color", "button_text"})
EXPERIMENTAL_KEYS = frozenset({"enable_webauthn"})


def cookies(value: object) -> Mapping[str, CookieOverride]:
    """``cookies``: per cookie key, a ``name`` and/or ``options``."""
    overrides = {}
    for key, entry_value in keys_of("cookies", value, COOKIE_KEYS).items():
        entry = keys_of(f"cookies.{key}", entry_value, frozenset({"name", "options"}))
        options = keys_of(f"cookies.{key}.options", entry.get("options"), COOKIE_OPTION_KEYS)
        same_site = options.get("same_site")
        if same_site is not None and str(same_site).lower() not in ("lax", "strict", "none"):
            raise config_error(
                f"cookies.{key}.options",
                f"same_site must be lax, strict or none, got {same_site!r}",
                "Use 'lax' (the default), 'strict' or 'none' (which also needs secure=True).",
            )
        overrides[key] = CookieOverride(
            name=as_str(f"cookies.{key}.name", entry.get("name")),
            options=MappingProxyType(options),
        )
    return MappingProxyType(overrides)


def pages(value: object) -> PagesOptions:
    """``pages``: paths or URLs of the project's own pages."""
    pg = keys_of("pages", value, PAGE_KEYS)
    return PagesOptions(**{k: as_str(f"pages.{k}", v) for k, v in pg.items()})


def theme(value: object) -> Theme:
    """``theme``: how the built-in pages look."""
    th = keys_of("theme", value, THEME_KEYS)
    color_scheme = th.get("color_scheme", "auto")
    if color_scheme not in ("auto", "dark", "light"):
        raise config_error(
            "theme",
            f"color_scheme must be 'auto', 'dark' or 'light', got {color_scheme!r}",
            "Use 'auto' (follow the browser), 'dark' or 'light'.",
        )
    return Theme(
        color_scheme=color_scheme,
        logo=as_str("theme.logo", th.get("logo")) or "",
        brand_color=as_str("theme.brand_color", th.get("brand_color")) or "",
        button_text=as_str("theme.button_text", th.get("button_text")) or "",
    )


def experimental(value: object) -> Mapping[str, bool]:
    """``experimental``: feature switches, all off by default."""
    ex = keys_of("experimental", value, EXPERIMENTAL_KEYS)
    return MappingProxyType(
        {
            "enable_webauthn": bool(
                as_bool("experimental.enable_webauthn", ex.get("enable_webauthn"), False)
            )
        }
    )


# -- rate limits and the client's address ----------------------------------------------
def rate_limits(value: object, cache: object = None) -> RateLimitOptions:
    """``rate_limits`` (action -> rate or ``False``; ``False`` for all), ``rate_limit_cache``.

    A dict changes only the actions it names; the others keep their defaults. An
    action that webauth does not know is the project's own (for
    :func:`webauth.ratelimit.hit` in its views).
    """
    alias = as_str("rate_limit_cache", cache) or "default"
    if value is False:
        return RateLimitOptions(enabled=False, rules=MappingProxyType({}), cache=alias)
    if value is True:
        value = None
    if value is not None and not isinstance(value, Mapping):
        raise config_error(
            "rate_limits",
            f"must be a dict or False, not {type(value).__name__}",
            "E.g. {'signin_failed': '10/m/ip,5/5m/key'}, or False to turn every limit off.",
        )
    given = dict(value or {})
    rates: dict[str, object] = {**DEFAULT_RATE_LIMITS, **given}
    rules: dict[str, tuple[RateRule, ...]] = {}
    for action, rate in rates.items():
        if not isinstance(action, str) or not action:
            raise config_error(
                "rate_limits",
                f"has a key {action!r} that is not an action name",
                "Key it by action, e.g. {'signin_failed': '10/m/ip'} (docs/rate-limits.md "
                "lists them).",
            )
        if rate is False or rate is None:
            rules[action] = ()
            continue
        if not isinstance(rate, str):
            raise config_error(
                f"rate_limits.{action}",
                f"must be a rate string or False, got {type(rate).__name__}",
                "E.g. '10/m/ip,5/5m/key' (see docs/rate-limits.md).",
            )
        try:
            rules[action] = parse_rate(rate)
        except ValueError as exc:
            raise config_error(
                f"rate_limits.{action}",
                f"is not a valid rate: {exc}",
                "Write <amount>/<duration>/<scope>[,...], e.g. '10/m/ip,5/5m/key'.",
            ) from None
    return RateLimitOptions(enabled=True, rules=MappingProxyType(rules), cache=alias)


TRUSTED_PROXY_KEYS = frozenset({"networks", "count"})


def trusted_proxies(value: object) -> TrustedProxies:
    """``trusted_proxies``: a hop count, a list of CIDRs, or ``{"networks": [...], "count": n}``."""
    if value is None or value == 0 or value == [] or value == ():
        return TrustedProxies()
    fix = (
        "Give the number of proxies in front of Django (e.g. 1), a list of their "
        "networks (e.g. ['10.0.0.0/8']), or {'networks': [...], 'count': n}."
    )
    if isinstance(value, bool):
        raise config_error("trusted_proxies", f"must not be {value!r}", fix)
    if isinstance(value, int):
        count, networks = value, []
    elif isinstance(value, str):
        raise config_error("trusted_proxies", "must be a list, not a string", fix)
    elif isinstance(value, list | tuple):
        count, networks = 0, list(value)
    else:
        d = keys_of("trusted_proxies", value, TRUSTED_PROXY_KEYS)
        count, networks = d.get("count", 0), d.get("networks") or []
        if isinstance(networks, str) or not isinstance(networks, list | tuple):
            raise config_error("trusted_proxies.networks", "must be a list of CIDRs", fix)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise config_error(
            "trusted_proxies", f"count must be a whole number >= 0, got {count!r}", fix
        )
    if not all(isinstance(n, str) for n in networks):
        raise config_error("trusted_proxies", "networks must be strings such as '10.0.0.0/8'", fix)
    try:
        parsed = networks_from(networks)
    except ValueError as exc:
        raise config_error(
            "trusted_proxies", f"has a network that is not a CIDR ({exc})", fix
        ) from None
    return TrustedProxies(networks=parsed, count=count)


# -- apps -------------------------------------------------------------------------------
#: Hosts an ``http://`` app redirect URI may name: the device itself (RFC 8252 7.3).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def app_redirect_uris(value: object) -> tuple[str, ...]:
    """``app_redirect_uris``: the exact redirect URIs native apps and SPAs may use.

    Each is an absolute URI without a fragment or a wildcard: a custom scheme
    (``com.example.app:/oauth2redirect``, RFC 8252 7.1), ``https://`` (a claimed
    link, 7.2), or ``http://`` on a loopback address only (7.3).
    """
    fix = (
        "List exact URIs, e.g. ['com.example.app:/oauth2redirect', "
        "'https://app.example.com/oauth/callback', 'http://127.0.0.1/callback']."
    )
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise config_error("app_redirect_uris", "must be a list of URIs", fix)
    for uri in value:
        problem = _app_redirect_uri_problem(uri)
        if problem is not None:
            raise config_error("app_redirect_uris", f"has {uri!r}, which {problem}", fix)
    return tuple(value)


def _app_redirect_uri_problem(uri: object) -> str | None:
    if not isinstance(uri, str) or not uri:
        return "is not a string"
    if "*" in uri or any(c.isspace() for c in uri) or not uri.isprintable():
        return "holds a wildcard, a space or a control character (only exact URIs match)"
    try:
        parts = urlsplit(uri)
        hostname = parts.hostname
    except ValueError:
        return "is not a URI"
    scheme = parts.scheme.lower()
    if not re.fullmatch(r"[a-z][a-z0-9+.-]*", scheme):
        return "has no scheme"
    if parts.fragment or "#" in uri:
        return "has a fragment (OAuth forbids one)"
    if scheme in ("javascript", "data", "file", "vbscript", "about", "blob"):
        return "has a scheme no browser may be sent to"
    if scheme == "https" and not hostname:
        return "has no host"
    if scheme == "http" and hostname not in LOOPBACK_HOSTS:
        return "is http:// on a host other than the loopback (127.0.0.1, [::1], localhost)"
    if scheme not in ("http", "https") and not parts.path and not parts.netloc:
        return "has nothing after its scheme"
    return None
