"""The options webauth's maintenance commands share: ``--batch-size`` and ``--database``.

``webauth_purge`` and ``webauth_addresses`` both work through a table in short
batches on one database; they take and check these two options the same way.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections

__all__ = ["add_batch_options", "batch_options"]


def add_batch_options(parser: CommandParser, *, batch_size: int, rows: str, database: str) -> None:
    """Add ``--batch-size`` (default *batch_size*; *rows* says what one batch is) and
    ``--database`` (*database* says what is done on it)."""
    parser.add_argument(
        "--batch-size",
        type=int,
        default=batch_size,
        help=f"{rows} (default {batch_size}).",
    )
    parser.add_argument(
        "--database",
        default=DEFAULT_DB_ALIAS,
        help=f"The database alias {database} (default: %(default)s).",
    )


def batch_options(options: dict[str, Any]) -> tuple[int, str]:
    """``(batch size, database alias)`` from the parsed options; ``CommandError`` if one is off."""
    batch_size: int = options["batch_size"]
    if batch_size < 1:
        raise CommandError("--batch-size must be a positive integer.")
    using: str = options["database"]
    if using not in connections:
        raise CommandError(
            f"Unknown database alias {using!r}; choose one of: {', '.join(connections)}."
        )
    return batch_size, using
