"""Instructions per request, counted by Valgrind: a cost figure the machine's load cannot move.

Run from anywhere (needs ``valgrind``: ``apt-get install valgrind``)::

    python benchmarks/bench_instructions.py                  # about 3 minutes
    python benchmarks/bench_instructions.py --number 400
    python benchmarks/bench_instructions.py --repo ../other-checkout   # the same cases there

Timing figures on a shared two-core machine move by several percent with
whatever else runs; the number of instructions a request executes does not.
This script runs the cases of ``bench_inprocess.py`` (the benchmark site through
Django's ``WSGIHandler``, no server) inside Valgrind's callgrind tool and counts
the instructions of ``--number`` requests of each case, after a warm-up, so
that Django's start-up and the first request's imports are left out. Each case
is bracketed by a call to ``os.getpgrp()``, which nothing else in the process
calls, and callgrind is told to write its counters before each such call
(``--dump-before=getpgrp``): the counters of one dump are exactly the requests
of one case.

With ``--repo`` the cases run against another checkout's ``webauth`` (and its
benchmark site), so two versions can be compared in one sitting; the counts
of the same code are the same from run to run, to a few hundredths of a percent.
Instructions are not time: a cache miss costs many, a cheap instruction little.
They are a faithful guide to how much work the code does, which is what a
change to webauth moves.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = ("plain", "floor", "session", "whoami", "csrf", "providers")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=200, help="requests per case (200)")
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="checkout to measure")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def child(number: int) -> int:
    """Inside Valgrind: set up, warm up, then run each case between two dumps."""
    # The measured checkout's benchmarks (and through them its webauth) come
    # first: Python put this script's own directory at the front of sys.path.
    checkout = Path(os.environ["WEBAUTH_BENCH_CHECKOUT"])
    sys.path.insert(0, str(checkout / "benchmarks"))
    import bench_inprocess as bench

    import webauth

    if not Path(webauth.__file__).resolve().is_relative_to(checkout):
        raise SystemExit(f"measuring {webauth.__file__}, not the code of {checkout}")

    with tempfile.TemporaryDirectory(prefix="webauth-instructions-") as tmp:
        bench.setup(str(Path(tmp) / "bench.sqlite3"))
        call = bench.Caller()
        cases = bench.build_cases(call)
        for label, (env, expected) in cases.items():
            bench.check(call, label, env, expected)
            for _ in range(20):
                call(env)
        for label in CASES:
            env = cases[label][0]
            os.getpgrp()  # dump: everything before this case
            for _ in range(number):
                call(env)
        os.getpgrp()  # dump: the last case
    return 0


def webauth_of(repo: Path) -> str:
    """The commit of *repo*, so that the output says which code it measured."""
    result = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return f"commit {result.stdout.strip()}" if result.returncode == 0 else "not a git checkout"


def totals(directory: Path) -> list[int]:
    """The ``totals:`` of each numbered dump, in order."""
    found = []
    for path in directory.iterdir():
        match = re.fullmatch(r"cg\.out\.(\d+)", path.name)
        if match:
            text = path.read_text()
            total = re.search(r"^totals:\s*(\d+)", text, re.M)
            if total:
                found.append((int(match.group(1)), int(total.group(1))))
    return [count for _, count in sorted(found)]


def main() -> int:
    args = parse_args()
    if args.child:
        return child(args.number)
    repo = args.repo.resolve()
    if not (repo / "benchmarks" / "bench_inprocess.py").exists():
        raise SystemExit(f"{repo} has no benchmarks/bench_inprocess.py")
    with tempfile.TemporaryDirectory(prefix="webauth-callgrind-") as tmp:
        out = Path(tmp)
        command = [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=getpgrp",
            f"--callgrind-out-file={out / 'cg.out'}",
            sys.executable,
            str(Path(__file__)),
            "--child",
            "--number",
            str(args.number),
        ]
        env = {**os.environ, "WEBAUTH_BENCH_CHECKOUT": str(repo)}
        result = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stdout + result.stderr)
            return result.returncode
        counts = totals(out)
    # Dump 1 is the set-up and warm-up; dumps 2.. are the cases in order.
    per_case = counts[1 : 1 + len(CASES)]
    if len(per_case) != len(CASES):
        raise SystemExit(f"expected {len(CASES) + 1} dumps, found {len(counts)}")
    per_request = {label: n / args.number for label, n in zip(CASES, per_case, strict=True)}
    import django

    print(
        f"Python {sys.version.split()[0]}, Django {django.get_version()}; callgrind, "
        f"{args.number} requests per case; checkout {repo} ({webauth_of(repo)})"
    )
    print(f"{'case':<10} {'instructions/request':>21}")
    for label, value in per_request.items():
        print(f"{label:<10} {value:21,.0f}")
    plain = per_request["plain"]
    print()
    print(f"session / floor:   {per_request['session'] / per_request['floor']:.3f}")
    for label in ("session", "whoami", "csrf", "providers"):
        over = per_request[label] - plain
        print(f"{label + ' - plain:':<18} {over:11,.0f} ({over / plain:.0%} of plain)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
