"""``manage.py webauth_purge``: delete expired sessions, grants, WebAuthn challenges and the
access tokens' expired session notes."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError
from django.utils import timezone

from ...purge import PURGED_MODELS, count_expired, purge_expired
from ..batches import add_batch_options, batch_options


class Command(BaseCommand):
    help = (
        "Delete expired webauth sessions, verification tokens, WebAuthn challenges and "
        "access token sessions in short batches. "
        "Safe to run while the site serves requests; run it from cron."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Count what would be deleted; delete nothing.",
        )
        add_batch_options(
            parser,
            batch_size=10_000,
            rows="Expired rows per DELETE statement. Smaller batches hold locks for less time",
            database="to purge",
        )

    def handle(self, *args: object, **options: Any) -> None:
        batch_size, using = batch_options(options)
        verbosity: int = options["verbosity"]
        now = timezone.now()
        for model in PURGED_MODELS:
            table = model._meta.db_table
            try:
                if options["dry_run"]:
                    count = count_expired(model, now=now, using=using)
                    if verbosity >= 1:
                        self.stdout.write(f"{table}: {count} expired rows would be deleted")
                    continue

                def progress(count: int, table: str = table) -> None:
                    if verbosity >= 2:
                        self.stdout.write(f"{table}: deleted a batch of {count}")

                result = purge_expired(
                    model, batch_size=batch_size, now=now, using=using, progress=progress
                )
            except DatabaseError as exc:
                raise CommandError(
                    f"Purging {table} failed: {exc}. Rows deleted by earlier batches stay "
                    "deleted; fix the database problem and run the command again."
                ) from exc
            if verbosity >= 1:
                self.stdout.write(
                    f"{table}: deleted {result.deleted} expired rows in {result.batches} batches"
                )
