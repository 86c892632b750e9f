"""OAuth 2 and OpenID Connect providers.

:class:`OAuth2` signs in with any OAuth 2 authorization server that has a
userinfo endpoint; :class:`OIDC` with any OpenID provider (``issuer``, client id
and secret are enough: the rest comes from discovery). The built-in catalog
(:mod:`webauth.providers.catalog`) subclasses them with each service's defaults.

Every default below can be given as a keyword argument to the constructor, and
a catalog class sets its own as class attributes::

    OIDC(id="corp", name="Corp SSO", issuer="https://sso.example.com",
         client_id="...", client_secret="...")

These classes are configuration: the flow that uses them is
:mod:`webauth.flows.oauth`, with the protocol helpers of :mod:`webauth.oauth`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from django.core.checks import CheckMessage, Error

from ..errors import InvalidEndpoints
from ..utils import did_you_mean, resolve
from .base import TIMEOUT, Provider
from .profile import json_object, standard_profile

if TYPE_CHECKING:
    import requests

__all__ = ["CHECKS", "CLIENT_AUTH_METHODS", "DEFAULT_SCOPE", "OIDC", "OAuth2"]

CHECKS = frozenset({"pkce", "state", "nonce"})
CLIENT_AUTH_METHODS = frozenset(
    {"client_secret_basic", "client_secret_post", "none", "private_key_jwt"}
)
#: Auth.js adds this scope when a provider sets none (even for plain OAuth 2).
DEFAULT_SCOPE = "openid profile email"

_OPTIONS = (
    "client_id",
    "client_secret",
    "issuer",
    "wellknown",
    "authorization_endpoint",
    "token_endpoint",
    "userinfo_endpoint",
    "jwks_uri",
    "scope",
    "authorization_params",
    "checks",
    "client_auth_method",
    "response_mode",
    "id_token",
    "id_token_signing_algs",
    "allow_dangerous_email_account_linking",
    "private_key",
    "redirect_proxy_url",
    "style",
    "app_client_ids",
    "mfa_amr",
)


class OAuth2(Provider):
    """A generic OAuth 2 provider (authorization code flow).

    Options (constructor keywords; catalog classes set them as class attributes):

    ``client_id``, ``client_secret``
        Read from ``AUTH_<ID>_ID`` / ``AUTH_<ID>_SECRET`` when not given.
    ``issuer``
        The authorization server's issuer; checked against the ``iss`` parameter
        of the authorization response when the server sends one (RFC 9207).
    ``authorization_endpoint``, ``token_endpoint``, ``userinfo_endpoint``
        Endpoint URLs (discovered from the issuer when missing).
    ``scope``
        Space-separated scopes; ``None`` means Auth.js's default
        ``"openid profile email"``, ``""`` sends no scope.
    ``authorization_params``
        Extra query parameters for the authorization request.
    ``checks``
        Any of ``"pkce"``, ``"state"``, ``"nonce"``. webauth always sends and
        checks ``state`` as well, which Auth.js does only when listed.
    ``client_auth_method``
        ``"client_secret_basic"`` (default), ``"client_secret_post"``, ``"none"``
        or ``"private_key_jwt"`` (with ``private_key``, a PEM string or JWK dict).
    ``response_mode``
        ``"form_post"`` for providers that POST the callback (Apple).
    ``allow_dangerous_email_account_linking``
        Sign an unknown account in as the existing user with the same email
        instead of refusing with ``OAuthAccountNotLinked``. Only for providers
        that verify email addresses.
    ``profile``
        A callable ``(profile, tokens) -> {"id", "name", "email", "image"}``
        replacing :meth:`profile`.
    ``redirect_proxy_url``
        This provider's redirect proxy, instead of the global ``redirect_proxy_url``.
    ``mfa_amr``
        The values of the ID token's ``amr`` claim (RFC 8176) that mean the
        provider itself asked for a second factor, such as ``("mfa",)``: a
        sign-in whose verified ID token has one of them counts as two factors,
        and webauth's own second factor is not asked for (docs/mfa.md). Only
        for providers with ``id_token``; empty (the default): never.
    ``style``
        ``{"logo": <static path>, "bg": <css colour>, "text": <css colour>}`` for buttons.
    ``app_client_ids``
        The client ids of the project's own native apps at this provider (a
        Google iOS or Android client id, an Apple bundle id), whose ID tokens
        ``POST /auth/app/idtoken/<id>`` accepts besides ``client_id``'s
        (docs/apps.md). Never used by the browser's sign-in.
    """

    type: ClassVar[str] = "oauth"
    docs_page: ClassVar[str] = "docs/oauth.md"

    client_id: str | None = None
    client_secret: str | None = None
    issuer: str | None = None
    wellknown: str | None = None
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    userinfo_endpoint: str | None = None
    jwks_uri: str | None = None
    scope: str | None = None
    authorization_params: Mapping[str, object] = {}
    checks: tuple[str, ...] = ("pkce",)
    client_auth_method: str = "client_secret_basic"
    response_mode: str | None = None
    id_token: bool = False
    id_token_signing_algs: tuple[str, ...] = ("RS256",)
    allow_dangerous_email_account_linking: bool = False
    private_key: Any = None
    redirect_proxy_url: str | None = None
    style: Mapping[str, str] = {}
    app_client_ids: tuple[str, ...] = ()
    mfa_amr: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        profile: Callable[[dict[str, object], dict[str, object]], Mapping[str, object]]
        | None = None,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - set(_OPTIONS))
        extra = {k: options.pop(k) for k in unknown}
        super().__init__(id=id, name=name, **extra)
        for key, value in options.items():
            if key == "checks" and value is not None:
                value = tuple(value)
            if key in ("app_client_ids", "mfa_amr") and isinstance(value, list):
                value = tuple(value)
            if key == "authorization_params" and value is not None:
                value = {**type(self).authorization_params, **value}
            setattr(self, key, value)
        self._profile_fn = resolve(profile)

    # -- configuration ----------------------------------------------------------
    def apply_env(self, env: Callable[[str], str | None]) -> None:
        """``AUTH_<ID>_ID``, ``AUTH_<ID>_SECRET`` and ``AUTH_<ID>_ISSUER`` fill missing options."""
        prefix = self.env_prefix
        if not self.client_id and env(f"{prefix}_ID"):
            self.client_id = env(f"{prefix}_ID")
        if not self.client_secret and env(f"{prefix}_SECRET"):
            self.client_secret = env(f"{prefix}_SECRET")
        if not self.issuer and env(f"{prefix}_ISSUER"):
            self.issuer = env(f"{prefix}_ISSUER")

    def validate(self) -> list[str]:
        """Configuration problems that make the provider unusable (raised at start-up)."""
        problems = super().validate()
        bad = sorted(set(self.checks) - CHECKS, key=str)
        if bad:
            guesses = [
                f" (did you mean {guess!r} for {check!r}?)"
                for check in bad
                if isinstance(check, str) and (guess := did_you_mean(check, CHECKS)) is not None
            ]
            problems.append(
                f"provider {self.id!r}: unknown checks {bad}; use pkce, state, nonce"
                + "".join(guesses)
            )
        ids = self.app_client_ids
        if not isinstance(ids, tuple) or not all(isinstance(i, str) and i for i in ids):
            problems.append(f"provider {self.id!r}: app_client_ids must be a list of client ids")
        if self.client_auth_method not in CLIENT_AUTH_METHODS:
            problems.append(
                f"provider {self.id!r}: client_auth_method must be one of "
                f"{sorted(CLIENT_AUTH_METHODS)}"
            )
        return problems

    def checks_messages(self) -> list[str]:
        """What is missing for this provider to work (reported by ``manage.py check``)."""
        missing = []
        if not self.client_id:
            missing.append(f"a client id (set client_id=... or {self.env_prefix}_ID)")
        if self.client_auth_method in ("client_secret_basic", "client_secret_post") and not (
            self.client_secret
        ):
            missing.append(f"a client secret (client_secret=... or {self.env_prefix}_SECRET)")
        if self.client_auth_method == "private_key_jwt" and not self.private_key:
            missing.append("private_key=... for private_key_jwt")
        has_endpoints = self.authorization_endpoint and self.token_endpoint
        if not self.issuer and not self.wellknown and not has_endpoints:
            missing.append(
                f"an issuer (issuer=... or {self.env_prefix}_ISSUER) or the "
                "authorization_endpoint and token_endpoint"
            )
        return missing

    def system_checks(self) -> list[CheckMessage]:
        """System-check errors (``webauth.E004``) for missing credentials or endpoints."""
        return [
            Error(f"webauth provider {self.id!r} needs {what}.", id="webauth.E004")
            for what in self.checks_messages()
        ]

    @property
    def discovery_url(self) -> str | None:
        """The OpenID discovery document's URL (``wellknown`` or derived from ``issuer``)."""
        if self.wellknown:
            return self.wellknown
        if self.issuer:
            return self.issuer.rstrip("/") + "/.well-known/openid-configuration"
        return None

    @property
    def uses_discovery(self) -> bool:
        """Whether an endpoint must come from the discovery document."""
        needed = [self.authorization_endpoint, self.token_endpoint]
        if self.id_token:
            needed.append(self.jwks_uri)
        else:
            needed.append(self.userinfo_endpoint)
        return any(value is None for value in needed)

    # -- the hooks built-in providers override ---------------------------------------
    def profile(
        self, profile: dict[str, object], tokens: dict[str, object]
    ) -> Mapping[str, object]:
        """Map the provider's profile to ``{"id", "name", "email", "image"}``.

        The ``profile=`` callable when one was given, else :meth:`map_profile`.
        """
        if self._profile_fn is not None:
            # The project's own function: a mapping, as its docs ask.
            mapped: Mapping[str, object] = self._profile_fn(profile, tokens)
            return mapped
        return self.map_profile(profile, tokens)

    def map_profile(
        self, profile: dict[str, object], tokens: dict[str, object]
    ) -> Mapping[str, object]:
        """This provider's own mapping; here Auth.js's default (:func:`standard_profile`).

        id = ``sub`` or ``id``; name = ``name``, ``nickname`` or
        ``preferred_username``; email; image = ``picture``. A profile without an
        id is refused (Auth.js makes up a random one, which creates a new
        account at every sign-in).
        """
        return standard_profile(profile, self.id)

    def userinfo_url(self, endpoint: str | None) -> str:
        """Where to ask for the profile: *endpoint* (discovered), else ``userinfo_endpoint``.

        Raises :class:`~webauth.errors.InvalidEndpoints` when there is neither.
        """
        url = endpoint or self.userinfo_endpoint
        if not url:
            raise InvalidEndpoints(f"provider {self.id!r} has no userinfo endpoint")
        return url

    def get_userinfo(
        self, http: requests.Session, tokens: dict[str, object], endpoint: str | None
    ) -> dict[str, object]:
        """Fetch the user's profile with the access token (``GET`` the userinfo endpoint)."""
        if not endpoint:
            raise InvalidEndpoints(f"provider {self.id!r} has no userinfo endpoint")
        response = http.get(
            endpoint,
            headers={"Authorization": f"Bearer {tokens['access_token']}"},
            timeout=TIMEOUT,
        )
        response.raise_for_status()
        return json_object(response.json(), "the userinfo response")

    def conform_token(self, token: dict[str, object]) -> dict[str, object]:
        """Fix a provider's non-standard token response before it is used."""
        return token

    def expected_issuer(self, claims: Mapping[str, object], issuer: str | None) -> str | None:
        """The ``iss`` an ID token must carry (multi-tenant providers derive it from claims)."""
        return issuer

    def extra_callback_profile(self, params: Mapping[str, str]) -> dict[str, object]:
        """Profile data some providers send in the callback itself (Apple's ``user``)."""
        return {}


class OIDC(OAuth2):
    """A generic OpenID Connect provider: ``issuer``, ``client_id`` and ``client_secret``.

    The ID token is validated in full (signature against the issuer's JWKS,
    ``iss``, ``aud``, ``azp``, ``exp``, ``iat``, ``nonce``) and its claims are the
    profile. ``id_token=False`` reads the userinfo endpoint instead.
    """

    type: ClassVar[str] = "oidc"
    id_token: bool = True
