"""Serve the tests' WSGI site with several gunicorn processes (the limits across processes)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from .helpers import wait_until_serving

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def gunicorn(
    env: Mapping[str, str],
    log_dir: Path,
    *,
    workers: int = 4,
    app: str = "tests.support.ratelimit_site:application",
) -> Iterator[str]:
    """*app* (``tests.support.ratelimit_site``'s by default) served by *workers* sync
    workers; its base URL."""
    port = free_port()
    log_path = log_dir / "gunicorn.log"
    log = log_path.open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--workers",
            str(workers),
            "--bind",
            f"127.0.0.1:{port}",
            "--chdir",
            str(REPO_ROOT),
            app,
        ],
        env=dict(env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(base, server, log_path)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def run_module(module: str, env: Mapping[str, str], *args: str) -> str:
    """``python -m module args...`` from the repository root with *env*; its output.

    The way the multi-process tests prepare and change their site from outside its
    servers (as a shell or a cron job would); a failure shows the command's stderr.
    """
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        env=dict(env),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
