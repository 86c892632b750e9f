"""Per-request lookups compiled once: an implementation detail of ``DjangoAdapter``.

Django compiles a queryset to SQL every time it runs, and for the one or two
lookups webauth makes on every authenticated request that compilation costs
more than the query itself. :class:`CompiledLookup` takes the SQL, the column
converters and the row layout from Django's own compiler once, for a queryset
with one parameter, and then only executes the statement and builds the objects
(the root model and at most one ``select_related`` model), or returns the row
of a ``values_list()`` query, which makes no model instance at all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import connections, models, router

from ..utils import user_model

__all__ = ["PLACEHOLDER", "CompiledLookup", "user_by_pk", "user_check_by_pk"]

#: The value the queryset is built with; it must be its only parameter.
PLACEHOLDER = "__webauth_placeholder__"

# Django's SQLite backend turns each statement's "%s" placeholders into "?" with a
# regular expression, on every execution and over the whole statement: for the
# wide statements compiled here that costs more than SQLite's own work. A
# statement in "pyformat" style ("%(v)s", parameters in a dict) is converted
# with one "%" formatting instead.
_NAMED = "v"


class CompiledLookup:
    """``build(alias)`` must return a queryset whose only SQL parameter is *placeholder*.

    :meth:`fetch` builds the model instance (and its ``select_related`` one);
    :meth:`row` returns the columns, which is all a ``values_list()`` queryset wants.
    """

    def __init__(
        self,
        alias: str,
        build: Callable[[str], models.QuerySet[Any]],
        placeholder: object = PLACEHOLDER,
    ) -> None:
        queryset = build(alias)
        compiler = queryset.query.get_compiler(using=alias)
        self.sql, params = compiler.as_sql()
        if list(params) != [placeholder]:
            raise ValueError("the queryset must have exactly one parameter")
        self.alias = alias
        self.compiler = compiler
        # Only a statement whose one "%" is its placeholder: a "%" in a quoted name
        # would mean something else to "%" formatting.
        self._named = compiler.connection.vendor == "sqlite" and self.sql.count("%") == 1
        if self._named:
            self.sql = self.sql.replace("%s", f"%({_NAMED})s")
        expressions = [column[0] for column in compiler.select]
        self.converters = compiler.get_converters(expressions)
        # What Django's apply_converters does per row, without its generator.
        self._conversions = [
            (position, tuple(functions), expression)
            for position, (functions, expression) in self.converters.items()
        ]
        self._connection = compiler.connection
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
            # Where the related row's primary key is: NULL there is no related row
            # (a nullable foreign key, LEFT OUTER JOIN), as Django reads it.
            self._related_pk = cols[names.index(rel["model"]._meta.pk.attname)]

    def row(self, value: int | str) -> Any:
        """The row the query finds for *value* (columns converted as Django does), or ``None``."""
        with connections[self.alias].cursor() as cursor:
            cursor.execute(self.sql, {_NAMED: value} if self._named else [value])
            row = cursor.fetchone()
        if row is not None and self._conversions:
            row = list(row)
            connection = self._connection
            for position, functions, expression in self._conversions:
                value = row[position]
                for function in functions:
                    value = function(value, expression, connection)
                row[position] = value
        return row

    def fetch(self, value: int | str) -> Any:
        """The object the query finds for *value*, or ``None``."""
        row = self.row(value)
        if row is None:
            return None
        obj = self.model.from_db(self.alias, self.names, [row[i] for i in self.cols])
        if self.related is not None:
            field, model, cols, names = self.related
            related = None
            if row[self._related_pk] is not None:
                related = model.from_db(self.alias, names, [row[i] for i in cols])
            field.set_cached_value(obj, related)
        return obj


_PK_PLACEHOLDER = -987_654_321


def _plain_manager(model: type[models.Model]) -> Any:
    """The default manager, or ``None`` when lookups through it must go through the ORM.

    A default manager that overrides ``get_queryset`` may filter per request
    (tenants, soft deletes); only integer primary keys are compiled.
    """
    manager = model._default_manager
    if type(manager).get_queryset is not models.Manager.get_queryset:
        return None
    if not isinstance(model._meta.pk, models.IntegerField):
        return None
    return manager


@lru_cache(maxsize=16)
def _user_lookup(alias: str, label: str) -> CompiledLookup | None:
    """``_default_manager.filter(pk=...)`` compiled once, for integer primary keys."""
    manager = _plain_manager(user_model())
    if manager is None:
        return None
    try:
        return CompiledLookup(
            alias,
            lambda using: manager.db_manager(using).filter(pk=_PK_PLACEHOLDER),
            placeholder=_PK_PLACEHOLDER,
        )
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def _int_pk(user_id: Any) -> int | None:
    """*user_id* as a 64-bit integer key, or ``None`` when it cannot be one."""
    try:
        pk = int(user_id)
    except (TypeError, ValueError):
        return None
    return pk if -(2**63) <= pk < 2**63 else None


def user_by_pk(user_id: object, using: str | None = None) -> Any:
    """The ``AUTH_USER_MODEL`` instance with this primary key, or ``None`` (any id accepted)."""
    model = user_model()
    alias = using or router.db_for_read(model)
    lookup = _user_lookup(alias, model._meta.label)
    if lookup is not None:
        pk = _int_pk(user_id)
        return lookup.fetch(pk) if pk is not None else None
    try:
        return model._default_manager.db_manager(alias).get(pk=user_id)
    except (model.DoesNotExist, ValueError, TypeError, ValidationError, OverflowError):
        return None


def _concrete_field(model: type[models.Model], name: str) -> bool:
    try:
        field = model._meta.get_field(name)
    except FieldDoesNotExist:
        return False
    return bool(field.concrete) and not field.many_to_many


#: What :func:`user_check_by_pk` returns: whether the user is active, and its
#: stored password hash.
UserCheck = tuple[bool, Any]


@lru_cache(maxsize=16)
def _check_lookup(alias: str, label: str) -> tuple[CompiledLookup, bool | None] | None:
    """``is_active`` and ``password`` of one user by primary key, compiled once.

    Returns the lookup and ``is_active`` when it is the same for every user
    (``AbstractBaseUser``'s ``True`` for a model without the field), else
    ``None`` (it is the lookup's first column). ``None`` altogether when the
    answer needs the whole instance: an ``is_active`` or ``password`` that is
    no column (a property reading other fields), a filtering manager, a key
    that is not an integer.
    """
    model = user_model()
    manager = _plain_manager(model)
    if manager is None or not _concrete_field(model, "password"):
        return None
    columns: tuple[str, ...]
    if _concrete_field(model, "is_active"):
        columns, active = ("is_active", "password"), None
    else:
        constant = getattr(model, "is_active", True)
        if not isinstance(constant, bool):
            return None
        columns, active = ("password",), constant
    try:
        lookup = CompiledLookup(
            alias,
            lambda using: (
                manager.db_manager(using).filter(pk=_PK_PLACEHOLDER).values_list(*columns)
            ),
            placeholder=_PK_PLACEHOLDER,
        )
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return lookup, active


def user_check_by_pk(user_id: object, using: str | None = None) -> UserCheck | None:
    """``(is_active, password hash)`` of the ``AUTH_USER_MODEL`` user with this key.

    ``None`` when there is none. One query of those columns, compiled once; no
    model instance is made unless the model needs one to answer (see
    :func:`_check_lookup`), and then the answer is the instance's.
    """
    model = user_model()
    alias = using or router.db_for_read(model)
    compiled = _check_lookup(alias, model._meta.label)
    if compiled is None:
        user = user_by_pk(user_id, using)
        if user is None:
            return None
        return bool(getattr(user, "is_active", True)), getattr(user, "password", None)
    lookup, active = compiled
    pk = _int_pk(user_id)
    row = lookup.row(pk) if pk is not None else None
    if row is None:
        return None
    if active is None:
        return bool(row[0]), row[1]
    return active, row[0]
