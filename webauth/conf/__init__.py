"""``settings.WEBAUTH`` and the environment, read into one frozen config object.

Use :func:`get_config` to read it; it is built once and rebuilt when Django's
``setting_changed`` signal fires (so ``override_settings`` works in tests).

Every option of Auth.js is accepted under its snake_case name. An unknown key,
a wrong type or an impossible combination raises ``ImproperlyConfigured``
naming the key and the fix. Callables may be given as objects or dotted paths.
The objects a project puts in its settings (providers, adapters, callbacks) are
used as they are and never changed.

The package: :mod:`.options` (the frozen dataclasses), :mod:`.values` (reading
one raw value), :mod:`.sections` (one builder per section), :mod:`.env`
(Auth.js's environment defaults).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from django.conf import settings

from . import sections
from .env import set_env_defaults
from .options import (
    COOKIE_KEYS,
    DEFAULT_MAX_AGE,
    DEFAULT_UPDATE_AGE,
    AccountOptions,
    CallbacksOptions,
    Config,
    CookieOverride,
    JWTOptions,
    MfaOptions,
    PagesOptions,
    RateLimitOptions,
    RateRule,
    SessionOptions,
    Theme,
)
from .values import ConfigError, as_bool, as_callable, as_str, keys_of

__all__ = [
    "COOKIE_KEYS",
    "DEFAULT_MAX_AGE",
    "DEFAULT_UPDATE_AGE",
    "AccountOptions",
    "CallbacksOptions",
    "Config",
    "ConfigError",
    "CookieOverride",
    "JWTOptions",
    "MfaOptions",
    "PagesOptions",
    "RateLimitOptions",
    "RateRule",
    "SessionOptions",
    "Theme",
    "build_config",
    "get_config",
    "reset_config",
    "set_env_defaults",
]


def build_config(
    raw: Mapping[str, object] | None, env: Callable[[str], str | None], *, warn: bool = True
) -> Config:
    """Validate a raw ``WEBAUTH`` dict (plus the environment) into a :class:`Config`.

    *raw* is read, never changed: the environment's defaults go into a copy.
    The start-up warnings (``debug-enabled``, ``csrf-disabled``,
    ``experimental-webauthn``) are logged unless *warn* is false: the system
    check builds a copy of its own only to validate it, and the configuration
    in use (:func:`get_config`) says them once.
    """
    data = keys_of("WEBAUTH", raw, sections.TOP_LEVEL_KEYS)
    data["providers"] = sections.providers(data.get("providers"))
    set_env_defaults(env, data)
    providers = tuple(data["providers"])
    sections.validate_providers(providers)

    adapter = sections.adapter(data.get("adapter"))
    session = sections.session(data.get("session"), has_adapter=adapter is not None)
    debug = bool(as_bool("debug", data.get("debug"), False))
    config = Config(
        providers=providers,
        adapter=adapter,
        base_path=sections.base_path(data.get("base_path")),
        secret=sections.secret(data.get("secret")),
        session=session,
        jwt=sections.jwt(data.get("jwt"), session_max_age=session.max_age),
        callbacks=sections.callbacks(data.get("callbacks")),
        events=sections.events(data.get("events")),
        cookies=sections.cookies(data.get("cookies")),
        pages=sections.pages(data.get("pages")),
        debug=debug,
        logger=sections.logger(data.get("logger"), debug=debug),
        experimental=sections.experimental(data.get("experimental")),
        trust_host=bool(as_bool("trust_host", data.get("trust_host"), True)),
        use_secure_cookies=as_bool("use_secure_cookies", data.get("use_secure_cookies"), None),
        redirect_proxy_url=as_str("redirect_proxy_url", data.get("redirect_proxy_url")),
        skip_csrf_check=bool(as_bool("skip_csrf_check", data.get("skip_csrf_check"), False)),
        theme=sections.theme(data.get("theme")),
        http_client=as_callable("http_client", data.get("http_client")),
        url=sections.url(data.get("url")),
        protected_paths=sections.protected_paths(data.get("protected_paths")),
        rate_limits=sections.rate_limits(data.get("rate_limits"), data.get("rate_limit_cache")),
        trusted_proxies=sections.trusted_proxies(data.get("trusted_proxies")),
        bearer=bool(as_bool("bearer", data.get("bearer"), False)),
        app_redirect_uris=sections.app_redirect_uris(data.get("app_redirect_uris")),
        reauth_max_age=sections.reauth_max_age(data.get("reauth_max_age")),
        mfa=sections.mfa(data.get("mfa")),
        openapi=bool(as_bool("openapi", data.get("openapi"), False)),
        account=sections.account(data.get("account")),
    )
    if warn:
        _warn(config)
    return config


def _warn(config: Config) -> None:
    # Auth.js's start-up warnings, in its codes.
    if config.debug:
        config.logger.warn("debug-enabled")
    if config.skip_csrf_check:
        config.logger.warn("csrf-disabled")
    if config.experimental["enable_webauthn"]:
        config.logger.warn("experimental-webauthn")


_config: Config | None = None


def get_config() -> Config:
    """The current configuration, built on first use from ``settings.WEBAUTH``."""
    global _config
    if _config is None:
        _config = build_config(getattr(settings, "WEBAUTH", None), os.environ.get)
    return _config


def reset_config(**kwargs: object) -> None:
    """Forget the cached config (connected to ``setting_changed``)."""
    global _config
    if kwargs.get("setting") in (None, "WEBAUTH"):
        _config = None
