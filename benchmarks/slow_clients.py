"""What idle keep-alive connections and slow request bodies do to each Python server.

Run from anywhere (Linux)::

    python benchmarks/slow_clients.py                  # sync, gthread, granian-wsgi
    python benchmarks/slow_clients.py --server uvicorn,granian-wsgi:4

Each server named by ``--server`` (the names of ``bench_authjs.py``) serves the
benchmark site with ONE worker process and, unless the name says otherwise
(``gthread:4``), one thread, so that a single held thread shows. Two checks, each
followed by one ``GET /auth/providers`` whose answer time is printed:

* idle: ``--idle`` connections (default 200) each make one request and then stay
  open, idle, as browsers keep them;
* slow body: one client sends the headers of a ``POST`` announcing 1000 bytes of
  body and only 10 of them, then waits (as a slow or hostile client can).

The probe gives up after ``--timeout`` seconds (default 5). No load, no figures
to compare: it shows which server a buffering reverse proxy must protect.
"""

from __future__ import annotations

import argparse
import http.client
import socket
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_authjs  # a sibling script, not a package


def probe(port: int, timeout: float) -> str:
    """How ``GET /auth/providers`` fared: its status and time, or how it failed."""
    start = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", "/auth/providers")
        response = connection.getresponse()
        response.read()
    except OSError as exc:
        return f"no answer after {time.monotonic() - start:.1f} s ({type(exc).__name__})"
    finally:
        connection.close()
    return f"answered {response.status} in {(time.monotonic() - start) * 1000:.1f} ms"


def idle_check(port: int, count: int, timeout: float) -> str:
    with ExitStack() as stack:
        for _ in range(count):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            stack.callback(connection.close)
            connection.request("GET", "/auth/providers")
            connection.getresponse().read()  # the connection stays open, idle
        return probe(port, timeout)


def slow_body_check(port: int, timeout: float) -> str:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST /auth/callback/credentials HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n"
            b"\r\ncsrfToken="
        )
        time.sleep(0.5)
        return probe(port, timeout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="sync,gthread:1,granian-wsgi:1")
    parser.add_argument("--idle", type=int, default=200, help="idle connections (200)")
    parser.add_argument("--timeout", type=float, default=5.0, help="probe timeout, s (5)")
    args = parser.parse_args()
    names = args.server.split(",")
    # The server settings bench_authjs.py uses, with one worker and one thread.
    server_args = argparse.Namespace(workers=1, server_threads=1, keep_alive=5)
    with tempfile.TemporaryDirectory(prefix="webauth-slow-clients-") as tmp:
        database = str(Path(tmp) / "bench.sqlite3")
        bench_authjs.setup_django(database)
        server_args.logs = tmp
        for name in names:
            with bench_authjs.python_server(server_args, name, database) as server:
                port = int(server.url.rpartition(":")[2])
                print(f"{name}: {server.description}; 1 worker process")
                idle = idle_check(port, args.idle, args.timeout)
                print(f"  with {args.idle} idle keep-alive connections: GET /auth/providers {idle}")
                slow = slow_body_check(port, args.timeout)
                print(f"  while one client sends a body slowly: GET /auth/providers {slow}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
