"""What every webauth view does before its route: the configuration, the state, the checks.

``auth_view`` (the Auth.js routes), ``app_view`` (the app sign-in routes) and
``app_session_view`` (the bearer session's routes) all start here. A broken
configuration (settings that do not build one, no trusted origin, no secret)
is logged and raised as :class:`Unconfigured`, which each view answers in its
client's form: an error page or Auth.js's 500 JSON, or ``{"error":
"Configuration"}`` for an app.
"""

from __future__ import annotations

from typing import Literal

from django.core.exceptions import DisallowedHost, ImproperlyConfigured
from django.http import HttpRequest

from ..conf import Config, get_config
from ..errors import AuthError, MissingSecret
from ..logger import AuthLogger
from ..state import AuthState, get_state

__all__ = ["Unconfigured", "load_config", "open_state"]

#: Whose session a route reads: the cookie (Auth.js's routes; an Authorization
#: header is nothing to them), an app's bearer token and no cookie at all (the
#: app sign-in routes), or whatever the request carries (the bearer session's
#: routes, which then ask for the header themselves).
SessionSource = Literal["cookie", "app", "request"]


class Unconfigured(Exception):
    """The route cannot run: the configuration is broken (already logged).

    ``config`` is the configuration when it was built, else ``None``.
    """

    def __init__(self, config: Config | None) -> None:
        super().__init__("webauth is not configured")
        self.config = config


def load_config() -> Config:
    """The configuration, or :class:`Unconfigured` when the settings do not build one."""
    try:
        return get_config()
    except ImproperlyConfigured as exc:
        AuthLogger().error(exc)
        raise Unconfigured(None) from exc


def open_state(
    request: HttpRequest, config: Config | None, source: SessionSource, *, origin: bool = True
) -> AuthState:
    """The request's state for a route whose session comes from *source*, checked.

    *config* is the configuration when the view has loaded it already, else
    ``None`` (it is loaded as :func:`load_config` does). With *origin* the
    site's origin must be trusted (``UntrustedHost`` otherwise); the secret must
    be set (``MissingSecret``). A failed check is logged and raised as
    :class:`Unconfigured`; ``DisallowedHost`` goes to Django (its 400).
    """
    if config is None:
        try:
            config = get_config()
        except ImproperlyConfigured as exc:
            AuthLogger().error(exc)
            raise Unconfigured(None) from exc
    try:
        if source == "app":
            state = AuthState.for_app(request, config)
        else:
            state = get_state(request, config)
            if source == "cookie":
                # Auth.js's routes are cookie routes: an Authorization header can
                # never stand in for a cookie and its CSRF token there.
                state.ignore_bearer()
        if origin:
            state.origin  # noqa: B018 - the trusted origin, or UntrustedHost now
        if not config.secret:
            raise MissingSecret("Please define a `secret`.")
    except DisallowedHost:
        raise
    except Exception as exc:
        config.logger.error(exc if isinstance(exc, AuthError) else AuthError(cause={"err": exc}))
        raise Unconfigured(config) from exc
    return state
