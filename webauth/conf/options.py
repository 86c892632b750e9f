"""The validated configuration: one frozen dataclass per section of ``settings.WEBAUTH``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.utils.functional import cached_property  # unlike functools' (3.11), no lock

from ..adapters.base import AdapterCaller
from ..jwt import DEFAULT_MAX_AGE
from ..logger import AuthLogger
from ..providers.base import Provider

__all__ = [
    "COOKIE_KEYS",
    "DEFAULT_MAX_AGE",
    "DEFAULT_UPDATE_AGE",
    "CallbacksOptions",
    "Config",
    "CookieOverride",
    "JWTOptions",
    "PagesOptions",
    "SessionOptions",
    "Theme",
]

DEFAULT_UPDATE_AGE = 24 * 60 * 60

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
    }
)


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
    """The validated configuration. Get it with :func:`webauth.conf.get_config`."""

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
    def storage(self) -> AdapterCaller:
        """The adapter, called the way every flow and helper calls it.

        Without a configured adapter it is :class:`~webauth.adapters.django.DjangoAdapter`
        on the default database, so that ``request.user`` and the project's
        helpers (session management, linked accounts, access tokens) read the
        project's own tables through the same seam; the sign-in flows still
        store nothing without a configured adapter, as in Auth.js.
        """
        adapter = self.adapter if self.adapter is not None else self.django_adapter
        return AdapterCaller(adapter, self.logger)

    @cached_property
    def django_adapter(self) -> Any:
        """A :class:`~webauth.adapters.django.DjangoAdapter` on the default database.

        The store of ``AUTH_USER_MODEL`` when no adapter is configured, and where
        ``request.user`` is found when an adapter's users carry no model instance.
        """
        # Imported on first use, not with the settings: the Django adapter
        # imports models, which need the app registry to be ready.
        from ..adapters.django import DjangoAdapter

        return DjangoAdapter()

    @cached_property
    def adapter_caller(self) -> AdapterCaller:
        """The configured adapter as flows call it; without one, every call fails clearly."""
        return AdapterCaller(self.adapter, self.logger)
