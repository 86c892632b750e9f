"""Who must have a second factor: ``WEBAUTH["mfa"]["required"]`` read into one function.

The setting is one of:

- ``"all"``: every user;
- ``"staff"``: users with ``is_staff`` (superusers too, when they are staff);
- ``"superusers"``: users with ``is_superuser``;
- ``{"groups": ["admins", ...]}``: members of any of those Django groups (and
  superusers, who have every permission anyway);
- a function of the user, or its dotted path: ``True`` when that user must.

A user who must and has none is asked to add one right after the first
factor, before the sign-in ends (``/auth/mfa`` shows the enrolment): no
session exists until then, so nothing else on the site is reachable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..types import AdapterUser

__all__ = ["KEYWORDS", "django_user", "requirement"]

#: The words ``required`` may be.
KEYWORDS = ("all", "staff", "superusers")

Requirement = Callable[[object], bool]


def django_user(user: object) -> object:
    """The ``AUTH_USER_MODEL`` instance behind *user* (an ``AdapterUser``), else *user*."""
    instance = user.instance if isinstance(user, AdapterUser) else user
    return instance if instance is not None else user


def _everyone(user: object) -> bool:
    return True


def _staff(user: object) -> bool:
    return bool(getattr(django_user(user), "is_staff", False))


def _superusers(user: object) -> bool:
    return bool(getattr(django_user(user), "is_superuser", False))


def _in_groups(names: Sequence[str]) -> Requirement:
    wanted = frozenset(names)

    def member(user: object) -> bool:
        instance = django_user(user)
        if getattr(instance, "is_superuser", False):
            return True
        groups: Any = getattr(instance, "groups", None)
        if not hasattr(groups, "filter"):
            return False  # not a user with Django's groups (no PermissionsMixin)
        return bool(groups.filter(name__in=wanted).exists())

    return member


def requirement(value: object, resolve: Callable[[object], object]) -> Requirement | None:
    """The setting as a function of the user; ``ValueError`` (with what is wrong) otherwise.

    *resolve* imports a dotted path (the configuration's own).
    """
    if value is None or value is False:
        return None
    if value == "all":
        return _everyone
    if value == "staff":
        return _staff
    if value == "superusers":
        return _superusers
    if isinstance(value, Mapping):
        groups = value.get("groups")
        if set(value) != {"groups"} or not isinstance(groups, list | tuple) or not groups:
            raise ValueError('a dict must be {"groups": [<group name>, ...]}')
        if not all(isinstance(name, str) and name for name in groups):
            raise ValueError("group names must be non-empty strings")
        return _in_groups(groups)
    if isinstance(value, str) and "." not in value:
        raise ValueError(f"{value!r} is not one of {', '.join(KEYWORDS)}, nor a dotted path")
    fn = resolve(value)
    if not callable(fn):
        raise ValueError(f"{value!r} is not callable")
    checked: Requirement = fn
    return checked
