"""Columns whose values are identifiers: compared byte for byte on every database.

An identifier (an address, a provider's account id, a credential id, a user
handle, a grant's identifier) is one exact string: ``"AbC"`` and ``"abc"`` are
two provider accounts, ``"jöhn@example.com"`` and ``"john@example.com"`` two
mailboxes. SQLite and PostgreSQL compare text exactly with their default
collations. MariaDB and MySQL compare under the column's collation, which is
usually case- and accent-insensitive (``utf8mb4_general_ci``,
``utf8mb4_unicode_ci``, MySQL 8's ``utf8mb4_0900_ai_ci``) and pads trailing
spaces: there a ``WHERE`` clause or a unique index would take one identifier
for another.

So these fields give their column a binary collation on MariaDB and MySQL,
and nothing else anywhere: ``utf8mb4_nopad_bin`` on MariaDB (binary, and no
trailing-space padding), ``utf8mb4_0900_bin`` on MySQL 8 (the same), and
``utf8mb4_bin`` on older MySQL. The code still compares in Python what a query
returns (a second line, for a column a project altered by hand).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

__all__ = ["ExactCharField", "ExactEmailField", "exact_collation"]


def exact_collation(connection: Any) -> str | None:
    """The binary collation for an identifier column on *connection*; ``None`` if not needed."""
    if connection.vendor != "mysql":
        return None
    if connection.mysql_is_mariadb:
        return "utf8mb4_nopad_bin"
    if connection.mysql_version >= (8, 0, 1):
        return "utf8mb4_0900_bin"
    return "utf8mb4_bin"  # pragma: no cover - MySQL before 8.0 is not supported by Django 5.2


class _Exact:
    """Gives the column :func:`exact_collation` unless the field names a collation itself."""

    def db_parameters(self, connection: Any) -> dict[str, Any]:
        params: dict[str, Any] = super().db_parameters(connection)  # type: ignore[misc]
        if params.get("collation") is None:
            collation = exact_collation(connection)
            if collation is not None:
                params["collation"] = collation
        return params


if TYPE_CHECKING:  # django-stubs' fields are generic; Django's are not subscriptable
    _CharField = models.CharField[str, str]
    _EmailField = models.EmailField[str | None, str | None]  # webauth.User.email is nullable
else:
    _CharField, _EmailField = models.CharField, models.EmailField


class ExactCharField(_Exact, _CharField):
    """A ``CharField`` compared exactly on every database (see the module's docstring)."""


class ExactEmailField(_Exact, _EmailField):
    """An ``EmailField`` compared exactly on every database (see the module's docstring)."""
