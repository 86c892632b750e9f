"""System checks: configuration mistakes caught at start-up (``manage.py check``).

=================  ==============================================================
id                 problem
=================  ==============================================================
``webauth.E001``   ``settings.WEBAUTH`` is invalid (the message names the key)
``webauth.E002``   no secret (``WEBAUTH["secret"]`` or ``AUTH_SECRET``)
``webauth.W001``   secret shorter than 32 characters
``webauth.E003``   ``database`` session strategy without an adapter
``webauth.E004``   a provider lacks a setting it needs (client id, ``authorize``...)
``webauth.E005``   ``base_path`` does not match where ``webauth.urls`` is included
``webauth.E006``   ``AuthMiddleware`` missing from ``MIDDLEWARE``
``webauth.E007``   ``AuthMiddleware`` before ``AuthenticationMiddleware``
``webauth.W002``   no providers configured
``webauth.W003``   ``skip_csrf_check`` is on
``webauth.W004``   ``base_path`` repeats the path of ``url``/``AUTH_URL`` (redundant)
``webauth.W005``   the path of ``url``/``AUTH_URL`` differs from ``base_path`` (ignored)
``webauth.E008``   the adapter lacks methods a configured flow, the session strategy or
                   the second factor calls, or an email provider or ``mfa`` has no
                   adapter at all
``webauth.E009``   rate limits (or bearer app OAuth sign-in, or ``mfa``) on, but their cache is
                   ``DummyCache`` or not in ``CACHES``
``webauth.W006``   the same in ``LocMemCache`` with ``DEBUG = False`` (per process)
``webauth.W007``   the same in a cache that is not atomic (database, file)
``webauth.E010``   ``session.absolute_max_age`` is not a positive number of seconds
``webauth.I001``   ``session.absolute_max_age`` is shorter than ``session.max_age``
``webauth.W008``   an email provider sends from Django's ``webmaster@localhost``
``webauth.W009``   an email provider's ``EMAIL_BACKEND`` delivers nothing (console,
                   locmem, dummy, file) with ``DEBUG = False``
``webauth.I002``   an email provider has ``confirm_link=False`` (scanners use links up)
``webauth.E011``   a provider needs an experimental switch that is off (WebAuthn:
                   ``experimental={"enable_webauthn": True}``)
``webauth.E012``   a WebAuthn provider's relying party id is not a registrable suffix
                   of an allowed origin's host
``webauth.E013``   WebAuthn autofill misconfigured: two providers with
                   ``enable_conditional_ui``, or one without a ``webauthn`` field
``webauth.W010``   a WebAuthn provider allows an ``http://`` origin other than localhost
``webauth.W011``   no ``DjangoTemplates`` engine has the ``request`` context processor
                   that webauth's template tags and passkeys page need
``webauth.W012``   ``rate_limits`` names an action webauth does not use that is close
                   to one it does (``signin_faild``): a typo leaves the default on
``webauth.W013``   ``theme.brand_color`` / ``theme.button_text``, or a provider's
                   button ``style``, below WCAG 2.1 AA contrast (4.5:1)
``webauth.W014``   ``account.home_url`` is a URL name that does not reverse (the
                   account center's home link would go to ``/``)
``webauth.E014``   ``challenge`` without its ``site_key`` or ``secret_key``: every
                   request it guards would be refused
``webauth.W015``   ``challenge`` with ``when: "abuse"`` for an action whose rate limit
                   has no per-address rule (or the limits are off): never asked
``webauth.E015``   ``passwords.signup`` is on without a ``DjangoCredentials`` provider,
                   its ``form`` names no form class, or the adapter lacks a method
                   sign-up calls
``webauth.E016``   ``passwords.reset`` is on and the adapter lacks a method the reset
                   calls (its grants, ``get_user_by_email``)
``webauth.W016``   ``passwords.reset`` would send from ``webmaster@localhost`` (no
                   sender, ``DEBUG`` off)
``webauth.W017``   ``passwords.reset`` is on without a ``DjangoCredentials`` provider
``webauth.E017``   ``PwnedPasswordValidator`` in ``AUTH_PASSWORD_VALIDATORS`` with
                   invalid ``OPTIONS``, or a ``cache`` not in ``CACHES``
``webauth.W018``   ``PwnedPasswordValidator``'s cache is a ``DummyCache``: every
                   password checked asks the range API again
``webauth.W019``   ``PwnedPasswordValidator``'s ``api_url`` is plain ``http://`` to
                   a host other than localhost
``webauth.E018``   ``tokens.keys`` missing, or a key that must not sign: a shared
                   secret, RSA under 2048 bits, a curve that does not fit, a public
                   first key, another ``use``, two keys with one ``kid``
``webauth.E019``   ``api_keys.owners`` names a model that is not installed, or the
                   user model (a user's keys need no owner), or is not a list of
                   model labels; ``api_keys.owners_of`` without ``owners``
``webauth.E020``   ``session.user_check_cache`` names a cache that is not in ``CACHES``,
                   cannot be opened, or is a ``DummyCache``
``webauth.W020``   ``session.user_check_cache`` in ``LocMemCache`` with ``DEBUG = False``:
                   a revocation reaches the other processes only after ``max_staleness``
=================  ==============================================================
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import InvalidCacheBackendError, caches
from django.core.checks import CheckMessage, Error, Info, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured
from django.urls import NoReverseMatch, get_script_prefix, reverse

from .adapters.base import FLOW_METHODS, missing_methods
from .colors import contrast_ratio, css_rgb
from .conf import Config, ConfigError, build_config, get_config
from .conf.options import CHALLENGE_ACTIONS, DEFAULT_RATE_LIMITS
from .flows import flow_for, providers_with
from .passwords import signup
from .passwords.breached import system_checks as breached_checks
from .passwords.forms import signup_form_class
from .passwords.reset import system_checks as reset_checks
from .sessions import strategy_of
from .utils import did_you_mean

if TYPE_CHECKING:
    from django.apps import AppConfig

MIDDLEWARE_PATH = "webauth.middleware.AuthMiddleware"
DJANGO_AUTH_MIDDLEWARE = "django.contrib.auth.middleware.AuthenticationMiddleware"
MIN_SECRET_LENGTH = 32


@register(Tags.security, Tags.compatibility)
def check_config(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: object
) -> list[CheckMessage]:
    """Validate ``settings.WEBAUTH`` and the environment."""
    raw = getattr(settings, "WEBAUTH", None)
    try:
        config = build_config(raw, os.environ.get, warn=False)
    except ConfigError as exc:
        return [Error(exc.problem, hint=exc.hint or None, id=exc.check_id)]
    except ImproperlyConfigured as exc:
        # Raised by a provider's or an adapter's own code while the config was built.
        return [
            Error(
                f"settings.WEBAUTH could not be read: {exc}",
                hint="Correct the option the message names (docs/configuration.md).",
                id="webauth.E001",
            )
        ]

    messages: list[CheckMessage] = []
    if not config.secret:
        messages.append(
            Error(
                "webauth has no secret to encrypt sessions and sign cookies.",
                hint="Set WEBAUTH['secret'] or the AUTH_SECRET environment variable to a "
                "random string, e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'.",
                id="webauth.E002",
            )
        )
    elif any(len(s) < MIN_SECRET_LENGTH for s in config.secret):
        messages.append(
            Warning(
                f"A webauth secret is shorter than {MIN_SECRET_LENGTH} characters.",
                hint="Use at least 32 random characters "
                "(python -c 'import secrets; print(secrets.token_urlsafe(32))').",
                id="webauth.W001",
            )
        )
    for provider in config.providers:
        messages.extend(provider.system_checks())
    if not config.providers:
        messages.append(
            Warning(
                "No webauth providers are configured: nobody can sign in.",
                hint="Add e.g. webauth.providers.DjangoCredentials() to WEBAUTH['providers'].",
                id="webauth.W002",
            )
        )
    if config.skip_csrf_check:
        messages.append(
            Warning(
                "WEBAUTH['skip_csrf_check'] is on: webauth's routes accept forged POSTs.",
                hint="Only use it when another layer checks CSRF for every webauth POST.",
                id="webauth.W003",
            )
        )
    messages.extend(_check_absolute_max_age(config))
    messages.extend(_check_experimental(config))
    messages.extend(_check_conditional_ui(config))
    messages.extend(_check_adapter(config))
    messages.extend(_check_base_path(config.base_path))
    messages.extend(_check_url_path(raw, config))
    messages.extend(_check_home_url(config))
    messages.extend(_check_challenge(config))
    messages.extend(_check_signup(config))
    messages.extend(reset_checks(config))
    messages.extend(_check_api_key_owners(config))
    return messages


def _check_api_key_owners(config: Config) -> list[CheckMessage]:
    """``webauth.E019``: an ``api_keys.owners`` label that names no installed model."""
    from django.apps import apps
    from django.contrib.auth import get_user_model

    options = config.api_keys
    if options is None:
        return []
    messages: list[CheckMessage] = []
    for label in options.owners:
        try:
            model = apps.get_model(label)
        except (LookupError, ValueError):
            messages.append(
                Error(
                    f"WEBAUTH['api_keys']['owners'] names {label!r}, which is not an "
                    "installed model.",
                    hint="Give the label of a model of an installed app, as in "
                    "AUTH_USER_MODEL: 'shop.Team'.",
                    id="webauth.E019",
                )
            )
            continue
        if model is get_user_model():
            messages.append(
                Error(
                    f"WEBAUTH['api_keys']['owners'] names the user model {label!r}.",
                    hint="Every user may hold keys already: list only other models.",
                    id="webauth.E019",
                )
            )
    return messages


def _check_signup(config: Config) -> list[CheckMessage]:
    """``passwords.signup``: a ``DjangoCredentials`` provider, a form that imports, the methods."""
    if not config.passwords.signup:
        return []
    messages: list[CheckMessage] = []
    if signup.credentials_provider(config) is None:
        messages.append(
            Error(
                "WEBAUTH['passwords']['signup'] is on, but no DjangoCredentials provider is "
                "configured: sign-up makes users who sign in with a password.",
                hint="Add webauth.providers.DjangoCredentials() to WEBAUTH['providers'], or "
                "turn sign-up off (docs/passwords.md).",
                id="webauth.E015",
            )
        )
    path = config.passwords.signup_form
    if path:
        try:
            signup_form_class(path)
        except (ImportError, TypeError) as exc:
            messages.append(
                Error(
                    f"WEBAUTH['passwords']['signup']['form'] = {path!r} cannot be used: {exc}.",
                    hint="Give the dotted path of a form class, e.g. a subclass of "
                    "webauth.passwords.forms.SignupForm (docs/passwords.md).",
                    id="webauth.E015",
                )
            )
    missing = missing_methods(config.storage.adapter, signup.SIGNUP_METHODS)
    if missing:
        messages.append(
            Error(
                f"The webauth adapter {type(config.storage.adapter).__name__} lacks "
                f"{', '.join(missing)}, which sign-up (passwords.signup) calls.",
                hint="Implement the methods (see webauth.adapters.base.Adapter), or use "
                "webauth.adapters.django.DjangoAdapter.",
                id="webauth.E015",
            )
        )
    return messages


def _check_challenge(config: Config) -> list[CheckMessage]:
    """``challenge``: both keys given; ``when: "abuse"`` only where the limiter can see abuse."""
    challenge = config.challenge
    if challenge is None:
        return []
    service = challenge.service
    messages: list[CheckMessage] = []
    missing = [key for key in ("site_key", "secret_key") if not getattr(service, key)]
    if missing:
        messages.append(
            Error(
                f"WEBAUTH['challenge'] has no {' and no '.join(missing)}: the {service.name} "
                "widget cannot be shown or its answers checked, so every request it guards "
                "would be refused.",
                hint=f"Set both keys from the {service.name} dashboard (in tests, the "
                "service's test keys: docs/configuration.md#challenge), or leave "
                "WEBAUTH['challenge'] out.",
                id="webauth.E014",
            )
        )
    if challenge.when == "abuse":
        limits = config.rate_limits
        blind = [
            action
            for action in sorted(challenge.on)
            if not limits.enabled
            or not any(r.scope == "ip" for r in limits.rules.get(CHALLENGE_ACTIONS[action], ()))
        ]
        if blind:
            counted = ", ".join(repr(CHALLENGE_ACTIONS[action]) for action in blind)
            messages.append(
                Warning(
                    "WEBAUTH['challenge'] is asked only after abuse, which the rate limits "
                    f"cannot see for {', '.join(map(repr, blind))} (no per-address rule of "
                    f"{counted}): the challenge is never asked there.",
                    hint="Keep the rate limits on with an 'ip' rule for those actions "
                    "(docs/rate-limits.md), or use 'when': 'always'.",
                    id="webauth.W015",
                )
            )
    return messages


def _check_home_url(config: Config) -> list[CheckMessage]:
    """``account.home_url`` given as a URL name must reverse (paths and URLs are used as
    given; a lazy value is the project's own ``reverse_lazy``)."""
    target = config.account.home_url
    if not isinstance(target, str) or target.startswith("/") or "://" in target:
        return []
    try:
        reverse(target)
    except NoReverseMatch:
        return [
            Warning(
                f"WEBAUTH['account']['home_url'] is {target!r}, which is not a URL name "
                "that reverses: the account center's home link goes to '/' instead.",
                hint="Give the name of a URL pattern without arguments (e.g. 'home'), a "
                "path such as '/dashboard/', or an absolute URL.",
                id="webauth.W014",
            )
        ]
    return []


def _check_absolute_max_age(config: Config) -> list[CheckMessage]:
    """Say what an absolute lifetime shorter than the idle one means (a bad value is E010)."""
    limit = config.session.absolute_max_age
    if limit is None or limit >= config.session.max_age:
        return []
    return [
        Info(
            f"WEBAUTH['session']['absolute_max_age'] ({limit} s) is shorter than "
            f"session.max_age ({config.session.max_age} s): every session ends {limit} s "
            "after its sign-in, and max_age (the idle timeout) never comes into play.",
            hint="That is fine if you want a fixed lifetime; to let idle sessions end "
            "sooner, lower session.max_age as well.",
            id="webauth.I001",
        )
    ]


def _check_experimental(config: Config) -> list[CheckMessage]:
    """Experimental providers switched off (Auth.js: ``ExperimentalFeatureNotEnabled``)."""
    messages: list[CheckMessage] = []
    for provider in config.providers:
        flow = flow_for(provider)
        switch = flow.experimental if flow is not None else None
        if switch and not config.experimental.get(switch):
            messages.append(
                Error(
                    f"The provider {provider.id!r} ({flow.name if flow else provider.type} "
                    f"sign-in) is experimental, and WEBAUTH['experimental'][{switch!r}] is "
                    "off: every request to it fails.",
                    hint=f"Set WEBAUTH['experimental'] = {{{switch!r}: True}} (see "
                    "docs/passkeys.md for what experimental means here), or remove the provider.",
                    id="webauth.E011",
                )
            )
    return messages


def _check_conditional_ui(config: Config) -> list[CheckMessage]:
    """Auth.js's DuplicateConditionalUI and MissingWebAuthnAutocomplete, at start-up."""
    autofill = [
        p
        for p in providers_with(config.providers, "is_passkey")
        if getattr(p, "enable_conditional_ui", False)
    ]
    messages: list[CheckMessage] = []
    if len(autofill) > 1:
        ids = ", ".join(repr(p.id) for p in autofill)
        messages.append(
            Error(
                f"The WebAuthn providers {ids} all have enable_conditional_ui: a page "
                "can offer only one in autofill (Auth.js: DuplicateConditionalUI).",
                hint="Pass enable_conditional_ui=False to all but one of them.",
                id="webauth.E013",
            )
        )
    for provider in autofill:
        if getattr(provider, "conditional_ui_field", None) is None:
            messages.append(
                Error(
                    f"The WebAuthn provider {provider.id!r} has enable_conditional_ui but no "
                    "form field whose autocomplete has the 'webauthn' token "
                    "(Auth.js: MissingWebAuthnAutocomplete).",
                    hint="Give a form field autocomplete='username webauthn', or pass "
                    "enable_conditional_ui=False.",
                    id="webauth.E013",
                )
            )
    return messages


def _check_url_path(raw: object, config: Config) -> list[CheckMessage]:
    """Auth.js's ``env-url-basepath-redundant`` and ``-mismatch`` warnings."""
    explicit = isinstance(raw, dict) and raw.get("base_path") is not None
    if not config.url or not explicit:
        return []  # without base_path, the URL's path is the base path
    path = urlsplit(config.url).path.rstrip("/")
    if not path:
        return []
    if path == config.base_path:
        return [
            Warning(
                f"WEBAUTH['base_path'] repeats the path of the site URL ({config.url}).",
                hint="Drop WEBAUTH['base_path']: the path of url / AUTH_URL already sets it "
                "(Auth.js warns env-url-basepath-redundant).",
                id="webauth.W004",
            )
        ]
    return [
        Warning(
            f"The path of the site URL ({config.url}) differs from WEBAUTH['base_path'] "
            f"({config.base_path or '/'}); webauth uses base_path and ignores that path.",
            hint="Make them agree, or drop one of them (Auth.js warns env-url-basepath-mismatch).",
            id="webauth.W005",
        )
    ]


def _check_adapter(config: Config) -> list[CheckMessage]:
    if config.adapter is None:
        return _check_no_adapter(config)
    strategy = strategy_of(config)
    needs = {f"the {strategy.name!r} session strategy": FLOW_METHODS[strategy.adapter_feature]}
    for provider in config.providers:
        flow = flow_for(provider)
        if flow is not None and flow.adapter_methods:
            needs.setdefault(f"{flow.name} sign-in", flow.adapter_methods)
    if config.mfa.enabled:
        needs["the second factor (WEBAUTH['mfa'])"] = FLOW_METHODS["mfa"]
        if config.mfa.trust_days:
            needs["trusting browsers (mfa.trust_days)"] = FLOW_METHODS["trusted_browsers"]
        if config.mfa.security_keys and not missing_methods(config.adapter, FLOW_METHODS["mfa"]):
            # Named once the second factor's own methods are there (else that is
            # the error); mfa.security_keys = False is the other way out.
            needs["security keys (mfa.security_keys, on by default)"] = FLOW_METHODS[
                "security_keys"
            ]
    messages: list[CheckMessage] = []
    for what, methods in needs.items():
        missing = missing_methods(config.adapter, methods)
        if not missing:
            continue
        messages.append(
            Error(
                f"The webauth adapter {type(config.adapter).__name__} lacks "
                f"{', '.join(missing)}, which {what} calls.",
                hint="Implement the methods (see webauth.adapters.base.Adapter), or use "
                "webauth.adapters.django.DjangoAdapter.",
                id="webauth.E008",
            )
        )
    return messages


def _check_no_adapter(config: Config) -> list[CheckMessage]:
    """Flows that cannot work without an adapter at all (email sign-in stores its grants)."""
    messages: list[CheckMessage] = []
    if config.mfa.enabled:
        messages.append(
            Error(
                "WEBAUTH['mfa'] is enabled, but the second factor is stored through the "
                "adapter and none is configured.",
                hint="Set WEBAUTH['adapter'] = 'webauth.adapters.django.DjangoAdapter' "
                "(or an adapter of your own with the 'mfa' methods).",
                id="webauth.E008",
            )
        )
    for provider in config.providers:
        flow = flow_for(provider)
        if flow is not None and flow.needs_adapter:
            messages.append(
                Error(
                    f"The provider {provider.id!r} ({flow.name} sign-in) needs an adapter, "
                    f"which calls {', '.join(flow.adapter_methods)}; none is configured.",
                    hint="Set WEBAUTH['adapter'] = 'webauth.adapters.django.DjangoAdapter' "
                    "(or an adapter of your own with those methods).",
                    id="webauth.E008",
                )
            )
    return messages


def _check_base_path(base_path: str) -> list[CheckMessage]:
    try:
        session_url = reverse("webauth:session")
    except NoReverseMatch:
        return []  # webauth.urls not included (an API-only project may not need it)
    except ImproperlyConfigured:
        return []
    # base_path is the routes' full path, as in Auth.js: it includes a script
    # prefix (FORCE_SCRIPT_NAME), because webauth builds its URLs from it.
    if session_url != base_path + "/session":
        mounted = session_url[: -len("/session")]
        hint = f"Set WEBAUTH['base_path'] = {mounted!r}"
        if get_script_prefix() == "/":
            included = (base_path.lstrip("/") + "/") if base_path else ""
            hint += f" or include webauth.urls at {included!r}"
        return [
            Error(
                f"webauth.urls is served at {mounted!r} but WEBAUTH['base_path'] is {base_path!r}.",
                hint=hint + ".",
                id="webauth.E005",
            )
        ]
    return []


@register(Tags.compatibility)
def check_middleware(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: object
) -> list[CheckMessage]:
    """``AuthMiddleware`` is installed, after Django's ``AuthenticationMiddleware``."""
    middleware = list(getattr(settings, "MIDDLEWARE", None) or [])
    if MIDDLEWARE_PATH not in middleware:
        return [
            Error(
                f"{MIDDLEWARE_PATH} is not in MIDDLEWARE: request.auth_session and "
                "request.user will not reflect webauth sessions.",
                hint=f"Add {MIDDLEWARE_PATH!r} to MIDDLEWARE (after "
                "AuthenticationMiddleware if you use it).",
                id="webauth.E006",
            )
        ]
    if DJANGO_AUTH_MIDDLEWARE in middleware and middleware.index(
        DJANGO_AUTH_MIDDLEWARE
    ) > middleware.index(MIDDLEWARE_PATH):
        return [
            Error(
                f"{MIDDLEWARE_PATH} comes before {DJANGO_AUTH_MIDDLEWARE}, which would "
                "overwrite request.user.",
                hint=f"Move {MIDDLEWARE_PATH!r} after {DJANGO_AUTH_MIDDLEWARE!r}.",
                id="webauth.E007",
            )
        ]
    return []


@register(Tags.security)
def check_rate_limit_actions(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: object
) -> list[CheckMessage]:
    """``rate_limits`` keys that look like a misspelt built-in action.

    An action webauth does not use is a project's own (for
    :func:`webauth.ratelimit.hit`), so it cannot be an error; but one a letter
    away from a built-in action is almost always a typo, and the limit the
    project meant to change silently keeps its default.
    """
    try:
        config = get_config()
    except ImproperlyConfigured:
        return []  # check_config reports it
    if not config.rate_limits.enabled:
        return []
    messages: list[CheckMessage] = []
    for action in config.rate_limits.rules:
        if action in DEFAULT_RATE_LIMITS:
            continue
        guess = did_you_mean(action, DEFAULT_RATE_LIMITS)
        if guess is None:
            continue
        messages.append(
            Warning(
                f"WEBAUTH['rate_limits'] has {action!r}, which webauth does not use; "
                f"did you mean {guess!r}? {guess!r} keeps its default "
                f"({DEFAULT_RATE_LIMITS[guess]}).",
                hint=f"Rename the key to {guess!r}. If {action!r} is your own action "
                "(for webauth.ratelimit.hit), add 'webauth.W012' to SILENCED_SYSTEM_CHECKS.",
                id="webauth.W012",
            )
        )
    return messages


#: Cache backends whose ``incr`` reads, adds and writes back: counts race across processes.
_NON_ATOMIC_CACHES = (
    "django.core.cache.backends.db.DatabaseCache",
    "django.core.cache.backends.filebased.FileBasedCache",
)


@register(Tags.security, Tags.caches)
def check_breached_password_validator(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: object
) -> list[CheckMessage]:
    """``PwnedPasswordValidator`` in ``AUTH_PASSWORD_VALIDATORS``: valid options, a cache
    that keeps its answers, HTTPS (:func:`webauth.passwords.breached.system_checks`).

    Apart from :func:`check_config`: the validator reads no ``WEBAUTH`` setting.
    """
    return breached_checks()


@register(Tags.security, Tags.caches)
def check_rate_limit_cache(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: object
) -> list[CheckMessage]:
    """The rate limits' cache can count, and counts for every process.

    The same cache keeps the app sign-ins' single-use OAuth records (the code
    flow's state, the ID tokens' used nonces: :mod:`webauth.flows.app`), so it
    is judged when bearer sessions and an OAuth provider are on, even with the
    limits off: a cache that stores nothing would let a nonce sign in twice.
    """
    try:
        config = get_config()
    except ImproperlyConfigured:
        return []  # check_config reports it
    limits = config.rate_limits
    counting = limits.enabled and any(limits.rules.values())
    app_oauth = config.bearer and bool(providers_with(config.providers, "app_uses_cache"))
    held = config.mfa.enabled
    if not (counting or app_oauth or held):
        return []
    alias = limits.cache
    what = " and ".join(
        (["rate limits"] if counting else [])
        + (["single-use app OAuth records (state, ID-token nonces)"] if app_oauth else [])
        + (["sign-ins waiting for their second factor"] if held else [])
    )
    hint = (
        "Point WEBAUTH['rate_limit_cache'] at a Redis or Memcached cache shared by "
        "every process (docs/rate-limits.md)"
        + (", or set WEBAUTH['rate_limits'] = False." if not (app_oauth or held) else ".")
    )
    try:
        backend = caches[alias]
    except InvalidCacheBackendError:
        return [
            Error(
                f"webauth keeps its {what} in cache {alias!r}, which is not in CACHES.",
                hint=hint,
                id="webauth.E009",
            )
        ]
    except Exception as exc:  # its client library is missing, its options are wrong...
        return [
            Error(
                f"webauth keeps its {what} in cache {alias!r}, which cannot be opened "
                f"({type(exc).__name__}: {exc}).",
                hint=hint,
                id="webauth.E009",
            )
        ]
    path = f"{type(backend).__module__}.{type(backend).__qualname__}"
    if path == "django.core.cache.backends.dummy.DummyCache":
        harm = []
        if counting:
            harm.append("no limit would ever be reached")
        if app_oauth:
            harm.append("an app's OAuth sign-in could not finish, and a nonce could be used twice")
        return [
            Error(
                f"webauth keeps its {what} in cache {alias!r}, a DummyCache, which "
                f"stores nothing: {'; '.join(harm)}.",
                hint=hint,
                id="webauth.E009",
            )
        ]
    if path == "django.core.cache.backends.locmem.LocMemCache" and not settings.DEBUG:
        harm = []
        if counting:
            harm.append("N processes allow N times the limits")
        if app_oauth:
            harm.append(
                "an app's OAuth code sign-in fails when its two requests reach different "
                "processes, and a nonce can be used once per process"
            )
        return [
            Warning(
                f"webauth keeps its {what} in cache {alias!r}, a LocMemCache: each "
                f"process keeps its own, so {'; '.join(harm)}.",
                hint=hint,
                id="webauth.W006",
            )
        ]
    if path in _NON_ATOMIC_CACHES:
        harm = []
        if counting:
            harm.append("concurrent requests can exceed the limits")
        if app_oauth:
            harm.append("two concurrent uses of one nonce can both pass")
        return [
            Warning(
                f"webauth keeps its {what} in cache {alias!r} ({type(backend).__name__}), "
                f"which reads and writes back where it should be atomic: {'; '.join(harm)}.",
                hint=hint,
                id="webauth.W007",
            )
        ]
    return []


@register(Tags.security, Tags.caches)
def check_user_check_cache(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: object
) -> list[CheckMessage]:
    """``session.user_check_cache``: a cache that keeps entries, shared by every process."""
    try:
        config = get_config()
    except ImproperlyConfigured:
        return []  # check_config reports it
    options = config.session.user_check_cache
    if options is None:
        return []
    alias = options.cache
    hint = (
        "Point WEBAUTH['session']['user_check_cache']['cache'] at a Redis or Memcached "
        "cache shared by every process (docs/sessions.md), or leave user_check_cache out."
    )
    try:
        backend = caches[alias]
    except InvalidCacheBackendError:
        problem = "which is not in CACHES"
    except Exception as exc:
        problem = f"which cannot be opened ({type(exc).__name__}: {exc})"
    else:
        path = f"{type(backend).__module__}.{type(backend).__qualname__}"
        if path == "django.core.cache.backends.dummy.DummyCache":
            problem = "a DummyCache, which stores nothing: every check would query the database"
        elif path == "django.core.cache.backends.locmem.LocMemCache" and not settings.DEBUG:
            return [
                Warning(
                    f"webauth remembers session checks in cache {alias!r}, a LocMemCache: "
                    "each process keeps its own, so a deactivation or a new password is "
                    "seen at once only by the process that made it, by the others within "
                    f"max_staleness ({options.max_staleness} s).",
                    hint=hint,
                    id="webauth.W020",
                )
            ]
        else:
            return []
    return [
        Error(
            f"webauth remembers session checks in cache {alias!r}, {problem}.",
            hint=hint,
            id="webauth.E020",
        )
    ]


REQUEST_CONTEXT_PROCESSOR = "django.template.context_processors.request"
DJANGO_TEMPLATES = "django.template.backends.django.DjangoTemplates"
_PAGES = ("sign_in", "sign_out", "error", "verify_request")


@register(Tags.templates)
def check_templates(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: object
) -> list[CheckMessage]:
    """The ``request`` context processor, while webauth's pages are in use.

    The template tags (``{% webauth_signin_buttons %}``, ``{% webauth_csrf_token %}``,
    the passkey ones) and the passkeys page read the request from the template
    context. Not needed when a project replaces every built-in page and has no
    passkeys: then webauth renders nothing of its own.
    """
    try:
        config = get_config()
    except ImproperlyConfigured:
        return []  # check_config reports it
    builtin_pages = any(getattr(config.pages, page) is None for page in _PAGES)
    passkeys = bool(providers_with(config.providers, "is_passkey"))
    if not (builtin_pages or passkeys):
        return []
    engines: list[dict[str, Any]] = [
        t for t in settings.TEMPLATES if t.get("BACKEND") == DJANGO_TEMPLATES
    ]
    for engine in engines:
        options: dict[str, Any] = engine.get("OPTIONS") or {}
        if REQUEST_CONTEXT_PROCESSOR in options.get("context_processors", ()):
            return []
    return [
        Warning(
            f"{REQUEST_CONTEXT_PROCESSOR!r} is not in the context processors of any "
            "DjangoTemplates engine: templates that use {% webauth_signin_buttons %}, "
            "{% webauth_csrf_token %} or the passkey tags, and webauth's passkeys page, "
            "fail to render (they need the request).",
            hint=f"Add {REQUEST_CONTEXT_PROCESSOR!r} to TEMPLATES[...]['OPTIONS']"
            "['context_processors'] (django-admin startproject puts it there; "
            "docs/installation.md).",
            id="webauth.W011",
        )
    ]


# -- theme contrast -------------------------------------------------------------------
#: WCAG 2.1 AA's minimum contrast for text of normal size (SC 1.4.3).
MIN_CONTRAST = 4.5
#: The built-in pages' own colours (static/webauth/webauth.css): the button
#: label's default and the card the light scheme's links sit on.
_DEFAULT_BRAND, _DEFAULT_BUTTON_TEXT, _CARD = "#346df1", "#fff", (255, 255, 255)


@register(Tags.templates)
def check_theme_contrast(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: object
) -> list[CheckMessage]:
    """The project's theme colours against WCAG 2.1 AA, where they can be judged.

    The built-in pages and the sign-in email draw button labels in
    ``button_text`` on ``brand_color``, and (light scheme) links in
    ``brand_color`` on white; each pair needs 4.5:1. webauth's defaults pass
    (the axe-core tests); a project's own colours are only as good as they
    are, so they are measured here, at start-up, instead of by a visitor.
    """
    try:
        config = get_config()
    except ImproperlyConfigured:
        return []  # check_config reports it
    theme = config.theme
    label_css = theme.button_text or _DEFAULT_BUTTON_TEXT
    messages: list[CheckMessage] = _provider_contrast(config, label_css)
    if not (theme.brand_color or theme.button_text):
        return messages
    brand = css_rgb(theme.brand_color or _DEFAULT_BRAND)
    label = css_rgb(label_css)
    hint = (
        "Pick colours with at least 4.5:1 between them (a darker brand_color usually "
        "does it); docs/configuration.md#theme."
    )
    if brand is not None and label is not None:
        ratio = contrast_ratio(brand, label)
        if ratio < MIN_CONTRAST:
            messages.append(
                Warning(
                    f"theme.button_text {theme.button_text or _DEFAULT_BUTTON_TEXT!r} on "
                    f"theme.brand_color {theme.brand_color or _DEFAULT_BRAND!r} has a "
                    f"contrast of {ratio:.2f}:1; button labels on webauth's pages and in "
                    "its emails need 4.5:1 (WCAG 2.1 AA).",
                    hint=hint,
                    id="webauth.W013",
                )
            )
    if brand is not None and theme.brand_color and theme.color_scheme != "dark":
        # The dark scheme's links are a light tint of the colour (always >= 5:1).
        ratio = contrast_ratio(brand, _CARD)
        if ratio < MIN_CONTRAST:
            messages.append(
                Warning(
                    f"theme.brand_color {theme.brand_color!r} on white has a contrast of "
                    f"{ratio:.2f}:1; it is the link colour of webauth's light pages and "
                    "emails, which needs 4.5:1 (WCAG 2.1 AA).",
                    hint=hint,
                    id="webauth.W013",
                )
            )
    return messages


def _provider_contrast(config: Config, default_text: str) -> list[CheckMessage]:
    # An OAuth button's own colours (a provider's style: bg, text); without
    # ``text`` its label takes the theme's button text colour.
    messages: list[CheckMessage] = []
    for provider in config.providers:
        style = getattr(provider, "style", None) or {}
        bg_css, text_css = style.get("bg"), style.get("text") or default_text
        if not isinstance(bg_css, str) or not isinstance(text_css, str):
            continue
        bg, text = css_rgb(bg_css), css_rgb(text_css)
        if bg is None or text is None:
            continue
        ratio = contrast_ratio(bg, text)
        if ratio < MIN_CONTRAST:
            messages.append(
                Warning(
                    f"Provider {provider.id!r}: its button's text {text_css!r} on {bg_css!r} "
                    f"has a contrast of {ratio:.2f}:1; WCAG 2.1 AA needs 4.5:1.",
                    hint="Give the provider style={'bg': ..., 'text': ...} with 4.5:1 between "
                    "them (docs/providers.md#buttons-and-icons).",
                    obj=provider.id,
                    id="webauth.W013",
                )
            )
    return messages
