"""``manage.py webauth_addresses``: report, and fix where safe, addresses not in canonical form."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from ...addresses import AddressAudit, FixResult, audit, fix
from ..batches import add_batch_options, batch_options

# Non-canonical rows listed at the default verbosity; --verbosity 2 lists all.
LISTED = 50


def shown(value: str) -> str:
    """*value* for the terminal: as it is when plain, else quoted with escapes.

    A stored address may hold what a terminal would act on or hide (control
    characters, bidirectional marks, trailing spaces): ``repr`` shows them.
    """
    if value.isprintable() and not any(char.isspace() for char in value):
        return value
    return repr(value)


def plural(count: int, one: str, many: str | None = None) -> str:
    """``"1 user"``, ``"2 users"``."""
    return f"{count} {one if count == 1 else many or one + 's'}"


class Command(BaseCommand):
    help = (
        "Report user addresses (and email sign-in account ids) that are not in webauth's "
        "canonical form, and users whose addresses are one mailbox. --fix rewrites those "
        "that are in no collision; collisions are left for you to resolve."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--fix",
            action="store_true",
            help="Rewrite to the canonical form every address and account id that is in "
            "no collision.",
        )
        parser.add_argument(
            "--check",
            action="store_true",
            help="Exit with status 1 if collisions or non-canonical addresses remain "
            "after the run.",
        )
        add_batch_options(parser, batch_size=1000, rows="Rows read per query", database="to check")

    def handle(self, *args: object, **options: Any) -> None:
        batch_size, using = batch_options(options)
        self.verbosity: int = options["verbosity"]
        try:
            report = audit(using=using, batch_size=batch_size)
        except DatabaseError as exc:
            raise CommandError(
                f"Reading the addresses failed: {exc}. Nothing was changed; fix the database "
                "problem and run the command again."
            ) from exc
        self.report(report)
        result = None
        if options["fix"]:
            try:
                result = fix(report, using=using)
            except DatabaseError as exc:
                raise CommandError(
                    f"Rewriting the addresses failed: {exc}. Addresses rewritten before the "
                    "error stay rewritten; fix the database problem and run the command again."
                ) from exc
            self.report_fix(result)
        self.next_steps(report, result)
        if options["check"] and remaining(report, result):
            # Status 1, as makemigrations --check exits; the reason on stderr
            # even at --verbosity 0, for the deploy log.
            self.stderr.write("Collisions or non-canonical addresses remain (--check).")
            sys.exit(1)

    def say(self, line: str = "", verbosity: int = 1) -> None:
        if self.verbosity >= verbosity:
            self.stdout.write(line)

    def report(self, report: AddressAudit) -> None:
        fixable, accounts = report.fixable, report.non_canonical_accounts
        colliding = report.colliding
        fixable_accounts = report.fixable_accounts
        colliding_users = sum(len(collision.users) for collision in report.collisions)
        self.say(
            f"Checked {plural(report.users_checked, 'user address', 'user addresses')} "
            f"({report.user_model}.{report.email_field}) and "
            f"{plural(report.accounts_checked, 'email account')} in database {report.using!r}."
        )
        self.say(
            f"Non-canonical addresses: {len(report.non_canonical)} ({len(fixable)} in no "
            f"collision, {len(report.non_canonical) - len(fixable)} in collisions)"
        )
        self.say(f"Collisions: {len(report.collisions)} ({plural(colliding_users, 'user')})")
        later = " (--verbosity 2 lists them)" if report.invalid and self.verbosity < 2 else ""
        self.say(f"Invalid addresses: {len(report.invalid)}{later}")
        self.say(
            f"Non-canonical email account ids: {len(accounts)} ({len(fixable_accounts)} free, "
            f"{len(accounts) - len(fixable_accounts)} clashing with another account)"
        )
        invalid_accounts = len(report.accounts) - len(accounts)
        if invalid_accounts:
            self.say(f"Email account ids that are no address: {invalid_accounts}")

        for collision in report.collisions:
            self.say()
            self.say(f"Collision: {collision.canonical} is the address of:")
            for user in collision.users:
                self.say(f"  user {user.pk}: {shown(user.stored)}")
        self.listing(
            "Non-canonical addresses (user: stored -> canonical):",
            [
                f"user {row.pk}: {shown(row.stored)} -> {row.canonical}"
                + (" (in a collision)" if row.pk in colliding else "")
                for row in report.non_canonical
            ],
        )
        self.listing(
            "Non-canonical email account ids:",
            [
                f"account {account.pk} (provider {account.provider}, user {account.user_pk}): "
                f"{shown(account.stored)} -> {account.canonical}"
                + (
                    f" (clashes with account {', '.join(map(str, account.clashes_with))})"
                    if account.clashes_with
                    else ""
                )
                for account in accounts
            ],
        )
        if self.verbosity >= 2:
            self.listing(
                "Invalid addresses (webauth never finds these users by address):",
                [f"user {row.pk}: {shown(row.stored)}" for row in report.invalid],
            )
            self.listing(
                "Email account ids that are no address:",
                [
                    f"account {account.pk} (provider {account.provider}, user "
                    f"{account.user_pk}): {shown(account.stored)}"
                    for account in report.accounts
                    if account.canonical is None
                ],
            )

    def listing(self, title: str, lines: list[str]) -> None:
        if not lines or self.verbosity < 1:
            return
        self.say()
        self.say(title)
        limit = len(lines) if self.verbosity >= 2 else LISTED
        for line in lines[:limit]:
            self.say(f"  {line}")
        if len(lines) > limit:
            self.say(f"  ... and {len(lines) - limit} more (--verbosity 2 lists them all)")

    def report_fix(self, result: FixResult) -> None:
        self.say()
        self.say(
            f"Rewrote {plural(result.users_rewritten, 'user address', 'user addresses')} and "
            f"{plural(result.accounts_rewritten, 'email account id')} to the canonical form."
        )
        address, addresses = "user address", "user addresses"
        left = [
            (plural(result.users_in_collisions, address, addresses), "in collisions"),
            (
                plural(result.users_taken, address, addresses),
                "whose canonical form another user took meanwhile",
            ),
            (plural(result.users_changed, address, addresses), "that changed since it was read"),
            (plural(result.accounts_clashing, "account id"), "clashing with another account"),
            (plural(result.accounts_changed, "account id"), "that changed since it was read"),
        ]
        for what, why in left:
            if not what.startswith("0 "):
                self.say(f"Left {what} {why}.")

    def next_steps(self, report: AddressAudit, result: FixResult | None) -> None:
        steps = []
        if result is None and (report.fixable or report.fixable_accounts):
            what = [
                plural(len(report.fixable), "user address", "user addresses"),
                plural(len(report.fixable_accounts), "email account id"),
            ]
            what = [part for part in what if not part.startswith("0 ")]
            steps.append(
                f"Run with --fix to rewrite the {' and '.join(what)} that are in no collision."
            )
        if report.collisions:
            steps.append(
                "Resolve each collision in the admin: give every user of it but one another "
                "address (or merge the users), then run this command again."
            )
        if len(report.non_canonical_accounts) > len(report.fixable_accounts):
            steps.append(
                "For each clashing email account, delete the one that is no longer used "
                "(webauth's Accounts in the admin), then run this command again."
            )
        if result is not None and (
            result.users_taken or result.users_changed or result.accounts_changed
        ):
            steps.append("Addresses changed while the command ran: run it again.")
        if not steps and not remaining(report, result):
            if report.invalid:
                steps.append(
                    "No collision and no non-canonical address remain. The users whose address "
                    "is invalid are never found by it: correct it in the admin where it matters."
                )
            else:
                steps.append("Every address is in canonical form: nothing to do.")
        self.say()
        for step in steps:
            self.say(step)


def remaining(report: AddressAudit, result: FixResult | None) -> bool:
    """Whether collisions or non-canonical addresses remain after the run."""
    if result is None:
        return not report.clean
    return bool(report.collisions or result.users_left or result.accounts_left)
