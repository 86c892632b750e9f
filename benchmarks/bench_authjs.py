"""Side by side: webauth on a Python server against Auth.js (@auth/core) on Node.

Run from anywhere (Linux; needs ``/usr/bin/wrk`` and ``node`` >= 20)::

    python benchmarks/bench_authjs.py                       # gunicorn sync workers
    python benchmarks/bench_authjs.py --server gthread,uvicorn,granian-wsgi
    python benchmarks/bench_authjs.py --server all --duration 3 --repeat 7
    python benchmarks/bench_authjs.py --server granian-wsgi,granian-wsgi+fast \
        --stacks installed,lean

Both sides serve the same routes under ``/auth`` with the same secret and one
credentials provider (id ``credentials``) that accepts one user after a
constant-time comparison, so that neither side measures a password hasher:

* webauth: the benchmark site of ``benchmarks/http/`` with
  ``WEBAUTH_BENCH_CREDENTIALS=constant`` (``benchmarks/http/auth.py``), under the
  Python server(s) ``--server`` names, with the middleware ``--stacks`` names:
  ``installed`` (the default: the exact ``MIDDLEWARE`` of docs/installation.md)
  and/or ``lean`` (``AuthMiddleware`` only, labelled ``@lean``). A server name
  ending in ``+fast`` serves the site behind :class:`webauth.wsgi.FastPath`
  (``benchmarks.http.wsgi:fast_application``);
* Auth.js: ``benchmarks/authjs/server.mjs``, ``Auth()`` behind ``node:http`` in
  ``node:cluster`` workers (``npm ci`` runs first when ``node_modules`` is missing).

Each side runs ``--workers`` worker processes (2: one per core of a 2-core
machine). wrk runs on the same cores. The cases, each with the cookies a browser
holds by then (the CSRF and callback-URL cookies of its first answer):

* ``session``: ``GET /auth/session`` with a valid JWT session cookie;
* ``anon``: ``GET /auth/session`` without a session (the answer is ``null``);
* ``csrf``: ``GET /auth/csrf``;
* ``providers``: ``GET /auth/providers``;
* ``signin``: ``POST /auth/callback/credentials``, form body ``csrfToken``,
  ``username``, ``password`` (a wrk Lua script).

Before timing, every case is checked once on every server (status, body, the
names of the cookies set) and so is interoperability: a session token issued by
either side must be accepted by the other (which also proves that both use the
same secret), and a wrong password must be refused. The checks run again after
the rounds. Then every case is warmed up, and ``--repeat`` rounds run every case
on every server next to each other (order reversed every other round), with the
same wrk threads, connections and duration for all.

Reported per case and server: requests/s (median and range over the rounds),
p50/p99 latency, and the CPU time (user + system, from ``/proc``) that the
server's processes (its main process and workers, all threads) spent per
request. Ratios webauth/Auth.js are the median of the per-round ratios;
``(CPU)`` is Auth.js's CPU per request divided by webauth's (above 1: webauth
spends less). Targets, on requests/s (issue 26): session >= 2.5, sign-in >= 1.3,
csrf, providers and the signed-out session >= 1.0; exit status 1 when one is
not met.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# Every kind of socket error counts against a run: Node and the keep-alive servers
# should see none at all.
SOCKET_ERRORS = ("connect", "read", "write", "timeout")

# benchmarks/loadtest.py, beside this script.
from loadtest import (  # noqa: E402
    Result,
    cpu_seconds,
    create_schema,
    descendants,
    drop_schema,
    free_port,
    parse_wrk,
)

AUTHJS_DIR = REPO_ROOT / "benchmarks" / "authjs"
SETTINGS_MODULE = "benchmarks.http.settings"
SESSION = "authjs.session-token"
CSRF = "authjs.csrf-token"
CALLBACK = "authjs.callback-url"
CASES = ("session", "anon", "csrf", "providers", "signin")
TARGETS = {"session": 2.5, "signin": 1.3, "anon": 1.0, "csrf": 1.0, "providers": 1.0}
STACKS = ("installed", "lean")
# The settings' name of each stack (benchmarks/http/settings.py's STACKS).
STACK_SETTINGS = {"installed": "installed", "lean": "webauth"}
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
AUTHJS = "authjs"
THREADS = tuple(str(n) for n in range(1, 65))


# ------------------------------------------------------------------ servers


@dataclass(frozen=True)
class Kind:
    """A way of serving the webauth site: a description and the command line's arguments."""

    description: str
    # The command; {port}, {workers}, {threads}, {keepalive} are filled in.
    command: tuple[str, ...]


_GUNICORN = (
    "-m",
    "gunicorn",
    "--bind=127.0.0.1:{port}",
    "--workers={workers}",
    "--log-level=warning",
)
_GRANIAN = (
    "-m",
    "granian",
    "--host=127.0.0.1",
    "--port={port}",
    "--workers={workers}",
    "--runtime-threads=1",
    "--no-ws",
    "--log-level=warning",
)

KINDS = {
    "sync": Kind(
        "gunicorn, sync workers (no keep-alive: one TCP connection per request)",
        (*_GUNICORN, "--worker-class=sync", "benchmarks.http.wsgi:{wsgi}"),
    ),
    "gthread": Kind(
        "gunicorn, gthread workers, {threads} thread(s) each, keep-alive {keepalive} s",
        (
            *_GUNICORN,
            "--worker-class=gthread",
            "--threads={threads}",
            "--keep-alive={keepalive}",
            "benchmarks.http.wsgi:{wsgi}",
        ),
    ),
    "gunicorn-asgi": Kind(
        "gunicorn, its own asgi workers, keep-alive {keepalive} s",
        (
            *_GUNICORN,
            "--worker-class=asgi",
            "--keep-alive={keepalive}",
            "benchmarks.http.asgi:application",
        ),
    ),
    "uvicorn": Kind(
        "uvicorn --workers, uvloop + httptools, keep-alive {keepalive} s",
        (
            "-m",
            "uvicorn",
            "--host=127.0.0.1",
            "--port={port}",
            "--workers={workers}",
            "--loop=uvloop",
            "--http=httptools",
            "--lifespan=off",
            "--no-access-log",
            "--log-level=warning",
            "--timeout-keep-alive={keepalive}",
            "benchmarks.http.asgi:application",
        ),
    ),
    "gunicorn-uvicorn": Kind(
        "gunicorn with uvicorn workers (uvicorn-worker), keep-alive {keepalive} s",
        (
            *_GUNICORN,
            "--worker-class=uvicorn_worker.UvicornWorker",
            "--keep-alive={keepalive}",
            "benchmarks.http.asgi:application",
        ),
    ),
    "granian-wsgi": Kind(
        "granian, WSGI interface, 1 runtime thread, {threads} blocking thread(s)",
        (
            *_GRANIAN,
            "--interface=wsgi",
            "--blocking-threads={threads}",
            "benchmarks.http.wsgi:{wsgi}",
        ),
    ),
    "granian-asgi": Kind(
        "granian, ASGI interface, 1 runtime thread",
        (*_GRANIAN, "--interface=asgi", "--loop=uvloop", "benchmarks.http.asgi:application"),
    ),
}
#: The kinds with a WSGI entry point, which ``+fast`` may wrap in FastPath.
WSGI_KINDS = ("sync", "gthread", "granian-wsgi")
# The package each kind needs, for the header line.
PACKAGES = {
    "sync": "gunicorn",
    "gthread": "gunicorn",
    "gunicorn-asgi": "gunicorn",
    "uvicorn": "uvicorn",
    "gunicorn-uvicorn": "uvicorn-worker",
    "granian-wsgi": "granian",
    "granian-asgi": "granian",
}


@dataclass
class Server:
    """A running server: its name, base URL and main process."""

    name: str
    url: str
    pid: int
    description: str
    jar: dict[str, str] = field(default_factory=dict)  # what a browser holds for it

    @property
    def origin(self) -> str:
        return self.url

    def workers(self) -> list[int]:
        """Pids of the processes below the main one (the workers)."""
        return descendants(self.pid)

    def processes(self) -> list[int]:
        """The main process and every process below it, whose CPU time is counted."""
        return [self.pid, *descendants(self.pid)]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=5, help="seconds per wrk run (5)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up seconds per case (3)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds; medians are shown (5)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (1)")
    parser.add_argument("--connections", type=int, default=4, help="wrk connections (4)")
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="worker processes per server, Python and Node alike (2: one per core)",
    )
    parser.add_argument(
        "--server",
        default="sync",
        help="comma-separated Python servers for webauth, or 'all': "
        + ", ".join(KINDS)
        + " (sync); 'gthread:4' or 'granian-wsgi:1' set the threads of that server only",
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="webauth's database: PostgreSQL at 127.0.0.1:5432 (a schema of its own), not SQLite",
    )
    parser.add_argument(
        "--stacks",
        default="installed",
        help="comma-separated middleware stacks for every Python server: installed "
        "(docs/installation.md's MIDDLEWARE, the default) and/or lean (AuthMiddleware only)",
    )
    parser.add_argument(
        "--server-threads",
        type=int,
        default=2,
        help="threads per worker for gthread, blocking threads for granian-wsgi (2)",
    )
    parser.add_argument(
        "--keep-alive", type=int, default=5, help="keep-alive seconds (5, as Node's default)"
    )
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated cases ({','.join(CASES)})"
    )
    parser.add_argument("--wrk", default=shutil.which("wrk") or "/usr/bin/wrk", help="wrk binary")
    parser.add_argument("--node", default=shutil.which("node") or "/usr/bin/node", help="node")
    args = parser.parse_args()
    names = list(KINDS) if args.server == "all" else args.server.split(",")
    unknown = [name for name in names if server_spec(name) is None]
    if unknown:
        parser.error(
            f"unknown --server {unknown}; choose from {', '.join(KINDS)} or all "
            f"(a WSGI one with +fast: {', '.join(WSGI_KINDS)})"
        )
    stacks = [s for s in args.stacks.split(",") if s]
    if not stacks or any(s not in STACKS for s in stacks):
        parser.error(f"--stacks: choose from {', '.join(STACKS)}")
    # One server per (server, stack); the installed stack's keep the plain name.
    args.servers = [
        name if stack == "installed" else f"{name}@{stack}" for stack in stacks for name in names
    ]
    args.case_keys = [c for c in args.cases.split(",") if c]
    if not args.case_keys or any(c not in CASES for c in args.case_keys):
        parser.error(f"--cases: choose from {', '.join(CASES)}")
    return args


def server_spec(name: str) -> tuple[str, bool, str, str] | None:
    """``kind[+fast][:threads][@stack]`` as ``(kind, fast, threads, stack)``, else ``None``."""
    name, _, stack = name.partition("@")
    kind_part, _, threads = name.partition(":")
    kind, plus, flag = kind_part.partition("+")
    fast = flag == "fast"
    if kind not in KINDS or threads not in ("", *THREADS) or stack not in ("", *STACKS):
        return None
    if plus and (not fast or kind not in WSGI_KINDS):
        return None
    return kind, fast, threads, stack or "installed"


def wait_until_serving(server: Server, process: subprocess.Popen[bytes], workers: int) -> None:
    """Wait until *workers* processes run below the server and it answers HTTP.

    (With one worker, uvicorn serves from its main process.)
    """
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {process.returncode}")
        if workers == 1 or len(server.workers()) >= workers:
            try:
                status, _, _ = request(server, "GET", "/auth/providers")
            except OSError:
                status = 0
            if status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{server.name} did not serve with {workers} workers within 60 s")


@contextmanager
def started(
    name: str, command: list[str], env: dict[str, str], cwd: Path, port: int, args, description
) -> Iterator[Server]:
    """Run *command* until the block ends; its output goes to a log shown if it fails.

    (Both sides log every refused sign-in, and the checks make one on purpose.)
    """
    log_path = Path(args.logs) / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    server = Server(name, f"http://127.0.0.1:{port}", process.pid, description)
    try:
        wait_until_serving(server, process, args.workers)
        yield server
    except BaseException:
        tail = log_path.read_text(errors="replace")[-3000:]
        print(f"--- end of the log of {name} ---\n{tail}", file=sys.stderr)
        raise
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def python_server(
    args: argparse.Namespace, name: str, database: str
) -> AbstractContextManager[Server]:
    """The webauth benchmark site under the Python server *name* (:func:`server_spec`)."""
    spec = server_spec(name)
    assert spec is not None
    kind_name, fast, threads, stack = spec
    kind = KINDS[kind_name]
    port = free_port()
    fill = {
        "port": port,
        "workers": args.workers,
        "threads": int(threads or args.server_threads),
        "keepalive": args.keep_alive,
        "wsgi": "fast_application" if fast else "application",
    }
    command = [sys.executable, *(part.format(**fill) for part in kind.command)]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS_MODULE,
        "WEBAUTH_BENCH_STACK": STACK_SETTINGS[stack],
        "WEBAUTH_BENCH_DATABASE": database,
        "WEBAUTH_BENCH_CREDENTIALS": "constant",
    }
    description = kind.description.format(**fill)
    description += ", behind FastPath" if fast else ""
    description += f"; stack {stack}"
    return started(name, command, env, REPO_ROOT, port, args, description)


def ensure_node_modules(args: argparse.Namespace) -> None:
    if not (AUTHJS_DIR / "node_modules" / "@auth" / "core").is_dir():
        print("benchmarks/authjs: npm ci", file=sys.stderr)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=AUTHJS_DIR, check=True)


def authjs_server(args: argparse.Namespace) -> AbstractContextManager[Server]:
    """Auth.js on node:http, ``--workers`` cluster workers."""
    from django.conf import settings

    from benchmarks.http.auth import USER

    port = free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "WORKERS": str(args.workers),
        "AUTH_SECRET": settings.WEBAUTH["secret"],
        "BENCH_USER": json.dumps(USER),
        "NODE_ENV": "production",
    }
    description = (
        f"node:http in {args.workers} node:cluster workers (default scheduling), keep-alive 5 s"
    )
    return started(AUTHJS, [args.node, "server.mjs"], env, AUTHJS_DIR, port, args, description)


# ---------------------------------------------------------------- requests


def cookie_header(cookies: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in cookies.items())


def request(
    server: Server,
    method: str,
    path: str,
    cookies: dict[str, str] | None = None,
    form: dict[str, str] | None = None,
) -> tuple[int, dict[str, list[str]], bytes]:
    """One request, redirects not followed: status, headers (lower-case names), body."""
    connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
    headers = {}
    if cookies:
        headers["Cookie"] = cookie_header(cookies)
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        got: dict[str, list[str]] = {}
        for name, value in response.getheaders():
            got.setdefault(name.lower(), []).append(value)
        return response.status, got, response.read()
    finally:
        connection.close()


def set_cookies(headers: dict[str, list[str]]) -> dict[str, str]:
    """``{name: raw value}`` of the response's ``Set-Cookie`` headers."""
    found = {}
    for line in headers.get("set-cookie", []):
        name, _, rest = line.partition("=")
        found[name.strip()] = rest.split(";", 1)[0]
    return found


@dataclass
class Case:
    """One request to load on every server, with what its answer must be."""

    key: str
    title: str
    method: str
    path: str
    session: str | None = None  # the session token it sends
    form: dict[str, str] | None = None

    def cookies(self, server: Server) -> dict[str, str]:
        cookies = dict(server.jar)
        if self.session is not None:
            cookies[SESSION] = self.session
        return cookies


def make_cases(keys: list[str], session: str, csrf_token: str) -> list[Case]:
    from benchmarks.http.auth import USER

    form = {"csrfToken": csrf_token, "username": USER["username"], "password": USER["password"]}
    cases = {
        "session": Case("session", "GET /auth/session, JWT", "GET", "/auth/session", session),
        "anon": Case("anon", "GET /auth/session, signed out", "GET", "/auth/session"),
        "csrf": Case("csrf", "GET /auth/csrf", "GET", "/auth/csrf"),
        "providers": Case("providers", "GET /auth/providers", "GET", "/auth/providers"),
        "signin": Case(
            "signin",
            "POST /auth/callback/credentials",
            "POST",
            "/auth/callback/credentials",
            form=form,
        ),
    }
    return [cases[key] for key in keys]


# ------------------------------------------------------------------ checks


class CheckFailed(RuntimeError):
    pass


def decode_session(token: str) -> dict | None:
    from django.conf import settings

    from webauth import jwt

    return jwt.decode(token=token, secret=settings.WEBAUTH["secret"], salt=SESSION)


def expect(condition: bool, server: Server, what: str) -> None:
    if not condition:
        raise CheckFailed(f"{server.name} ({server.url}): {what}")


def check_session_answer(
    server: Server, status: int, headers, body: bytes, what: str, *, image_null: bool = False
) -> None:
    """A 200 with Alice's session as JSON and a refreshed session cookie only.

    No ``image``: neither ``authorize`` returns one. With *image_null*, also
    ``"image": null``, what a token from webauth's sign-in gives (it writes
    ``"picture": null`` where Auth.js leaves the claim out).
    """
    from benchmarks.http.auth import USER

    expect(status == 200, server, f"{what}: status {status}")
    data = json.loads(body)
    expect(
        isinstance(data, dict) and set(data) == {"user", "expires"},
        server,
        f"{what}: body {body[:200]!r}",
    )
    user = {"name": USER["name"], "email": USER["email"]}
    allowed = [user, {**user, "image": None}] if image_null else [user]
    expect(data["user"] in allowed, server, f"{what}: user {data['user']!r}")
    expect(bool(ISO_MS.match(str(data.get("expires")))), server, f"{what}: expires {data!r}")
    cookies = set_cookies(headers)
    expect(set(cookies) == {SESSION}, server, f"{what}: sets cookies {sorted(cookies)}")
    claims = decode_session(cookies[SESSION])
    expect(claims is not None and claims.get("sub") == USER["id"], server, f"{what}: token")


def check_signin_answer(server: Server, status: int, headers, what: str) -> str:
    """A redirect to the origin (the callback URL) setting only a session; returns it."""
    from benchmarks.http.auth import USER

    location = (headers.get("location") or [""])[0]
    expect(status == 302, server, f"{what}: status {status}")
    expect(location.rstrip("/") == server.origin, server, f"{what}: Location {location!r}")
    cookies = set_cookies(headers)
    expect(set(cookies) == {SESSION}, server, f"{what}: sets cookies {sorted(cookies)}")
    claims = decode_session(cookies[SESSION])
    expect(claims is not None and claims.get("sub") == USER["id"], server, f"{what}: token")
    expect(claims.get("name") == USER["name"], server, f"{what}: claims {claims!r}")
    return cookies[SESSION]


def check_case(case: Case, server: Server) -> None:
    """The answer *case* is meant to measure, from *server*."""
    cookies = case.cookies(server)
    status, headers, body = request(server, case.method, case.path, cookies, case.form)
    what = f"{case.method} {case.path}"
    if case.key == "session":
        check_session_answer(server, status, headers, body, what)
    elif case.key == "signin":
        check_signin_answer(server, status, headers, what)
    elif case.key == "anon":
        expect(status == 200, server, f"{what}: status {status}")
        expect(json.loads(body) is None, server, f"{what}: body {body[:200]!r}")
        cookies_set = set_cookies(headers)
        expect(not cookies_set, server, f"{what}: sets cookies {sorted(cookies_set)}")
    else:
        expect(status == 200, server, f"{what}: status {status}")
        data = json.loads(body)
        cookies_set = set_cookies(headers)
        # The browser's CSRF and callback-URL cookies are valid: nothing to set.
        expect(not cookies_set, server, f"{what}: sets cookies {sorted(cookies_set)}")
        if case.key == "csrf":
            token = urllib.parse.unquote(server.jar[CSRF]).split("|")[0]
            expect(data == {"csrfToken": token}, server, f"{what}: body {data!r}")
        else:
            expected = {
                "credentials": {
                    "id": "credentials",
                    "name": "Credentials",
                    "type": "credentials",
                    "signinUrl": f"{server.origin}/auth/signin/credentials",
                    "callbackUrl": f"{server.origin}/auth/callback/credentials",
                }
            }
            expect(data == expected, server, f"{what}: body {data!r}")


def first_visit(server: Server) -> tuple[str, str]:
    """``GET /auth/csrf`` without cookies: the token and both cookies a browser keeps."""
    status, headers, body = request(server, "GET", "/auth/csrf")
    cookies = set_cookies(headers)
    expect(status == 200, server, f"first GET /auth/csrf: status {status}")
    expect(set(cookies) == {CSRF, CALLBACK}, server, f"first visit sets {sorted(cookies)}")
    expected_callback = urllib.parse.quote(server.origin, safe="")
    expect(cookies[CALLBACK] == expected_callback, server, f"callback cookie {cookies}")
    token = json.loads(body)["csrfToken"]
    expect(urllib.parse.unquote(cookies[CSRF]).startswith(token + "|"), server, "CSRF cookie")
    return token, cookies[CSRF]


def prepare(servers: list[Server], keys: list[str]) -> list[Case]:
    """Interoperability checks; the browser cookies of every server; the cases, checked.

    The CSRF cookie Auth.js issues is used on every server (the secret is shared, so
    webauth must accept it without issuing another), and so is the session token
    Auth.js issues at sign-in; each server keeps its own callback-URL cookie (it
    names the server's origin).
    """
    from benchmarks.http.auth import USER

    authjs = next(s for s in servers if s.name == AUTHJS)
    token, csrf_cookie = first_visit(authjs)
    for server in servers:
        first_visit(server)  # every side issues both cookies to a new browser
        server.jar = {CSRF: csrf_cookie, CALLBACK: urllib.parse.quote(server.origin, safe="")}
    form = {"csrfToken": token, "username": USER["username"], "password": USER["password"]}
    tokens = {}
    for server in servers:
        status, headers, _ = request(server, "POST", "/auth/callback/credentials", server.jar, form)
        tokens[server.name] = check_signin_answer(server, status, headers, "sign-in")
        wrong = {**form, "password": USER["password"] + "x"}
        status, headers, _ = request(
            server, "POST", "/auth/callback/credentials", server.jar, wrong
        )
        location = (headers.get("location") or [""])[0]
        expect(
            status == 302 and "error=CredentialsSignin" in location,
            server,
            f"a wrong password gave {status} {location!r}",
        )
    # Each side accepts the sessions the other issues.
    for server in servers:
        for issuer, session in tokens.items():
            cookies = {**server.jar, SESSION: session}
            status, headers, body = request(server, "GET", "/auth/session", cookies)
            check_session_answer(
                server,
                status,
                headers,
                body,
                f"session issued by {issuer}",
                image_null=issuer != AUTHJS,
            )
    cases = make_cases(keys, tokens[AUTHJS], token)
    check_all(cases, servers)
    return cases


def check_all(cases: list[Case], servers: list[Server]) -> None:
    for case in cases:
        for server in servers:
            check_case(case, server)


# --------------------------------------------------------------------- wrk


def lua_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def wrk_script(case: Case, server: Server, directory: Path) -> Path:
    """A wrk Lua script sending *case* as *server*'s browser would."""
    lines = [f"wrk.method = {lua_string(case.method)}"]
    lines.append(f'wrk.headers["Cookie"] = {lua_string(cookie_header(case.cookies(server)))}')
    if case.form is not None:
        lines.append(f"wrk.body = {lua_string(urllib.parse.urlencode(case.form))}")
        lines.append('wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"')
    path = directory / f"{server.name}-{case.key}.lua"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_wrk(
    args: argparse.Namespace, server: Server, case: Case, duration: int, scripts: Path
) -> Result:
    """Load *case* on *server* for *duration* seconds; also its workers' CPU per request."""
    command = [args.wrk, f"--threads={args.threads}", f"--connections={args.connections}"]
    command += [f"--duration={duration}s", "--latency"]
    command += ["--script", str(wrk_script(case, server, scripts)), server.url + case.path]
    processes = server.processes()
    cpu_before = cpu_seconds(processes)
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    cpu = cpu_seconds(processes) - cpu_before
    if len(server.processes()) != len(processes):
        raise RuntimeError(f"{server.name}: a worker process started or ended during a run")
    result = parse_wrk(completed.stdout, SOCKET_ERRORS)
    result.cpu_us = cpu / max(result.requests, 1) * 1e6
    return result


# ------------------------------------------------------------------ rounds

Rounds = list[dict[tuple[str, str], Result]]  # per round: (case, server) -> Result


def ordered(servers: list[Server], number: int) -> list[Server]:
    return servers if number % 2 == 0 else servers[::-1]


def warm_up(args, cases: list[Case], servers: list[Server], scripts: Path) -> None:
    for case in cases:
        for server in servers:
            run_wrk(args, server, case, args.warmup, scripts)


def one_round(args, cases, servers, number: int, scripts: Path) -> dict[tuple[str, str], Result]:
    """Every case on every server, the servers of a case next to each other."""
    results = {}
    for case in cases if number % 2 == 0 else cases[::-1]:
        for server in ordered(servers, number):
            result = run_wrk(args, server, case, args.duration, scripts)
            results[case.key, server.name] = result
            print(
                f"  round {number + 1} {case.key:<9} {server.name:<24} "
                f"{result.rps:8.1f} req/s {result.cpu_us:7.1f} CPU us/req",
                file=sys.stderr,
            )
    return results


# ------------------------------------------------------------------ report


def version_of(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions(args: argparse.Namespace) -> str:
    import django

    node = subprocess.run([args.node, "--version"], capture_output=True, text=True).stdout
    core = json.loads((AUTHJS_DIR / "node_modules/@auth/core/package.json").read_text())
    wrk = subprocess.run([args.wrk, "-v"], capture_output=True, text=True)
    wrk_version = re.search(r"wrk (?:\S+/)?([\d.]+)", wrk.stdout + wrk.stderr)
    packages = {PACKAGES[spec[0]] for spec in map(server_spec, args.servers) if spec}
    packages = sorted(packages | {"gunicorn"})
    python_side = ", ".join(f"{p} {version_of(p)}" for p in packages)
    return (
        f"Python {sys.version.split()[0]}, Django {django.get_version()}, {python_side}; "
        f"Node {node.strip()}, @auth/core {core['version']}; "
        f"wrk {wrk_version.group(1) if wrk_version else '?'}"
    )


def print_setup(args: argparse.Namespace, servers: list[Server], load: float, start: str) -> None:
    print(f"started {start}; " + versions(args))
    print(
        f"{os.cpu_count()} CPUs shared by the servers and wrk; load average before the run "
        f"{load:.2f}; {args.workers} worker processes per server; webauth's database "
        f"{'PostgreSQL over TCP' if args.postgres else 'SQLite'}"
    )
    print(
        f"wrk {args.threads} thread(s), {args.connections} connections, the same for every "
        f"server; {args.repeat} rounds x {args.duration}s per case and server (medians), "
        f"{args.warmup}s warm-up"
    )
    for server in servers:
        side = "Auth.js" if server.name == AUTHJS else "webauth"
        print(f"  {server.name:<24} {side}: {server.description}")
    print()


def median_of(rounds: Rounds, key: tuple[str, str], attribute: str) -> float:
    return statistics.median(getattr(r[key], attribute) for r in rounds)


def print_table(cases: list[Case], servers: list[Server], rounds: Rounds) -> None:
    header = (
        f"{'case':<32} {'server':<24} {'req/s':>8} {'min-max':>11} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10}"
    )
    print(header)
    print("-" * len(header))
    for case in cases:
        for index, server in enumerate(servers):
            key = (case.key, server.name)
            rps = [r[key].rps for r in rounds]
            errors = sum(r[key].errors for r in rounds)
            print(
                f"{case.title if index == 0 else '':<32} {server.name:<24} "
                f"{statistics.median(rps):8.1f} {f'{min(rps):.0f}-{max(rps):.0f}':>11} "
                f"{median_of(rounds, key, 'p50_ms'):7.2f} {median_of(rounds, key, 'p99_ms'):7.2f} "
                f"{median_of(rounds, key, 'cpu_us'):10.1f}"
                + (f"  ({errors} errors)" if errors else "")
            )


def print_ratios(cases: list[Case], servers: list[Server], rounds: Rounds) -> bool:
    """webauth/Auth.js per case and Python server; returns whether every target is met."""
    print(
        f"\nwebauth / Auth.js{'':<15} {'server':<24} {'req/s':>6} {'min-max':>10} "
        f"{'(CPU)':>7}   target"
    )
    all_met = True
    for case in cases:
        for index, server in enumerate(s for s in servers if s.name != AUTHJS):
            ours, theirs = (case.key, server.name), (case.key, AUTHJS)
            speeds = [r[ours].rps / r[theirs].rps for r in rounds]
            speed = statistics.median(speeds)
            cpu = statistics.median(r[theirs].cpu_us / r[ours].cpu_us for r in rounds)
            line = (
                f"{case.title if index == 0 else '':<32} {server.name:<24} "
                f"{speed:6.2f} {f'{min(speeds):.2f}-{max(speeds):.2f}':>10} {f'({cpu:.2f})':>7}"
            )
            target = TARGETS.get(case.key)
            if target is None:
                print(f"{line}   (no target)")
                continue
            met = speed >= target
            all_met = all_met and met
            print(f"{line}   >= {target:<4} {'MET' if met else 'NOT MET'}")
    print(
        "req/s: median (and range) of the per-round ratios of requests/s. (CPU): Auth.js's\n"
        "CPU time per request over webauth's, each the user + system time of the server's\n"
        "processes (main and workers) per request (above 1: webauth spends less)."
    )
    return all_met


# -------------------------------------------------------------------- main


def setup_django(database: str) -> None:
    """Django in this process; the tables of *database* (on PostgreSQL, a fresh schema)."""
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    os.environ["WEBAUTH_BENCH_DATABASE"] = database
    os.environ["WEBAUTH_BENCH_STACK"] = "webauth"
    os.environ["WEBAUTH_BENCH_CREDENTIALS"] = "constant"
    import django
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    if database == "postgres":
        create_schema()
    call_command("migrate", verbosity=0)
    connection.close()


def run(args: argparse.Namespace, database: str, scripts: Path) -> bool:
    load = os.getloadavg()[0]
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with ExitStack() as stack:
        servers = [stack.enter_context(authjs_server(args))]
        for name in args.servers:
            servers.append(stack.enter_context(python_server(args, name, database)))
        cases = prepare(servers, args.case_keys)
        warm_up(args, cases, servers, scripts)
        rounds = [one_round(args, cases, servers, n, scripts) for n in range(args.repeat)]
        check_all(cases, servers)  # still the same answers after the load
    print_setup(args, servers, load, start)
    print_table(cases, servers, rounds)
    met = print_ratios(cases, servers, rounds)
    print(f"load average after the run {os.getloadavg()[0]:.2f}")
    return met


def main() -> int:
    args = parse_args()
    for tool in (args.wrk, args.node):
        if not os.access(tool, os.X_OK):
            print(f"{tool} not found (apt-get install wrk; Node >= 20)", file=sys.stderr)
            return 2
    ensure_node_modules(args)
    with tempfile.TemporaryDirectory(prefix="webauth-bench-authjs-") as tmp:
        database = "postgres" if args.postgres else str(Path(tmp) / "bench.sqlite3")
        setup_django(database)
        args.logs = tmp
        try:
            met = run(args, database, Path(tmp))
        except CheckFailed as exc:
            print(f"check failed: {exc}", file=sys.stderr)
            return 2
        finally:
            if args.postgres:
                drop_schema()
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
