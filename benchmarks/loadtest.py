"""What the benchmarks share: free ports, CPU time from ``/proc``, wrk's output, and
:class:`Caller` for the in-process ones.

``bench_http.py``, ``bench_authjs.py``, ``bench_inprocess.py`` and
``bench_ratelimit.py`` import it from this directory.
"""

from __future__ import annotations

import io
import os
import re
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Caller",
    "Result",
    "cpu_seconds",
    "create_schema",
    "descendants",
    "drop_schema",
    "free_port",
    "parse_latency",
    "parse_wrk",
    "timed",
]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


@dataclass
class Result:
    """What one wrk run measured; ``cpu_us`` is the server's CPU time per request."""

    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int
    cpu_us: float = 0.0


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])


def descendants(pid: int) -> list[int]:
    """Pids of every live process below *pid* (children, grandchildren...)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _parent_of(int(entry.name))
            if parent is not None:
                parents[int(entry.name)] = parent
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of *pids* (all their threads) so far."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / CLOCK_TICKS


def parse_latency(text: str, percentile: str) -> float:
    """A percentile of ``wrk --latency``'s distribution, in milliseconds."""
    match = re.search(rf"^\s*{percentile}%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"no {percentile}% latency in wrk output:\n{text}")
    return float(match.group(1)) * _UNIT_MS[match.group(2)]


def parse_wrk(text: str, socket_errors: tuple[str, ...] = ("timeout",)) -> Result:
    """Requests/s, p50 and p99 (ms), requests and errors from ``wrk --latency`` output.

    Errors are the non-2xx/3xx answers plus the named kinds of socket error
    (``connect``, ``read``, ``write``, ``timeout``).
    """
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.MULTILINE)
    requests = re.search(r"^\s*(\d+) requests in", text, re.MULTILINE)
    if rps is None or requests is None:
        raise ValueError(f"unexpected wrk output:\n{text}")
    errors = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses:\s+(\d+)", text))
    found = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if found is not None:
        counts = dict(zip(("connect", "read", "write", "timeout"), found.groups(), strict=True))
        errors += sum(int(counts[kind]) for kind in socket_errors)
    p50, p99 = parse_latency(text, "50"), parse_latency(text, "99")
    return Result(float(rps.group(1)), p50, p99, int(requests.group(1)), errors)


class Caller:
    """Calls Django's WSGI application the way a server would, keeping the last answer's
    status and headers. An environ may carry its POST body under ``"webauth.body"``:
    a body is read once, so each call gets a fresh stream. Django must be set up."""

    def __init__(self) -> None:
        from django.core.handlers.wsgi import WSGIHandler

        self.app = WSGIHandler()
        self.status = ""
        self.headers: list[tuple[str, str]] = []

    def start_response(self, status: str, headers: list[tuple[str, str]]) -> None:
        self.status, self.headers = status, headers

    def __call__(self, env: dict[str, Any]) -> bytes:
        env = dict(env)
        body = env.pop("webauth.body", None)
        if body is not None:
            env["wsgi.input"] = io.BytesIO(body)
        result: Iterable[bytes] = self.app(env, self.start_response)
        answer = b"".join(result)
        result.close()  # type: ignore[attr-defined]
        return answer

    def set_cookies(self) -> dict[str, str]:
        """The cookies the last answer set, by name."""
        found = {}
        for name, value in self.headers:
            if name == "Set-Cookie":
                key, _, rest = value.strip().partition("=")
                found[key] = rest.split(";", 1)[0]
        return found


def timed(fn: Callable[[], object], number: int) -> float:
    """Microseconds per call of *fn*, over *number* calls."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number * 1e6


def create_schema() -> None:
    """A fresh PostgreSQL schema ``settings.PG_SCHEMA`` for the run (Django set up)."""
    from django.conf import settings
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"DROP SCHEMA IF EXISTS {settings.PG_SCHEMA} CASCADE")
        cursor.execute(f"CREATE SCHEMA {settings.PG_SCHEMA}")


def drop_schema() -> None:
    """Remove the run's PostgreSQL schema and close the connection."""
    from django.conf import settings
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"DROP SCHEMA IF EXISTS {settings.PG_SCHEMA} CASCADE")
    connection.close()
