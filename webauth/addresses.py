"""Finding, and where it is safe rewriting, stored addresses that are not canonical.

webauth stores every email address in one canonical form
(:func:`webauth.identity.canonical_email`) and looks addresses up by that form,
compared exactly. A user saved before that rule, or by code that does not
follow it (``Alice@Example.com`` typed in the admin, ``dup@пример.рф`` where
webauth stores ``dup@xn--e1afmkfd.xn--p1ai``), is no longer found by email
sign-in, OAuth linking by address or passkey registration. Two users whose
addresses have the same canonical form *collide*: they are one mailbox, and
webauth must not choose between them (``get_user_by_email`` refuses the
sign-in with :class:`~webauth.errors.AmbiguousEmail` when the stored values
are exactly equal).

:func:`audit` reads the user model's address column in primary-key order and
in batches (keyset pagination: each batch starts after the previous batch's
last key), so memory grows with the number of rows that have a problem, never
with the table. A second pass, only when there is something to look for,
finds the users that hold the canonical forms of the first pass's
non-canonical addresses and the exactly duplicated values, comparing in
Python: one look-up query per value would read the whole table each time
where the column has no index (Django's ``auth.User``). It reports:

* addresses that are not canonical, with their canonical form;
* addresses webauth does not accept at all (empty ones are skipped);
* collisions: users whose addresses have one canonical form. Exact
  duplicates are found by ``GROUP BY`` on the column; on MariaDB and MySQL on
  its bytes, since a case- and accent-insensitive collation would group
  ``jöhn@example.com`` with ``john@example.com``, two mailboxes. A
  non-canonical address collides with the users that hold its canonical form
  exactly, and with the other non-canonical addresses of the same form;
* email sign-in accounts (``Account`` rows of ``type="email"``) whose id,
  an address, is not canonical, and whether another account of the provider
  already has the canonical id.

:func:`fix` rewrites what can be rewritten without deciding anything: each
non-canonical address that is in no collision, and each such account id that
no other account of its provider holds. Each user's rewrite is one
transaction per address (:func:`~webauth.adapters._exact.address_transaction`,
the lock that ``DjangoAdapter`` takes when it gives a user an address): it
writes only if the row still holds exactly the audited value, and rolls back
if another user holds the canonical form by then. Collisions are never
touched: which user keeps the address is the operator's decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connections, router, transaction
from django.db.models import Count, F, Min
from django.utils import timezone

from .adapters._exact import Bytes, address_transaction, exactly
from .identity import canonical_email_or_none
from .models import Account

__all__ = [
    "AccountAddress",
    "AddressAudit",
    "Collision",
    "FixResult",
    "NonCanonicalAddress",
    "UserAddress",
    "audit",
    "fix",
]

# Values per "IN (...)" lookup: well under every backend's limit on parameters.
_IN_CHUNK = 500


@dataclass(frozen=True, slots=True)
class UserAddress:
    """A user's primary key and stored address, as the column holds it."""

    pk: object
    stored: str


@dataclass(frozen=True, slots=True)
class NonCanonicalAddress:
    """A user whose stored address is valid but not in its canonical form."""

    pk: object
    stored: str
    canonical: str


@dataclass(frozen=True, slots=True)
class Collision:
    """Two or more users whose stored addresses have the same canonical form.

    *users* are in primary-key order; a user whose ``stored`` equals
    ``canonical`` already holds the canonical form.
    """

    canonical: str
    users: tuple[UserAddress, ...]


@dataclass(frozen=True, slots=True)
class AccountAddress:
    """An email sign-in account (``Account``, ``type="email"``) whose id is not canonical.

    ``canonical`` is ``None`` when the id is no address webauth accepts (it is
    then never rewritten). ``clashes_with`` holds the primary keys of the other
    accounts of the same provider that have, or would get, the canonical id:
    rewriting this one would make two accounts of one address.
    """

    pk: int
    user_pk: object
    provider: str
    stored: str
    canonical: str | None
    clashes_with: tuple[int, ...] = ()

    @property
    def fixable(self) -> bool:
        """Whether :func:`fix` rewrites this account's id."""
        return self.canonical is not None and not self.clashes_with


@dataclass(frozen=True, slots=True)
class AddressAudit:
    """What :func:`audit` found; :func:`fix` takes it."""

    #: The database alias that was read.
    using: str
    #: The user model (``app_label.ModelName``) and its address field.
    user_model: str
    email_field: str
    #: Users with a non-empty address, and email accounts, that were read.
    users_checked: int
    accounts_checked: int
    #: Valid addresses not in their canonical form, in primary-key order.
    non_canonical: tuple[NonCanonicalAddress, ...]
    #: Addresses webauth does not accept (``canonical_email_or_none`` is ``None``).
    invalid: tuple[UserAddress, ...]
    #: Groups of users with one canonical form, ordered by that form.
    collisions: tuple[Collision, ...]
    #: Email accounts whose id is not canonical (or no address), in primary-key order.
    accounts: tuple[AccountAddress, ...]

    @property
    def colliding(self) -> frozenset[object]:
        """The primary keys of the users in a collision."""
        return frozenset(user.pk for collision in self.collisions for user in collision.users)

    @property
    def fixable(self) -> tuple[NonCanonicalAddress, ...]:
        """The non-canonical addresses in no collision: :func:`fix` rewrites these."""
        colliding = self.colliding
        return tuple(row for row in self.non_canonical if row.pk not in colliding)

    @property
    def non_canonical_accounts(self) -> tuple[AccountAddress, ...]:
        """The email accounts whose id is a valid address in another form."""
        return tuple(account for account in self.accounts if account.canonical is not None)

    @property
    def fixable_accounts(self) -> tuple[AccountAddress, ...]:
        """The email accounts :func:`fix` rewrites (their canonical id is free)."""
        return tuple(account for account in self.accounts if account.fixable)

    @property
    def clean(self) -> bool:
        """No collision, no non-canonical address and no non-canonical account id.

        Values that are no address at all do not count: there is nothing to
        rewrite them to, and webauth never finds them.
        """
        return not (self.collisions or self.non_canonical or self.non_canonical_accounts)


@dataclass(frozen=True, slots=True)
class FixResult:
    """What :func:`fix` changed, and what it left and why."""

    #: User addresses rewritten to their canonical form.
    users_rewritten: int = 0
    #: Left: in a collision (the operator decides who keeps the address).
    users_in_collisions: int = 0
    #: Left: another user had the canonical form by the time of the rewrite.
    users_taken: int = 0
    #: Left: the address was no longer the audited value (changed meanwhile).
    users_changed: int = 0
    #: Email account ids rewritten to their canonical form.
    accounts_rewritten: int = 0
    #: Left: another account of the provider has, or would get, the canonical id.
    accounts_clashing: int = 0
    #: Left: the id was no longer the audited value.
    accounts_changed: int = 0

    @property
    def users_left(self) -> int:
        """Non-canonical user addresses that are still there."""
        return self.users_in_collisions + self.users_taken + self.users_changed

    @property
    def accounts_left(self) -> int:
        """Non-canonical email account ids that are still there."""
        return self.accounts_clashing + self.accounts_changed


def _user_model_and_field() -> tuple[Any, str]:
    model: Any = get_user_model()
    return model, model.get_email_field_name()


def _keyset(rows: Any, columns: Sequence[str], batch_size: int) -> Iterator[list[tuple[Any, ...]]]:
    """*rows*' *columns* (the primary key first) in batches, in primary-key order.

    Each batch is one query starting after the previous batch's last key, so
    no batch rereads what came before and none holds more than *batch_size*
    rows.
    """
    last: object = None
    while True:
        page = rows if last is None else rows.filter(pk__gt=last)
        batch = list(page.order_by("pk").values_list(*columns)[:batch_size])
        if batch:
            yield batch
        if len(batch) < batch_size:
            return
        last = batch[-1][0]


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), _IN_CHUNK):
        yield values[start : start + _IN_CHUNK]


def _exactly_in(rows: Any, field_name: str, values: Iterable[str]) -> Iterator[Any]:
    """The rows of the queryset *rows* whose *field_name* is one of *values*, byte for byte.

    :func:`~webauth.adapters._exact.exactly` for many values: the ``IN``
    under the column's collation (which an index serves), narrowed on MariaDB
    and MySQL by the bytes. The caller compares the rows again in Python.
    """
    wanted = sorted(set(values))
    mysql = connections[rows.db].vendor == "mysql"
    for chunk in _chunks(wanted):
        found = rows.filter(**{f"{field_name}__in": chunk})
        if mysql:
            found = found.alias(_webauth_bytes=Bytes(field_name)).filter(_webauth_bytes__in=chunk)
        yield from found


def _exact_duplicates(users: Any, field_name: str) -> Iterator[str]:
    """The stored addresses that two or more users have, byte for byte (one ``GROUP BY``)."""
    key = Bytes(field_name) if connections[users.db].vendor == "mysql" else F(field_name)
    groups = (
        users.order_by()  # a model's Meta.ordering would join the GROUP BY
        .values(webauth_key=key)
        .annotate(webauth_users=Count("pk"), webauth_value=Min(field_name))
        .filter(webauth_users__gt=1)
        .values_list("webauth_value", flat=True)
    )
    yield from groups


def _with_address(users: Any, field_name: str) -> Any:
    return users.exclude(**{f"{field_name}__isnull": True}).exclude(**{field_name: ""})


def audit(*, using: str | None = None, batch_size: int = 1000) -> AddressAudit:
    """Read every user's address and every email account's id; report what is not canonical.

    *using* is the database alias (default: the router's database for writing
    the user model, where :func:`fix` will write). *batch_size* rows are read
    per query. Nothing is written.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    model, field_name = _user_model_and_field()
    alias = using or router.db_for_write(model)
    # The base manager: a project's default manager may hide users (inactive
    # ones, say) that still hold an address.
    users = _with_address(model._base_manager.db_manager(alias).all(), field_name)

    non_canonical: list[NonCanonicalAddress] = []
    invalid: list[UserAddress] = []
    checked = 0
    for batch in _keyset(users, ("pk", field_name), batch_size):
        for pk, stored in batch:
            if not isinstance(stored, str) or not stored.strip():
                continue  # no address (whitespace only): nothing to find or fix
            checked += 1
            canonical = canonical_email_or_none(stored)
            if canonical is None:
                invalid.append(UserAddress(pk, stored))
            elif canonical != stored:
                non_canonical.append(NonCanonicalAddress(pk, stored, canonical))

    # canonical form -> {pk: stored} of every user involved with that form.
    involved: dict[str, dict[Any, str]] = {}
    for row in non_canonical:
        involved.setdefault(row.canonical, {})[row.pk] = row.stored
    # The stored values whose holders are wanted, with their canonical form:
    # each non-canonical address's canonical form, and each exact duplicate.
    wanted = {row.canonical: row.canonical for row in non_canonical}
    for value in _exact_duplicates(users, field_name):
        canonical = canonical_email_or_none(value)
        if canonical is not None:  # the same non-address twice is only invalid
            wanted[value] = canonical
    if wanted:
        # A second pass finds their holders, compared exactly (Python's ``==``
        # on the text). Not one look-up per value: the address column of
        # Django's own auth.User has no index, so each would read the table.
        for batch in _keyset(users, ("pk", field_name), batch_size):
            for pk, stored in batch:
                canonical = wanted.get(stored)
                if canonical is not None:
                    involved.setdefault(canonical, {})[pk] = stored

    collisions = tuple(
        Collision(
            canonical,
            tuple(UserAddress(pk, members[pk]) for pk in sorted(members)),
        )
        for canonical, members in sorted(involved.items())
        if len(members) > 1
    )
    accounts, accounts_checked = _audit_accounts(alias, batch_size)
    return AddressAudit(
        using=alias,
        user_model=model._meta.label,
        email_field=field_name,
        users_checked=checked,
        accounts_checked=accounts_checked,
        non_canonical=tuple(non_canonical),
        invalid=tuple(invalid),
        collisions=collisions,
        accounts=accounts,
    )


def _audit_accounts(alias: str, batch_size: int) -> tuple[tuple[AccountAddress, ...], int]:
    """The email accounts whose id is not canonical, and the number read."""
    accounts = Account.objects.using(alias).filter(type="email")
    columns = ("pk", "user_id", "provider", "provider_account_id")
    found: list[tuple[int, object, str, str, str | None]] = []
    # (provider, canonical id) -> primary keys of the accounts that have or want it.
    claims: dict[tuple[str, str], list[int]] = {}
    checked = 0
    for batch in _keyset(accounts, columns, batch_size):
        wanted: dict[str, set[str]] = {}
        for pk, user_pk, provider, stored in batch:
            checked += 1
            canonical = canonical_email_or_none(stored)
            if canonical == stored:
                continue
            found.append((pk, user_pk, provider, stored, canonical))
            if canonical is not None:
                claims.setdefault((provider, canonical), []).append(pk)
                wanted.setdefault(provider, set()).add(canonical)
        # Accounts of any type that hold the canonical id under the same
        # provider already: the unique (provider, id) pair would refuse it.
        for provider, ids in wanted.items():
            holders = Account.objects.using(alias).filter(provider=provider)
            rows = _exactly_in(
                holders.values_list("pk", "provider", "provider_account_id"),
                "provider_account_id",
                ids,
            )
            for pk, held_provider, held_id in rows:
                if held_provider == provider and held_id in ids:
                    claims[(provider, held_id)].append(pk)
    result = tuple(
        AccountAddress(
            pk=pk,
            user_pk=user_pk,
            provider=provider,
            stored=stored,
            canonical=canonical,
            clashes_with=(
                tuple(sorted(set(claims[(provider, canonical)]) - {pk}))
                if canonical is not None
                else ()
            ),
        )
        for pk, user_pk, provider, stored, canonical in found
    )
    return result, checked


class _Left(Exception):
    """Rolls a rewrite back; *reason* says why it was left."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _rewrite_user(model: Any, field_name: str, alias: str, row: NonCanonicalAddress) -> str:
    """Rewrite one user's address: ``"rewritten"``, ``"taken"`` or ``"changed"``."""
    users = model._base_manager.db_manager(alias)

    def others_hold_it() -> bool:
        others = users.exclude(pk=row.pk).values_list(field_name, flat=True)
        return any(value == row.canonical for value in exactly(others, field_name, row.canonical))

    try:
        # Written first, then checked (on SQLite a transaction that reads
        # before it writes cannot wait for the write lock), under the lock
        # that DjangoAdapter takes to give a user this address.
        with address_transaction(alias, row.canonical):
            updated = exactly(users.filter(pk=row.pk), field_name, row.stored).update(
                **{field_name: row.canonical}
            )
            if not updated:
                raise _Left("changed")
            if others_hold_it():
                raise _Left("taken")
    except _Left as left:
        return left.reason
    except IntegrityError:
        # A unique address column refused it: someone has the address now.
        if others_hold_it():
            return "taken"
        raise
    return "rewritten"


def _rewrite_account(alias: str, account: AccountAddress) -> str:
    """Rewrite one email account's id: ``"rewritten"``, ``"clashing"`` or ``"changed"``."""
    assert account.canonical is not None
    canonical = account.canonical
    accounts = Account.objects.using(alias)

    def others_hold_it() -> bool:
        others = accounts.filter(provider=account.provider).exclude(pk=account.pk)
        held = exactly(others, "provider_account_id", canonical)
        return any(
            value == canonical for value in held.values_list("provider_account_id", flat=True)
        )

    try:
        with transaction.atomic(using=alias):
            rows = accounts.filter(pk=account.pk, type="email", provider=account.provider)
            updated = exactly(rows, "provider_account_id", account.stored).update(
                provider_account_id=canonical, updated_at=timezone.now()
            )
            if not updated:
                raise _Left("changed")
            if others_hold_it():
                raise _Left("clashing")
    except _Left as left:
        return left.reason
    except IntegrityError:  # the (provider, provider_account_id) constraint
        if others_hold_it():
            return "clashing"
        raise
    return "rewritten"


def fix(report: AddressAudit, *, using: str | None = None) -> FixResult:
    """Rewrite to their canonical form the addresses and account ids that *report* found safe.

    A user's address is rewritten when it is in no collision, an email
    account's id when no other account of its provider has (or would get) the
    canonical id. Each rewrite is its own short transaction and happens only
    if the row still holds exactly the audited value and nobody else holds the
    canonical form by then. *using* defaults to the database *report* read.
    """
    alias = using or report.using
    model, field_name = _user_model_and_field()
    counts = {"rewritten": 0, "taken": 0, "changed": 0}
    for row in report.fixable:
        outcome = _rewrite_user(model, field_name, alias, row)
        counts[outcome] += 1
    account_counts = {"rewritten": 0, "clashing": 0, "changed": 0}
    for account in report.non_canonical_accounts:
        if account.clashes_with:
            account_counts["clashing"] += 1
            continue
        outcome = _rewrite_account(alias, account)
        account_counts[outcome] += 1
    return FixResult(
        users_rewritten=counts["rewritten"],
        users_in_collisions=len(report.non_canonical) - len(report.fixable),
        users_taken=counts["taken"],
        users_changed=counts["changed"],
        accounts_rewritten=account_counts["rewritten"],
        accounts_clashing=account_counts["clashing"],
        accounts_changed=account_counts["changed"],
    )
