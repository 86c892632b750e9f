"""``settings.WEBAUTH`` and the environment, read into one frozen config object.

Use :func:`get_config` to read it; it is built once and rebuilt when Django's
``setting_changed`` signal fires (so ``override_settings`` works in tests).

Every option of Auth.js is accepted under its snake_case name. An unknown key,
a wrong type or an impossible combination raises ``ImproperlyConfigured``
naming the key and the fix. Callables may be given as objects or dotted paths.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .logger import AuthLogger
from .providers.base import Provider
from .utils import resolve

__all__ = [
    "COOKIE_KEYS",
    "CallbacksOptions",
    "Config",
    "ConfigError",
    "CookieOverride",
    "JWTOptions",
    "PagesOptions",
    "SessionOptions",
    "Theme",
    "build_config",
    "get_config",
    "reset_config",
    "set_env_defaults",
]

DEFAULT_MAX_AGE = 30 * 24 * 60 * 60
DEFAULT_UPDATE_AGE = 24 * 60 * 60

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
    }
)
SESSION_KEYS = frozenset({"strategy", "max_age", "update_age", "generate_session_token"})
JWT_KEYS = frozenset({"max_age", "encode", "decode"})
CALLBACK_KEYS = frozenset({"jwt", "session", "sign_in", "redirect"})
EVENT_KEYS = frozenset(
    {"sign_in", "sign_out", "create_user", "update_user", "link_account", "session"}
)
PAGE_KEYS = frozenset({"sign_in", "sign_out", "error", "verify_request", "new_user"})
LOGGER_KEYS = frozenset({"error", "warn", "debug"})
EXPERIMENTAL_KEYS = frozenset({"enable_webauthn"})
THEME_KEYS = frozenset({"color_scheme", "logo", "brand_color", "button_text"})
COOKIE_KEYS = frozenset(
    {
        "session_token",
        "callback_url",
        "csrf_token",
        "pkce_code_verifier",
        "state",
        "nonce",
        "webauthn_challenge",
    }
)
COOKIE_OPTION_KEYS = frozenset(
    {"http_only", "same_site", "path", "secure", "domain", "max_age", "partitioned"}
)


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """``session.*``: the strategy and the session's lifetime."""

    strategy: str = "jwt"
    max_age: int = DEFAULT_MAX_AGE
    update_age: int = DEFAULT_UPDATE_AGE
    generate_session_token: Callable[[], str] | None = None


@dataclass(frozen=True, slots=True)
class JWTOptions:
    """``jwt.*``: token lifetime and optional replacements for encode/decode."""

    max_age: int = DEFAULT_MAX_AGE
    encode: Callable[..., str] | None = None
    decode: Callable[..., Any] | None = None


@dataclass(frozen=True, slots=True)
class CallbacksOptions:
    """User callbacks; ``None`` means the default behaviour."""

    jwt: Callable[..., Any] | None = None
    session: Callable[..., Any] | None = None
    sign_in: Callable[..., Any] | None = None
    redirect: Callable[..., Any] | None = None


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
class CookieOverride:
    """A ``cookies`` entry: a different name and/or different attributes."""

    name: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Config:
    """The validated configuration. Build it with :func:`get_config`."""

    providers: tuple[Provider, ...] = ()
    adapter: Any = None
    base_path: str = "/auth"
    secret: tuple[str, ...] = ()
    session: SessionOptions = SessionOptions()
    jwt: JWTOptions = JWTOptions()
    callbacks: CallbacksOptions = CallbacksOptions()
    events: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
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
    http_client: Callable[[], Any] | None = None
    url: str | None = None
    protected_paths: tuple[str, ...] = ()
    _providers_by_id: dict[str, Provider] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_providers_by_id", {p.id: p for p in self.providers})

    def get_provider(self, provider_id: str | None) -> Provider | None:
        """The provider with this id, or ``None``."""
        if provider_id is None:
            return None
        return self._providers_by_id.get(provider_id)

    @property
    def csrf_secret(self) -> str:
        """The secret as Auth.js hashes with it: a list becomes the comma-joined string."""
        return ",".join(self.secret)

    @property
    def url_origin(self) -> str | None:
        """Origin (``scheme://host[:port]``) of ``url``/``AUTH_URL``, when set."""
        if not self.url:
            return None
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"


class ConfigError(ImproperlyConfigured):
    """An invalid ``settings.WEBAUTH``; ``check_id`` is the system check that reports it."""

    def __init__(self, message: str, check_id: str = "webauth.E001") -> None:
        super().__init__(message)
        self.check_id = check_id


def _err(key: str, problem: str, fix: str, check_id: str = "webauth.E001") -> ConfigError:
    where = "settings.WEBAUTH" if key == "WEBAUTH" else f"WEBAUTH[{key!r}]"
    return ConfigError(f"{where} {problem}. {fix}".strip(), check_id)


#: Auth.js names whose snake_case form is not the webauth option's name.
_RENAMED = {"customFetch": "http_client", "enableWebAuthn": "enable_webauthn"}


def _snake_case(key: str) -> str:
    """``maxAge`` -> ``max_age``, ``skipCSRFCheck`` -> ``skip_csrf_check``."""
    if key in _RENAMED:
        return _RENAMED[key]
    key = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", key).lower()


def _check_keys(name: str, value: Any, allowed: frozenset[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _err(name, f"must be a dict, not {type(value).__name__}", "Use {...}.")
    unknown = sorted(set(value) - allowed, key=str)
    if unknown:
        hints = [
            f"Did you mean {_snake_case(k)!r}?"
            for k in unknown
            if isinstance(k, str) and _snake_case(k) in allowed
        ]
        raise _err(
            name,
            f"has unknown key(s) {', '.join(map(repr, unknown))}",
            " ".join(
                [
                    *hints,
                    f"Allowed keys: {', '.join(sorted(allowed))} "
                    "(snake_case names of Auth.js options).",
                ]
            ),
        )
    return dict(value)


def _callable(name: str, value: Any) -> Callable[..., Any] | None:
    if value is None:
        return None
    try:
        fn = resolve(value)
    except ImportError as exc:
        raise _err(name, f"could not import {value!r} ({exc})", "Fix the dotted path.") from exc
    if not callable(fn):
        raise _err(name, f"must be callable, got {type(fn).__name__}", "Give a function.")
    return fn


def _int(name: str, value: Any, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _err(name, f"must be a non-negative number of seconds, got {value!r}", "")
    return value


def _bool(name: str, value: Any, default: bool | None) -> bool | None:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _err(name, f"must be True or False, got {value!r}", "")
    return value


def _str(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _err(name, f"must be a string, got {type(value).__name__}", "")
    return value


def _provider(index: int, value: Any) -> Provider:
    obj = value
    if isinstance(obj, str) and "." not in obj:
        # A built-in provider by id: "github", "google", "microsoft-entra-id"...
        from .providers.catalog import provider_class

        try:
            obj = provider_class(obj)
        except KeyError:
            raise _err(
                f"providers[{index}]",
                f"{value!r} is not a built-in provider id",
                "See docs/providers.md for the catalog, or give a dotted path.",
            ) from None
    elif isinstance(obj, str):
        try:
            obj = resolve(obj)
        except ImportError as exc:
            raise _err(f"providers[{index}]", f"could not import {value!r}", str(exc)) from exc
    if isinstance(obj, type) and issubclass(obj, Provider):
        obj = obj()
    if not isinstance(obj, Provider):
        raise _err(
            f"providers[{index}]",
            f"must be a webauth provider, got {obj!r}",
            "Use e.g. webauth.providers.DjangoCredentials() or a dotted path to one.",
        )
    return obj


def set_env_defaults(env: Callable[[str], str | None], config: dict[str, Any]) -> None:
    """Fill *config* (a raw ``WEBAUTH`` dict) from the environment, as Auth.js does.

    * ``secret``: when unset, ``[AUTH_SECRET_3, AUTH_SECRET_2, AUTH_SECRET_1, AUTH_SECRET]``
      (missing ones skipped), so the highest-numbered secret signs new tokens.
    * ``url`` from ``AUTH_URL``; ``base_path`` from its path when ``base_path`` is unset.
    * ``trust_host`` from ``AUTH_URL`` / ``AUTH_TRUST_HOST`` when unset.
    * ``redirect_proxy_url`` from ``AUTH_REDIRECT_PROXY_URL``.
    * each provider's ``AUTH_<ID>_ID`` / ``_SECRET`` / ``_ISSUER``.
    """
    if not config.get("secret"):
        secrets = []
        if env("AUTH_SECRET"):
            secrets.append(env("AUTH_SECRET"))
        for i in (1, 2, 3):
            value = env(f"AUTH_SECRET_{i}")
            if value:
                secrets.insert(0, value)
        if secrets:
            config["secret"] = secrets
    auth_url = env("AUTH_URL")
    if auth_url and not config.get("url"):
        config["url"] = auth_url
    if config.get("url") and config.get("base_path") is None:
        parts = urlsplit(config["url"])
        if parts.scheme in ("http", "https") and parts.netloc:
            # Unlike Auth.js, an AUTH_URL without a path keeps the default /auth
            # rather than moving every route to the site root.
            path = parts.path.rstrip("/")
            if path:
                config["base_path"] = path
    if config.get("trust_host") is None:
        for name in ("AUTH_URL", "AUTH_TRUST_HOST"):
            if env(name) is not None:
                # As Auth.js: any non-empty value trusts, except an explicit "false"
                # (Auth.js trusts "false" too; we do not keep that trap).
                config["trust_host"] = (env(name) or "").strip().lower() not in ("", "0", "false")
                break
    if config.get("redirect_proxy_url") is None and env("AUTH_REDIRECT_PROXY_URL"):
        config["redirect_proxy_url"] = env("AUTH_REDIRECT_PROXY_URL")
    for provider in config.get("providers") or ():
        if isinstance(provider, Provider):
            provider.apply_env(env)


def build_config(raw: Mapping[str, Any] | None, env: Callable[[str], str | None]) -> Config:
    """Validate a raw ``WEBAUTH`` dict (plus the environment) into a :class:`Config`."""
    data = _check_keys("WEBAUTH", raw, TOP_LEVEL_KEYS) if raw is not None else {}
    if raw is not None and not isinstance(raw, Mapping):
        raise ImproperlyConfigured("settings.WEBAUTH must be a dict.")

    providers_raw = data.get("providers") or []
    if not isinstance(providers_raw, list | tuple):
        raise _err("providers", "must be a list", "Use [Provider(), ...].")
    providers = tuple(_provider(i, p) for i, p in enumerate(providers_raw))
    data["providers"] = providers
    set_env_defaults(env, data)
    seen: set[str] = set()
    for p in providers:
        for problem in p.validate():
            raise _err("providers", problem, "", "webauth.E004")
        if p.id in seen:
            raise _err(
                "providers", f"has two providers with id {p.id!r}", "Give one of them id=..."
            )
        seen.add(p.id)

    secret = data.get("secret")
    if isinstance(secret, str):
        secrets: tuple[str, ...] = (secret,) if secret else ()
    elif isinstance(secret, list | tuple) and all(isinstance(s, str) for s in secret):
        secrets = tuple(s for s in secret if s)
    elif secret is None:
        secrets = ()
    else:
        raise _err("secret", "must be a string or a list of strings", "Put the newest first.")

    adapter = data.get("adapter")
    if isinstance(adapter, str):
        try:
            adapter = resolve(adapter)
        except ImportError as exc:
            raise _err("adapter", f"could not import {data['adapter']!r}", str(exc)) from exc
    if isinstance(adapter, type):
        adapter = adapter()

    base_path = _str("base_path", data.get("base_path")) or "/auth"
    if not base_path.startswith("/"):
        raise _err("base_path", f"must start with '/', got {base_path!r}", "Use e.g. '/auth'.")
    base_path = base_path.rstrip("/") or ""

    s = _check_keys("session", data.get("session"), SESSION_KEYS)
    strategy = s.get("strategy") or ("database" if adapter is not None else "jwt")
    if strategy not in ("jwt", "database"):
        raise _err("session", f"strategy must be 'jwt' or 'database', got {strategy!r}", "")
    if strategy == "database" and adapter is None:
        raise _err(
            "session",
            "strategy 'database' needs an adapter",
            "Set WEBAUTH['adapter'] (e.g. 'webauth.adapters.django.DjangoAdapter') "
            "or use the 'jwt' strategy.",
            "webauth.E003",
        )
    session = SessionOptions(
        strategy=strategy,
        max_age=_int("session.max_age", s.get("max_age"), DEFAULT_MAX_AGE),
        update_age=_int("session.update_age", s.get("update_age"), DEFAULT_UPDATE_AGE),
        generate_session_token=_callable(
            "session.generate_session_token", s.get("generate_session_token")
        ),
    )

    j = _check_keys("jwt", data.get("jwt"), JWT_KEYS)
    jwt = JWTOptions(
        max_age=_int("jwt.max_age", j.get("max_age"), session.max_age),
        encode=_callable("jwt.encode", j.get("encode")),
        decode=_callable("jwt.decode", j.get("decode")),
    )

    c = _check_keys("callbacks", data.get("callbacks"), CALLBACK_KEYS)
    callbacks = CallbacksOptions(**{k: _callable(f"callbacks.{k}", v) for k, v in c.items()})

    e = _check_keys("events", data.get("events"), EVENT_KEYS)
    events = {k: fn for k, v in e.items() if (fn := _callable(f"events.{k}", v)) is not None}

    ck = _check_keys("cookies", data.get("cookies"), COOKIE_KEYS)
    cookies = {}
    for key, value in ck.items():
        entry = _check_keys(f"cookies.{key}", value, frozenset({"name", "options"}))
        options = _check_keys(f"cookies.{key}.options", entry.get("options"), COOKIE_OPTION_KEYS)
        same_site = options.get("same_site")
        if same_site is not None and str(same_site).lower() not in ("lax", "strict", "none"):
            raise _err(f"cookies.{key}.options", "same_site must be lax, strict or none", "")
        cookies[key] = CookieOverride(
            name=_str(f"cookies.{key}.name", entry.get("name")),
            options=MappingProxyType(options),
        )

    pg = _check_keys("pages", data.get("pages"), PAGE_KEYS)
    pages = PagesOptions(**{k: _str(f"pages.{k}", v) for k, v in pg.items()})

    lg = _check_keys("logger", data.get("logger"), LOGGER_KEYS)
    debug = bool(_bool("debug", data.get("debug"), False))
    auth_logger = AuthLogger(
        debug_enabled=debug,
        error=_callable("logger.error", lg.get("error")),
        warn=_callable("logger.warn", lg.get("warn")),
        debug=_callable("logger.debug", lg.get("debug")),
    )

    ex = _check_keys("experimental", data.get("experimental"), EXPERIMENTAL_KEYS)
    experimental = {
        "enable_webauthn": bool(
            _bool("experimental.enable_webauthn", ex.get("enable_webauthn"), False)
        )
    }

    th = _check_keys("theme", data.get("theme"), THEME_KEYS)
    color_scheme = th.get("color_scheme", "auto")
    if color_scheme not in ("auto", "dark", "light"):
        raise _err("theme", "color_scheme must be 'auto', 'dark' or 'light'", "")
    theme = Theme(
        color_scheme=color_scheme,
        logo=_str("theme.logo", th.get("logo")) or "",
        brand_color=_str("theme.brand_color", th.get("brand_color")) or "",
        button_text=_str("theme.button_text", th.get("button_text")) or "",
    )

    url = _str("url", data.get("url"))
    if url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise _err(
                "url",
                f"must be an absolute http(s) URL, got {url!r}",
                "Set it (or the AUTH_URL environment variable) to e.g. 'https://example.com/auth'.",
            )

    protected = data.get("protected_paths") or ()
    if isinstance(protected, str) or not all(isinstance(p, str) for p in protected):
        raise _err("protected_paths", "must be a list of path prefixes", "E.g. ['/account/'].")

    config = Config(
        providers=providers,
        adapter=adapter,
        base_path=base_path,
        secret=secrets,
        session=session,
        jwt=jwt,
        callbacks=callbacks,
        events=MappingProxyType(events),
        cookies=MappingProxyType(cookies),
        pages=pages,
        debug=debug,
        logger=auth_logger,
        experimental=MappingProxyType(experimental),
        trust_host=bool(_bool("trust_host", data.get("trust_host"), True)),
        use_secure_cookies=_bool("use_secure_cookies", data.get("use_secure_cookies"), None),
        redirect_proxy_url=_str("redirect_proxy_url", data.get("redirect_proxy_url")),
        skip_csrf_check=bool(_bool("skip_csrf_check", data.get("skip_csrf_check"), False)),
        theme=theme,
        http_client=_callable("http_client", data.get("http_client")),
        url=url,
        protected_paths=tuple(protected),
    )
    if debug:
        auth_logger.warn("debug-enabled")
    if config.skip_csrf_check:
        auth_logger.warn("csrf-disabled")
    if experimental["enable_webauthn"]:
        auth_logger.warn("experimental-webauthn")
    return config


_config: Config | None = None


def get_config() -> Config:
    """The current configuration, built on first use from ``settings.WEBAUTH``."""
    global _config
    if _config is None:
        _config = build_config(getattr(settings, "WEBAUTH", None), os.environ.get)
    return _config


def reset_config(**kwargs: Any) -> None:
    """Forget the cached config (connected to ``setting_changed``)."""
    global _config
    if kwargs.get("setting") in (None, "WEBAUTH"):
        _config = None
