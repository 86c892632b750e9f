"""Reading one raw setting: its type, its keys, dotted paths; errors that name the fix."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..utils import resolve

__all__ = [
    "ConfigError",
    "as_bool",
    "as_callable",
    "as_seconds",
    "as_str",
    "config_error",
    "keys_of",
]


class ConfigError(ImproperlyConfigured):
    """An invalid ``settings.WEBAUTH``; ``check_id`` is the system check that reports it."""

    def __init__(self, message: str, check_id: str = "webauth.E001") -> None:
        super().__init__(message)
        self.check_id = check_id


def config_error(key: str, problem: str, fix: str, check_id: str = "webauth.E001") -> ConfigError:
    """``WEBAUTH['<key>'] <problem>. <fix>`` as a :class:`ConfigError`."""
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


def keys_of(name: str, value: Any, allowed: frozenset[str]) -> dict[str, Any]:
    """*value* as a new dict, refusing keys outside *allowed* (hinting at camelCase slips)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise config_error(name, f"must be a dict, not {type(value).__name__}", "Use {...}.")
    unknown = sorted(set(value) - allowed, key=str)
    if unknown:
        hints = [
            f"Did you mean {_snake_case(k)!r}?"
            for k in unknown
            if isinstance(k, str) and _snake_case(k) in allowed
        ]
        raise config_error(
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


def as_callable(name: str, value: Any) -> Callable[..., Any] | None:
    """A callable, or a dotted path imported now; ``None`` stays ``None``."""
    if value is None:
        return None
    try:
        fn = resolve(value)
    except ImportError as exc:
        raise config_error(
            name, f"could not import {value!r} ({exc})", "Fix the dotted path."
        ) from exc
    if not callable(fn):
        raise config_error(name, f"must be callable, got {type(fn).__name__}", "Give a function.")
    return fn


def as_seconds(name: str, value: Any, default: int) -> int:
    """A non-negative whole number of seconds."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise config_error(name, f"must be a non-negative number of seconds, got {value!r}", "")
    return value


def as_bool(name: str, value: Any, default: bool | None) -> bool | None:
    """``True`` or ``False`` (no truthy strings)."""
    if value is None:
        return default
    if not isinstance(value, bool):
        raise config_error(name, f"must be True or False, got {value!r}", "")
    return value


def as_str(name: str, value: Any) -> str | None:
    """A string, or ``None``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise config_error(name, f"must be a string, got {type(value).__name__}", "")
    return value
