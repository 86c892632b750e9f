"""Auth.js's environment defaults (``setEnvDefaults``) for a raw ``WEBAUTH`` dict."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ..providers.base import Provider

__all__ = ["set_env_defaults"]


def set_env_defaults(env: Callable[[str], str | None], config: dict[str, Any]) -> None:
    """Fill *config* (a raw ``WEBAUTH`` dict) from the environment, as Auth.js does.

    * ``secret``: when unset, ``[AUTH_SECRET_3, AUTH_SECRET_2, AUTH_SECRET_1, AUTH_SECRET]``
      (missing ones skipped), so the highest-numbered secret signs new tokens.
    * ``url`` from ``AUTH_URL``; ``base_path`` from its path when ``base_path`` is unset.
    * ``trust_host`` from ``AUTH_URL`` / ``AUTH_TRUST_HOST`` when unset.
    * ``redirect_proxy_url`` from ``AUTH_REDIRECT_PROXY_URL``.
    * each provider's ``AUTH_<ID>_ID`` / ``_SECRET`` / ``_ISSUER``: the list gets
      copies of the providers that the environment changes (see
      :meth:`Provider.with_env <webauth.providers.base.Provider.with_env>`); the
      provider objects themselves are never changed.

    *config* is changed in place and nothing is returned, as in Auth.js; webauth
    itself only ever passes a copy of ``settings.WEBAUTH`` here.
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
    providers = config.get("providers")
    if isinstance(providers, list | tuple):
        config["providers"] = type(providers)(
            p.with_env(env) if isinstance(p, Provider) else p for p in providers
        )
