"""Reading one raw setting: its type, its keys, dotted paths; errors that name the fix."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..utils import did_you_mean, resolve

__all__ = [
    "ConfigError",
    "as_bool",
    "as_callable",
    "as_seconds",
    "as_str",
    "closest_key",
    "config_error",
    "keys_of",
]


class ConfigError(ImproperlyConfigured):
    """An invalid ``settings.WEBAUTH``; ``check_id`` is the system check that reports it.

    ``str()`` of it is the whole story (what is wrong, then the fix), as the
    middleware raises it; the system check shows ``problem`` as its message and
    ``hint`` as its hint.
    """

    def __init__(self, problem: str, check_id: str = "webauth.E001", hint: str = "") -> None:
        super().__init__(f"{problem} {hint}".strip())
        self.problem = problem
        self.hint = hint
        self.check_id = check_id


def config_error(key: str, problem: str, fix: str, check_id: str = "webauth.E001") -> ConfigError:
    """``WEBAUTH['<key>'] <problem>.`` as a :class:`ConfigError` whose hint is *fix*."""
    where = "settings.WEBAUTH" if key == "WEBAUTH" else f"WEBAUTH[{key!r}]"
    return ConfigError(f"{where} {problem}.", check_id, fix.strip())


#: Auth.js names whose snake_case form is not the webauth option's name.
_RENAMED = {"customFetch": "http_client", "enableWebAuthn": "enable_webauthn"}


def _snake_case(key: str) -> str:
    """``maxAge`` -> ``max_age``, ``skipCSRFCheck`` -> ``skip_csrf_check``."""
    if key in _RENAMED:
        return _RENAMED[key]
    key = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", key).lower()


def closest_key(key: str, allowed: Iterable[str]) -> str | None:
    """The allowed key *key* was probably meant to be, or ``None``.

    An Auth.js camelCase name becomes its snake_case form (``maxAge`` ->
    ``max_age``); a near miss (``sesion``, ``provider``, ``max-age``) gets the
    closest allowed key.
    """
    choices = sorted(allowed)
    snake = _snake_case(key)
    if snake in choices:
        return snake
    return did_you_mean(snake.replace("-", "_"), choices)


def keys_of(name: str, value: object, allowed: frozenset[str]) -> dict[str, Any]:
    """*value* as a new dict, refusing keys outside *allowed* (hinting at camelCase slips)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        fix = (
            "Set WEBAUTH = {'providers': [...], ...} (docs/configuration.md lists every key)."
            if name == "WEBAUTH"
            else "Give a dict of its options, or leave the key out for the defaults "
            "(docs/configuration.md)."
        )
        raise config_error(name, f"must be a dict, not {type(value).__name__}", fix)
    unknown = sorted(set(value) - allowed, key=str)
    if unknown:
        guesses = {
            k: guess
            for k in unknown
            if isinstance(k, str) and (guess := closest_key(k, allowed)) is not None
        }
        hints = [
            f"Did you mean {guess!r}?" if len(unknown) == 1 else f"{k!r}: did you mean {guess!r}?"
            for k, guess in guesses.items()
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


def as_callable(name: str, value: object) -> Callable[..., Any] | None:
    """A callable, or a dotted path imported now; ``None`` stays ``None``."""
    if value is None:
        return None
    try:
        fn = resolve(value)
    except ImportError as exc:
        raise config_error(
            name,
            f"could not import {value!r} ({exc})",
            "Give a function, or a dotted path to one that imports, such as "
            "'myproject.auth.on_sign_in'.",
        ) from exc
    if not callable(fn):
        raise config_error(
            name,
            f"must be callable, got {type(fn).__name__}",
            "Give a function (or a dotted path to one).",
        )
    checked: Callable[..., object] = fn
    return checked


def as_seconds(name: str, value: object, default: int) -> int:
    """A non-negative whole number of seconds."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise config_error(
            name,
            f"must be a non-negative number of seconds, got {value!r}",
            "Give a whole number of seconds, e.g. 30 * 24 * 3600 for 30 days.",
        )
    return value


def as_bool(name: str, value: object, default: bool | None) -> bool | None:
    """``True`` or ``False`` (no truthy strings)."""
    if value is None:
        return default
    if not isinstance(value, bool):
        raise config_error(
            name,
            f"must be True or False, got {value!r}",
            "Use the Python value True or False (strings such as 'yes' are refused).",
        )
    return value


def as_str(name: str, value: object) -> str | None:
    """A string, or ``None``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise config_error(
            name,
            f"must be a string, got {type(value).__name__}",
            "Give a string, or leave the key out.",
        )
    return value
