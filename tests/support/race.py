"""Races through Django's live server: many requests sent at the same moment.

The concurrency tests (one grant redeemed 50 times at once, 50 sign-ups of one
address) need a live server that takes 50 connections at once, with a thread
and a database connection per request as a threaded WSGI server has in
production, and a way to let 50 callers go at one instant.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread, _StaticFilesHandler

T = TypeVar("T")

#: The most callers a race has (the live server's backlog is twice this).
RACERS = 50


class WideServer(ThreadedWSGIServer):
    # Django's test server listens with a backlog of 10: 50 connections opened at
    # once overflow it, and the kernel resets some before Django sees them.
    request_queue_size = 2 * RACERS


class WideLiveServer(LiveServerThread):
    server_class = WideServer


@contextmanager
def wide_live_server() -> Iterator[str]:
    """Django's live server with room for :data:`RACERS` at once; its base URL."""
    thread = WideLiveServer("127.0.0.1", _StaticFilesHandler)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    try:
        yield f"http://127.0.0.1:{thread.port}"
    finally:
        thread.terminate()


def at_once(calls: list[Callable[[], T]]) -> list[T]:
    """Run every call in a thread of its own, all released at one moment; their results, in order.

    A call that raises leaves ``None`` in its place (the test's assertions then say so).
    """
    start = threading.Barrier(len(calls))
    results: list[T | None] = [None] * len(calls)

    def run(i: int) -> None:
        start.wait()
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results  # type: ignore[return-value]
