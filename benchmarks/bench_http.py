"""HTTP benchmark: webauth behind gunicorn (or granian), loaded with wrk, against plain Django.

Run from anywhere (Linux; needs ``/usr/bin/wrk``: ``apt-get install wrk``)::

    python benchmarks/bench_http.py                # SQLite file in a temp dir
    python benchmarks/bench_http.py --postgres     # PostgreSQL at 127.0.0.1:5432
    python benchmarks/bench_http.py --duration 20 --repeat 5
    python benchmarks/bench_http.py --server granian   # the server docs/deployment.md recommends
    python benchmarks/bench_http.py --stack lean       # each stack only what its case needs
    python benchmarks/bench_http.py --fast-path        # webauth's servers behind FastPath

In one run it migrates a fresh database, creates a user, a ``django.contrib.sessions``
database session (``sessionid``) and a webauth JWT session cookie for that user,
starts one gunicorn server per middleware stack of ``benchmarks/http/settings.py``
(2 sync workers each by default: one per core of a 2-core machine) and loads each
case with ``wrk --latency``.

Which stacks: with ``--stack installed`` (the default) every case runs the exact
``MIDDLEWARE`` of docs/installation.md (``installed``), and the cases without
webauth the same list without ``AuthMiddleware`` (``installed-django``): what a
project that follows the guide runs. With ``--stack lean`` (the configuration
measured before issue 26) each stack holds only what its way of authenticating
needs, as named below: none at all, ``[AuthMiddleware]``, or
``[SessionMiddleware, AuthenticationMiddleware]``. The cases:

1. ``GET /plain``, no middleware at all: the ceiling;
2. ``GET /auth/session`` with the JWT cookie, ``[AuthMiddleware]``: decode, callbacks,
   re-encode and ``Set-Cookie``;
3. ``GET /whoami`` (``request.user.pk``) with the JWT cookie, ``[AuthMiddleware]``;
4. ``GET /whoami`` with ``sessionid``, ``[SessionMiddleware, AuthenticationMiddleware]``:
   the ``django.contrib.auth`` baseline;
5. ``GET /plain`` without cookies, ``[AuthMiddleware]``: compared with (1), the same
   view and request without the middleware;
6. ``GET /whoami`` with a webauth *database* session (the ORM adapter), ``[AuthMiddleware]``:
   compared with (4), the ``django.contrib.auth`` baseline;
7. ``GET /auth/csrf`` and 8. ``GET /auth/providers``, ``[AuthMiddleware]``, with the
   cookies a browser holds: what webauth's lightest routes cost over (1);

and, as yardsticks, bare views without middleware that do only what the route
must (``benchmarks/http/views.py``), each with the same cookies as its route:
``2f`` (``GET /floor/session``: decode the JWT, answer the session as JSON,
re-encode and set the cookie), ``7f`` (``GET /floor/csrf``: check the CSRF cookie,
answer its token) and ``8f`` (``GET /floor/providers``: answer the providers).
``--cases 1,7,7f`` runs a subset.

Every case runs with the same wrk threads, connections and duration. After a
warm-up of every case, ``--repeat`` rounds run all cases back to back, the order
reversed every other round, with the cases of each ratio adjacent; each ratio is
the median of its per-round ratios, the table shows per-case medians. Requests
carry the cookies a browser would hold by then (for (2) also the CSRF and
callback-URL cookies of its first answer).

Besides wrk's figures it reads the gunicorn workers' CPU time from ``/proc``:
"CPU us/req" is server CPU per request, which other load on the machine
disturbs far less than requests/s, so its ratios are printed alongside.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# benchmarks/loadtest.py, beside this script.
from loadtest import Result, cpu_seconds, create_schema, drop_schema, free_port, parse_wrk  # noqa: E402

SETTINGS_MODULE = "benchmarks.http.settings"
SESSION_COOKIE = "authjs.session-token"
# The cases of each ratio are near each other in this order: (2f) next to (2), then
# (2)/(1), (1) vs (5), (7) and (8), (3)/(4), (4)/(6).
RUN_ORDER = ("2f", "2", "1", "5", "7", "7f", "8", "8f", "3", "4", "6")
#: Per ``--stack``, the settings' stack (benchmarks/http/settings.py) of each role a
#: case plays: no webauth, webauth (JWT), contrib.auth's sessions, webauth's database sessions.
STACK_ROLES = {
    "installed": {
        "bare": "installed-django",
        "webauth": "installed",
        "contrib": "installed-django",
        "webauth-db": "installed-db",
    },
    "lean": {
        "bare": "bare",
        "webauth": "webauth",
        "contrib": "contrib",
        "webauth-db": "webauth-db",
    },
}
#: The stacks with webauth's middleware (``--fast-path`` serves these behind FastPath).
WEBAUTH_STACKS = frozenset({"installed", "installed-db", "webauth", "webauth-db"})


@dataclass
class Case:
    """One request to load: which stack serves it, what it sends and must get back."""

    key: str
    title: str
    stack: str
    path: str
    cookies: dict[str, str] = field(default_factory=dict)
    expect_body: str | None = None
    expect_set_cookies: frozenset[str] = frozenset()
    adopt_cookies: bool = False  # first send the cookies its first answer sets


@dataclass
class Server:
    """A running server: its base URL and its workers' pids."""

    url: str
    workers: list[int]


@dataclass
class Ratio:
    """A target on a ratio of two cases; ``value`` maps a round's results to the figure."""

    label: str
    target: float | None  # None: printed for information, no target
    at_least: bool
    value: Callable[[dict[str, Result]], float]
    cpu_value: Callable[[dict[str, Result]], float]
    unit: str = ""
    cases: tuple[str, ...] = ()  # the cases it compares


def speed_ratio(label: str, faster: str, slower: str, target: float | None) -> Ratio:
    """Requests/s of case *faster* over case *slower* (CPU: the inverse ratio of CPU/request)."""
    return Ratio(
        label,
        target,
        True,
        lambda r: r[faster].rps / r[slower].rps,
        lambda r: r[slower].cpu_us / r[faster].cpu_us,
        cases=(faster, slower),
    )


def overhead(label: str, case: str, target: float | None) -> Ratio:
    """The time per request *case* adds to (1), in percent of (1)'s (CPU: of its CPU time)."""
    return Ratio(
        label,
        target,
        False,
        lambda r: (r["1"].rps / r[case].rps - 1) * 100,
        lambda r: (r[case].cpu_us / r["1"].cpu_us - 1) * 100,
        "%",
        cases=("1", case),
    )


RATIOS = [
    speed_ratio("(2)/(2f) session vs floor", "2", "2f", 0.95),
    speed_ratio("(2)/(1) session vs bare", "2", "1", None),
    speed_ratio("(2f)/(1) floor vs bare", "2f", "1", None),
    speed_ratio("(3)/(4) JWT vs DB session", "3", "4", 1.5),
    overhead("(5) AuthMiddleware overhead", "5", 2.0),
    speed_ratio("(6)/(4) DB session vs contrib", "6", "4", 1.3),
    overhead("(7) /auth/csrf over bare", "7", 10.0),
    overhead("(8) /auth/providers over bare", "8", 10.0),
    overhead("(7f) csrf floor over bare", "7f", None),
    overhead("(8f) providers floor over bare", "8f", None),
    speed_ratio("(7)/(7f) csrf vs its floor", "7", "7f", None),
    speed_ratio("(8)/(8f) providers vs floor", "8", "8f", None),
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per run (10)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up seconds per case (3)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds; medians are shown (5)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (1)")
    parser.add_argument("--connections", type=int, default=4, help="wrk connections (4)")
    parser.add_argument(
        "--workers", type=int, default=2, help="worker processes per stack (2: one per core)"
    )
    parser.add_argument(
        "--server",
        choices=sorted(SERVERS),
        default="gunicorn",
        help="gunicorn sync workers (default), or granian's WSGI interface (docs/deployment.md)",
    )
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL at 127.0.0.1:5432")
    parser.add_argument(
        "--stack",
        choices=sorted(STACK_ROLES),
        default="installed",
        help="installed: docs/installation.md's MIDDLEWARE for every case (default); "
        "lean: each case's stack only what it needs",
    )
    parser.add_argument(
        "--fast-path",
        action="store_true",
        help="serve the stacks with webauth behind webauth.wsgi.FastPath",
    )
    parser.add_argument(
        "--fresh-servers",
        action="store_true",
        help="start new servers (and warm up) for every round",
    )
    parser.add_argument("--wrk", default=shutil.which("wrk") or "/usr/bin/wrk", help="wrk binary")
    parser.add_argument(
        "--cases",
        default=",".join(RUN_ORDER),
        help="the cases to run, comma-separated (all: " + ",".join(RUN_ORDER) + ")",
    )
    return parser.parse_args()


# ------------------------------------------------------------------ database


def setup_django(database: str) -> None:
    """Configure Django in this process with the benchmark settings and *database*."""
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    os.environ["WEBAUTH_BENCH_DATABASE"] = database
    os.environ["WEBAUTH_BENCH_STACK"] = "webauth"
    import django

    django.setup()


def prepare_database(postgres: bool) -> None:
    """Create the tables (in a schema of their own on PostgreSQL)."""
    from django.core.management import call_command

    if postgres:
        create_schema()
    call_command("migrate", verbosity=0)


def create_sessions() -> tuple[str, dict[str, str], dict[str, str], dict[str, str]]:
    """A user, and cookies for a JWT session and a database session of that user.

    Returns ``(user pk, JWT cookies, contrib.sessions cookies, webauth database-session
    cookies)``.
    """
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client, override_settings

    from webauth.test import session_cookie_for

    user = get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="bench-password", first_name="Alice"
    )
    name, value = session_cookie_for(user)
    with override_settings(WEBAUTH={**settings.WEBAUTH, "adapter": DJANGO_ADAPTER}):
        db_name, db_value = session_cookie_for(user)  # a webauth database session
    client = Client()
    client.force_login(user)
    session_id = client.cookies[settings.SESSION_COOKIE_NAME].value
    connection.close()  # the servers are other processes; hold no lock on the database
    return (
        str(user.pk),
        {name: value},
        {settings.SESSION_COOKIE_NAME: session_id},
        {db_name: db_value},
    )


# ------------------------------------------------------------------- servers


def children(pid: int) -> list[int]:
    """Pids of the live child processes of *pid* (from ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def wait_for_workers(port: int, process: subprocess.Popen[bytes], count: int) -> list[int]:
    """Wait until the server listens on *port* with *count* workers; returns their pids."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        workers = children(process.pid)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            workers = []
        if len(workers) == count:
            return workers
        time.sleep(0.1)
    raise RuntimeError(f"the server did not start {count} workers on port {port} within 30 s")


#: How each ``--server`` serves the benchmark site's WSGI application.
SERVERS = {
    "gunicorn": (
        "2 sync workers per stack",
        ("-m", "gunicorn", "--worker-class=sync", "--bind=127.0.0.1:{port}"),
    ),
    # docs/deployment.md's recommendation: one process per core, 2 Python threads.
    "granian": (
        "granian WSGI, 1 runtime thread and 2 blocking threads per worker",
        (
            "-m",
            "granian",
            "--interface=wsgi",
            "--host=127.0.0.1",
            "--port={port}",
            "--runtime-threads=1",
            "--blocking-threads=2",
            "--no-ws",
        ),
    ),
}


@contextmanager
def serve(
    stack: str, database: str, workers: int, server: str, *, fast_path: bool = False
) -> Iterator[Server]:
    """Serve the benchmark site with the middleware *stack* under *server*
    (behind FastPath with *fast_path*, for a stack with webauth)."""
    port = free_port()
    env = {**os.environ, "WEBAUTH_BENCH_STACK": stack, "WEBAUTH_BENCH_DATABASE": database}
    env["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    _, arguments = SERVERS[server]
    command = [
        sys.executable,
        *(part.format(port=port) for part in arguments),
        f"--workers={workers}",
        "--log-level=warning",
        "benchmarks.http.wsgi:"
        + ("fast_application" if fast_path and stack in WEBAUTH_STACKS else "application"),
    ]
    process = subprocess.Popen(command, env=env, cwd=REPO_ROOT)
    try:
        yield Server(f"http://127.0.0.1:{port}", wait_for_workers(port, process, workers))
    finally:
        process.terminate()
        process.wait(timeout=30)


# ---------------------------------------------------------------- requests


def cookie_header(cookies: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in cookies.items())


def fetch(url: str, cookies: dict[str, str]) -> tuple[int, str, SimpleCookie]:
    """One GET: status, body and the cookies the answer sets."""
    request = urllib.request.Request(url)
    if cookies:
        request.add_header("Cookie", cookie_header(cookies))
    with urllib.request.urlopen(request, timeout=10) as response:
        jar: SimpleCookie = SimpleCookie()
        for header in response.headers.get_all("Set-Cookie") or []:
            jar.load(header)
        return response.status, response.read().decode(), jar


def adopt_cookies(case: Case, base_url: str) -> None:
    """Send what a browser would after its first request: the cookies the answer set."""
    _, _, jar = fetch(base_url + case.path, case.cookies)
    for name, morsel in jar.items():
        if morsel.value:
            case.cookies[name] = morsel.coded_value


def verify(case: Case, base_url: str) -> None:
    """Check that the case gets the answer it is meant to measure."""
    status, body, jar = fetch(base_url + case.path, case.cookies)
    problems = []
    if status != 200:
        problems.append(f"status {status}")
    if case.expect_body is not None and body != case.expect_body:
        problems.append(f"body {body[:200]!r}, expected {case.expect_body!r}")
    if set(jar) != case.expect_set_cookies:
        problems.append(f"sets cookies {sorted(jar)}, expected {sorted(case.expect_set_cookies)}")
    if problems:
        raise RuntimeError(f"case {case.key} ({case.path}): " + "; ".join(problems))


# --------------------------------------------------------------------- wrk


def run_wrk(args: argparse.Namespace, server: Server, case: Case, duration: int) -> Result:
    """Load *case* for *duration* seconds; also measures the workers' CPU per request."""
    command = [args.wrk, f"--threads={args.threads}", f"--connections={args.connections}"]
    command += [f"--duration={duration}s", "--latency", server.url + case.path]
    if case.cookies:
        command += ["--header", f"Cookie: {cookie_header(case.cookies)}"]
    cpu_before = cpu_seconds(server.workers)
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    cpu = cpu_seconds(server.workers) - cpu_before
    result = parse_wrk(completed.stdout)
    result.cpu_us = cpu / max(result.requests, 1) * 1e6
    return result


# ------------------------------------------------------------------- cases


DJANGO_ADAPTER = "webauth.adapters.django.DjangoAdapter"


def make_cases(
    user_pk: str,
    jwt: dict[str, str],
    db_session: dict[str, str],
    webauth_db: dict[str, str],
    roles: dict[str, str] = STACK_ROLES["lean"],
) -> list[Case]:
    """The cases, each on the settings' stack *roles* gives its role."""
    cases = _cases(user_pk, jwt, db_session, webauth_db)
    for case in cases:
        case.stack = roles[case.stack]
    return cases


def _cases(
    user_pk: str, jwt: dict[str, str], db_session: dict[str, str], webauth_db: dict[str, str]
) -> list[Case]:
    def whoami(key: str, title: str, stack: str, cookies: dict[str, str]) -> Case:
        """``GET /whoami`` with *cookies*: must answer the user's primary key."""
        return Case(key, title, stack, "/whoami", cookies=dict(cookies), expect_body=user_pk)

    # (2) and (2f) are the same browser's request to two servers: one dict, so the
    # floor also carries the CSRF and callback-URL cookies that (2) adopts; the
    # same for (7) and (7f).
    browser = dict(jwt)
    csrf = dict(jwt)
    return [
        Case("1", "GET /plain, without webauth", "bare", "/plain", expect_body="ok"),
        Case(
            "2",
            "GET /auth/session, JWT cookie",
            "webauth",
            "/auth/session",
            cookies=browser,
            expect_set_cookies=frozenset({SESSION_COOKIE}),
            adopt_cookies=True,
        ),
        Case(
            "2f",
            "floor: decode+encode view, JWT",
            "bare",
            "/floor/session",
            cookies=browser,
            expect_set_cookies=frozenset({SESSION_COOKIE}),
        ),
        whoami("3", "request.user, JWT cookie", "webauth", jwt),
        whoami("4", "request.user, sessionid cookie", "contrib", db_session),
        Case("5", "GET /plain, anonymous", "webauth", "/plain", expect_body="ok"),
        whoami("6", "request.user, webauth DB session", "webauth-db", webauth_db),
        Case("7", "GET /auth/csrf", "webauth", "/auth/csrf", cookies=csrf, adopt_cookies=True),
        Case("7f", "floor: the csrf answer, bare view", "bare", "/floor/csrf", cookies=csrf),
        Case("8", "GET /auth/providers", "webauth", "/auth/providers", cookies=dict(jwt)),
        Case("8f", "floor: the providers answer", "bare", "/floor/providers", cookies=dict(jwt)),
    ]


def measure(
    args: argparse.Namespace, cases: list[Case], servers: dict[str, Server]
) -> list[dict[str, Result]]:
    """Warm every case up, then run ``--repeat`` rounds; one ``{case: Result}`` per round."""
    warm_up(args, cases, servers)
    return [one_round(args, cases, servers, number) for number in range(args.repeat)]


def ordered(cases: list[Case], number: int) -> list[Case]:
    """The cases in :data:`RUN_ORDER`, reversed in every other round."""
    by_key = {case.key: case for case in cases}
    order = [by_key[key] for key in RUN_ORDER if key in by_key]
    return order if number % 2 == 0 else order[::-1]


def warm_up(args: argparse.Namespace, cases: list[Case], servers: dict[str, Server]) -> None:
    for case in ordered(cases, 0):
        run_wrk(args, servers[case.stack], case, args.warmup)


def one_round(
    args: argparse.Namespace, cases: list[Case], servers: dict[str, Server], number: int
) -> dict[str, Result]:
    results = {}
    for case in ordered(cases, number):
        results[case.key] = run_wrk(args, servers[case.stack], case, args.duration)
        progress(number, case, results[case.key])
    return results


@contextmanager
def serve_all(
    args: argparse.Namespace, database: str, cases: list[Case], *, adopt: bool = False
) -> Iterator[dict[str, Server]]:
    """One server per stack the cases use, each case checked against it.

    With ``adopt``, cases marked ``adopt_cookies`` first take the cookies their
    first answer sets (what a browser would hold by then).
    """
    with ExitStack() as stack:
        servers = {
            name: stack.enter_context(
                serve(name, database, args.workers, args.server, fast_path=args.fast_path)
            )
            for name in sorted({case.stack for case in cases})
        }
        for case in cases:
            if adopt and case.adopt_cookies:
                adopt_cookies(case, servers[case.stack].url)
            verify(case, servers[case.stack].url)
        yield servers


def measure_fresh(
    args: argparse.Namespace, database: str, cases: list[Case]
) -> list[dict[str, Result]]:
    """``--fresh-servers``: new servers (and a warm-up) for every round.

    Two server processes of the same code can differ by several percent (memory
    layout, hash seeds); with servers started afresh for each round that luck is
    spread over the rounds instead of biasing a whole run.
    """
    rounds = []
    for number in range(args.repeat):
        # Adopted again: the callback-URL cookie names the new server's port.
        with serve_all(args, database, cases, adopt=True) as servers:
            warm_up(args, cases, servers)
            rounds.append(one_round(args, cases, servers, number))
    return rounds


def progress(number: int, case: Case, result: Result) -> None:
    print(
        f"  round {number + 1} ({case.key}): {result.rps:7.1f} req/s, "
        f"{result.cpu_us:6.1f} CPU us/req",
        file=sys.stderr,
    )


# ------------------------------------------------------------------ report


def print_setup(args: argparse.Namespace, load: float) -> None:
    import django
    from django.conf import settings

    print(
        f"Python {sys.version.split()[0]}, Django {django.get_version()}, "
        f"{os.cpu_count()} CPUs, load average before the run {load:.2f}; "
        f"database {'postgres' if args.postgres else 'sqlite'}; stack {args.stack}"
        + ("; webauth's stacks behind FastPath" if args.fast_path else "")
    )
    print(
        f"{args.server}: {SERVERS[args.server][0].replace('2 ', f'{args.workers} ', 1)}; "
        f"wrk {args.threads} thread(s), "
        f"{args.connections} connections; {args.repeat} rounds x {args.duration}s per case "
        f"(medians), {args.warmup}s warm-up"
        + ("; new servers every round" if args.fresh_servers else "")
    )
    for name in sorted(set(STACK_ROLES[args.stack].values())):
        stack = settings.STACKS[name]
        print(f"  stack {name:<16} {[m.rsplit('.', 1)[-1] for m in stack]}")
    print()


def print_table(cases: list[Case], rounds: list[dict[str, Result]]) -> None:
    """Per case: median req/s with its range over the rounds, p50, p99, CPU per request."""
    header = (
        f"{'case':<37} {'stack':<16} {'req/s':>7} {'min-max':>11} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10}"
    )
    print(header)
    print("-" * len(header))
    for case in cases:
        runs = [results[case.key] for results in rounds]
        rps = [r.rps for r in runs]
        line = (
            f"{f'({case.key})':<4} {case.title:<32} {case.stack:<16} {statistics.median(rps):7.1f} "
            f"{f'{min(rps):.0f}-{max(rps):.0f}':>11} "
            f"{statistics.median(r.p50_ms for r in runs):7.2f} "
            f"{statistics.median(r.p99_ms for r in runs):7.2f} "
            f"{statistics.median(r.cpu_us for r in runs):10.1f}"
        )
        errors = sum(r.errors for r in runs)
        print(line + (f"  ({errors} errors)" if errors else ""))


def print_ratios(rounds: list[dict[str, Result]]) -> bool:
    """Each target on the median per-round ratio; returns whether all are met."""
    print(f"\n{'':<30} {'req/s':>8} {'(CPU)':>9}   target")
    all_met = True
    for ratio in RATIOS:
        if not all(case in rounds[0] for case in ratio.cases):
            continue  # a case left out with --cases
        value = statistics.median(ratio.value(results) for results in rounds)
        cpu_value = statistics.median(ratio.cpu_value(results) for results in rounds)
        figures = f"{ratio.label:<30} {f'{value:.2f}{ratio.unit}':>8} " + (
            f"{f'({cpu_value:.2f}{ratio.unit})':>9}"
        )
        if ratio.target is None:
            print(f"{figures}   (no target)")
            continue
        met = value >= ratio.target if ratio.at_least else value <= ratio.target
        all_met = all_met and met
        target = f"{'>=' if ratio.at_least else '<='} {ratio.target}{ratio.unit}"
        print(f"{figures}   {target:<8} {'MET' if met else 'NOT MET'}")
    print(
        "(5), (7), (8) overhead: the time per request the case adds to (1). (CPU): the same\n"
        "from the server workers' CPU time per request (not counting a PostgreSQL server).\n"
        "(2f), (7f), (8f): bare views doing only what the route must (for (2f): decode, JSON,\n"
        "re-encode, Set-Cookie), so (2)/(2f) is how close the route comes to what the work allows."
    )
    return all_met


# -------------------------------------------------------------------- main


def run(args: argparse.Namespace, database: str) -> bool:
    """Prepare, serve, load and report; returns whether every target is met."""
    load = os.getloadavg()[0]
    prepare_database(args.postgres)
    user_pk, jwt, db_session, webauth_db = create_sessions()
    chosen = set(args.cases.split(","))
    roles = STACK_ROLES[args.stack]
    cases = [c for c in make_cases(user_pk, jwt, db_session, webauth_db, roles) if c.key in chosen]
    rounds: list[dict[str, Result]] | None = None
    with serve_all(args, database, cases, adopt=True) as servers:
        if not args.fresh_servers:
            rounds = measure(args, cases, servers)
    if rounds is None:
        rounds = measure_fresh(args, database, cases)
    print_setup(args, load)
    print_table(cases, rounds)
    met = print_ratios(rounds)
    print(f"load average after the run {os.getloadavg()[0]:.2f}")
    return met


def main() -> int:
    args = parse_args()
    if not os.access(args.wrk, os.X_OK):
        print(f"wrk not found at {args.wrk}: apt-get install wrk", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="webauth-bench-") as tmp:
        database = "postgres" if args.postgres else str(Path(tmp) / "bench.sqlite3")
        setup_django(database)
        try:
            met = run(args, database)
        finally:
            if args.postgres:
                drop_schema()
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
