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
import threading
from collections.abc import Callable, Collection, Mapping

from django.conf import settings

from . import sections
from .env import set_env_defaults
from .options import (
    COOKIE_KEYS,
    DEFAULT_MAX_AGE,
    DEFAULT_UPDATE_AGE,
    AccountOptions,
    CallbacksOptions,
    ChallengeOptions,
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
    "ChallengeOptions",
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
    "startup_warnings",
]


def build_config(
    raw: Mapping[str, object] | None, env: Callable[[str], str | None], *, warn: bool = True
) -> Config:
    """Validate a raw ``WEBAUTH`` dict (plus the environment) into a :class:`Config`.

    *raw* is read, never changed: the environment's defaults go into a copy.
    The start-up warnings (``debug-enabled``, ``csrf-disabled``,
    ``experimental-webauthn``: :func:`startup_warnings`) are logged unless
    *warn* is false: the system check builds a copy of its own only to
    validate it, and :func:`get_config` builds the configuration in use
    without them and says them once per process.
    """
    data = keys_of("WEBAUTH", raw, sections.TOP_LEVEL_KEYS)
    data["providers"] = sections.providers(data.get("providers"))
    set_env_defaults(env, data)
    providers = tuple(data["providers"])
    sections.validate_providers(providers)

    adapter = sections.adapter(data.get("adapter"))
    session = sections.session(data.get("session"), has_adapter=adapter is not None)
    debug = bool(as_bool("debug", data.get("debug"), False))
    http_client = as_callable("http_client", data.get("http_client"))
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
        http_client=http_client,
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
        passwords=sections.passwords(data.get("passwords")),
        challenge=sections.challenge(data.get("challenge"), http_client=http_client),
        tokens=sections.tokens(data.get("tokens")),
        api_keys=sections.api_keys(data.get("api_keys")),
    )
    if warn:
        _warn(config)
    return config


def startup_warnings(config: Config) -> tuple[str, ...]:
    """The codes of Auth.js's start-up warnings that *config* calls for, in its order."""
    codes = []
    if config.debug:
        codes.append("debug-enabled")
    if config.skip_csrf_check:
        codes.append("csrf-disabled")
    if config.experimental["enable_webauthn"]:
        codes.append("experimental-webauthn")
    return tuple(codes)


def _warn(config: Config, said: Collection[str] = ()) -> None:
    """Log *config*'s start-up warnings, but those in *said*."""
    for code in startup_warnings(config):
        if code not in said:
            config.logger.warn(code)


_config: Config | None = None

#: What the configuration in use said at start-up: its logger's ``warn``
#: function and the codes whose cause it had. One process says each warning once.
_said: tuple[object, frozenset[str]] = (None, frozenset())
_publish = threading.Lock()


def get_config() -> Config:
    """The current configuration, built on first use from ``settings.WEBAUTH``.

    The first one a process builds logs its start-up warnings
    (:func:`startup_warnings`); one rebuilt after ``setting_changed`` (tests'
    ``override_settings``) logs only those whose cause the configuration it
    replaces did not have, or all of them when the logger's ``warn`` function
    changed (they then go somewhere new). So a process says each warning once
    while its cause lasts, and again only if the cause went and came back.
    """
    global _config, _said
    config = _config
    if config is not None:
        return config
    built = build_config(getattr(settings, "WEBAUTH", None), os.environ.get, warn=False)
    with _publish:  # two threads that built at once: one publishes, and warns
        if _config is not None:
            return _config
        target = built.logger.warn_function
        before = _said[1] if _said[0] == target else frozenset()
        _said = (target, frozenset(startup_warnings(built)))
        _config = built
    _warn(built, before)
    return built


def reset_config(**kwargs: object) -> None:
    """Forget the cached config (connected to ``setting_changed``)."""
    global _config
    if kwargs.get("setting") in (None, "WEBAUTH"):
        _config = None
