"""The example project's development email: printed on the console, and kept for /dev/outbox/.

Not part of using webauth. A real project sets ``EMAIL_BACKEND`` to SMTP or a
delivery service (docs/email.md); this one has no mail server, so sign-in
emails are printed where ``./scripts/example`` runs, as Django's console backend
prints them, and the last few are also written to a small JSON file that the
DEBUG-only page ``/dev/outbox/`` lists with clickable links.

A file rather than memory: ``runserver`` restarts its process whenever a source
file changes, and a project may run several worker processes; every one of
them writes to and reads the same file.
"""

import json
import os
import tempfile
import threading
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.mail.backends.console import EmailBackend as ConsoleBackend

try:  # an advisory lock between processes (POSIX); threads use the lock below
    import fcntl
except ImportError:  # Windows: a lost message in a race is acceptable for a demo
    fcntl = None

#: How many messages /dev/outbox/ keeps (the oldest are dropped).
KEEP = 20

_threads = threading.Lock()


def outbox_path() -> Path:
    """Where the messages are kept: ``settings.EXAMPLE_OUTBOX``."""
    return Path(settings.EXAMPLE_OUTBOX)


@contextmanager
def _locked(path: Path):
    with _threads, open(path.with_suffix(path.suffix + ".lock"), "a") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_UN)


def read_outbox() -> list[dict]:
    """The kept messages, newest first (an absent or damaged file is an empty outbox)."""
    try:
        messages = json.loads(outbox_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return messages if isinstance(messages, list) else []


def _record(message) -> dict:
    alternatives = getattr(message, "alternatives", ())
    html = next((content for content, kind in alternatives if kind == "text/html"), None)
    return {
        "sent": datetime.now(UTC).isoformat(timespec="seconds"),
        "from": message.from_email,
        "to": list(message.to),
        "subject": message.subject,
        "text": message.body,
        "html": html,
    }


class EmailBackend(ConsoleBackend):
    """Django's console backend that also keeps the last :data:`KEEP` messages for /dev/outbox/."""

    def send_messages(self, email_messages):
        sent = super().send_messages(email_messages)
        if email_messages:
            path = outbox_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(path):
                kept = [_record(m) for m in reversed(email_messages)] + read_outbox()
                # Written to a temporary file and renamed: a reader never sees half a file.
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".outbox-")
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(kept[:KEEP], out)
                os.replace(tmp, path)
        return sent
