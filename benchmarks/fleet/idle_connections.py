"""How many PostgreSQL connections the fleet holds across idle spells (docs/deployment.md).

Serves the fleet site as ``benchmarks/bench_fleet.py`` does (granian, 4 workers x 2
blocking threads, 100 accounts) and counts the connections in ``pg_stat_activity``
after a burst of 400 signed-in ``GET /whoami`` (16 at a time), then after each
of ``--cycles`` idle spells of ``--idle`` seconds, each followed by a burst.
granian ends a blocking thread that has been idle for 30 s
(``--blocking-threads-idle-timeout``) and starts a new one when work comes.

    python benchmarks/fleet/idle_connections.py --db-conn persistent
    python benchmarks/fleet/idle_connections.py --db-conn pool

About 4 minutes, nearly all of it idle.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent))

import bench_fleet  # noqa: E402
import requests  # noqa: E402

ACCOUNTS = 100


def burst(url: str) -> None:
    from benchmarks.fleet import shared

    def one(i: int) -> None:
        token = shared.session_token("browser", i % ACCOUNTS)
        response = requests.get(
            f"{url}/whoami", cookies={"authjs.session-token": token}, timeout=30
        )
        response.raise_for_status()

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(400)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db-conn", choices=("persistent", "pool"), default="persistent")
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--idle", type=int, default=35, help="seconds of each idle spell")
    args = parser.parse_args()
    run = argparse.Namespace(
        server="granian", workers=4, threads=2, db_conn=args.db_conn, accounts=ACCOUNTS
    )
    env = bench_fleet.configure(run)
    bench_fleet.prepare_database(ACCOUNTS)
    print(
        f"granian {bench_fleet.package_version('granian')}, 4 workers x 2 blocking threads, "
        f"--db-conn {args.db_conn}; connections in pg_stat_activity:"
    )
    tmp = Path(tempfile.mkdtemp(prefix="fleet-idle-"))
    try:
        with bench_fleet.serve(run, env, tmp) as fleet:
            burst(fleet.url)
            counts = [len(bench_fleet.fleet_backends())]
            print(f"  after the first burst: {counts[-1]}", flush=True)
            for cycle in range(1, args.cycles + 1):
                time.sleep(args.idle)
                idle = len(bench_fleet.fleet_backends())
                burst(fleet.url)
                counts.append(len(bench_fleet.fleet_backends()))
                print(
                    f"  spell {cycle}: {idle} after {args.idle} s idle, {counts[-1]} after a burst",
                    flush=True,
                )
    finally:
        bench_fleet.drop_schema()
        bench_fleet.delete_run_keys()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"connections after each burst: {', '.join(map(str, counts))}")


if __name__ == "__main__":
    os.environ.setdefault("WEBAUTH_FLEET_ACCOUNTS", str(ACCOUNTS))
    main()
