"""Per-request lookups compiled once.

Django compiles a queryset to SQL every time it runs, and for the one or two
lookups webauth makes on every authenticated request that compilation costs
more than the query itself. :class:`CompiledLookup` takes the SQL, the column
converters and the row layout from Django's own compiler once, for a queryset
with one parameter, and then only executes the statement and builds the objects
(the root model and at most one ``select_related`` model).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connections, models

__all__ = ["PLACEHOLDER", "CompiledLookup"]

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
