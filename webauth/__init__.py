"""webauth: Auth.js-compatible authentication for Django.

The public API::

    from webauth import get_session, aget_session, sign_in, sign_out, get_token
    from webauth import update_session, aupdate_session
    from webauth import update_session_auth_hash, aupdate_session_auth_hash
    from webauth import get_access_token, aget_access_token
    from webauth.decorators import auth_required, AuthRequiredMixin

See ``docs/`` for installation and configuration.
"""

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "aget_access_token",
    "aget_session",
    "asign_in",
    "asign_out",
    "aupdate_session",
    "aupdate_session_auth_hash",
    "auth_required",
    "get_access_token",
    "get_session",
    "get_token",
    "sign_in",
    "sign_out",
    "update_session",
    "update_session_auth_hash",
]


def __getattr__(name: str) -> Any:
    # Imported lazily so that ``import webauth`` works before Django is configured
    # (settings modules, setup.py, tooling).
    if name in {
        "aget_session",
        "asign_in",
        "asign_out",
        "get_session",
        "get_token",
        "sign_in",
        "sign_out",
        "update_session",
        "aupdate_session",
        "update_session_auth_hash",
        "aupdate_session_auth_hash",
    }:
        from . import helpers

        return getattr(helpers, name)
    if name in {"get_access_token", "aget_access_token"}:
        from .oauth import tokens

        return getattr(tokens, name)
    if name == "auth_required":
        from .decorators import auth_required

        return auth_required
    raise AttributeError(f"module 'webauth' has no attribute {name!r}")
