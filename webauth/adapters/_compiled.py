"""Per-request lookups compiled once: an implementation detail of ``DjangoAdapter``.

Django compiles a queryset to SQL every time it runs, and for the one or two
lookups webauth makes on every authenticated request that compilation costs
more than the query itself. :class:`CompiledLookup` takes the SQL, the column
converters and the row layout from Django's own compiler once, for a queryset
with one parameter, and then only executes the statement and builds the objects
(the root model and at most one ``select_related`` model).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import connections, models, router

__all__ = ["PLACEHOLDER", "CompiledLookup", "user_by_pk"]

#: The value the queryset is built with; it must be its only parameter.
PLACEHOLDER = "__webauth_placeholder__"


class CompiledLookup:
    """``build(alias)`` must return a queryset whose only SQL parameter is *placeholder*."""

    def __init__(
        self,
        alias: str,
        build: Callable[[str], models.QuerySet[Any]],
        placeholder: Any = PLACEHOLDER,
    ) -> None:
        queryset = build(alias)
        compiler = queryset.query.get_compiler(using=alias)
        self.sql, params = compiler.as_sql()
        if list(params) != [placeholder]:
            raise ValueError("the queryset must have exactly one parameter")
        self.alias = alias
        self.compiler = compiler
        expressions = [column[0] for column in compiler.select]
        self.converters = compiler.get_converters(expressions)
        info = compiler.klass_info
        self.model: type[models.Model] = info["model"]
        self.cols = list(info["select_fields"])
        self.names = [expressions[i].target.attname for i in self.cols]
        related = info.get("related_klass_infos") or []
        if len(related) > 1:
            raise ValueError("at most one select_related model")
        self.related: tuple[Any, type[models.Model], list[int], list[str]] | None = None
        if related:
            rel = related[0]
            cols = list(rel["select_fields"])
            names = [expressions[i].target.attname for i in cols]
            self.related = (rel["field"], rel["model"], cols, names)

    def fetch(self, value: Any) -> Any:
        """The object the query finds for *value*, or ``None``."""
        with connections[self.alias].cursor() as cursor:
            cursor.execute(self.sql, [value])
            row = cursor.fetchone()
        if row is None:
            return None
        if self.converters:
            row = next(iter(self.compiler.apply_converters([row], self.converters)))
        obj = self.model.from_db(self.alias, self.names, [row[i] for i in self.cols])
        if self.related is not None:
            field, model, cols, names = self.related
            related = model.from_db(self.alias, names, [row[i] for i in cols])
            field.set_cached_value(obj, related)
        return obj


_PK_PLACEHOLDER = -987_654_321


@lru_cache(maxsize=16)
def _user_lookup(alias: str, label: str) -> CompiledLookup | None:
    """``_default_manager.filter(pk=...)`` compiled once, for integer primary keys.

    A default manager that overrides ``get_queryset`` may filter per request
    (tenants, soft deletes); its lookups go through the ORM every time.
    """
    model = get_user_model()
    manager = model._default_manager
    if type(manager).get_queryset is not models.Manager.get_queryset:
        return None
    if not isinstance(model._meta.pk, models.IntegerField):
        return None
    try:
        return CompiledLookup(
            alias,
            lambda using: manager.db_manager(using).filter(pk=_PK_PLACEHOLDER),
            placeholder=_PK_PLACEHOLDER,
        )
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def user_by_pk(user_id: Any, using: str | None = None) -> Any:
    """The ``AUTH_USER_MODEL`` instance with this primary key, or ``None`` (any id accepted)."""
    model = get_user_model()
    alias = using or router.db_for_read(model)
    lookup = _user_lookup(alias, model._meta.label)
    if lookup is not None:
        try:
            pk = int(user_id)
        except (TypeError, ValueError):
            return None
        if not -(2**63) <= pk < 2**63:
            return None
        return lookup.fetch(pk)
    try:
        return model._default_manager.db_manager(alias).get(pk=user_id)
    except (model.DoesNotExist, ValueError, TypeError, ValidationError, OverflowError):
        return None
