"""Write tests/durations.json: how long each test module took, from a JUnit XML report.

The suite runs one pytest-xdist worker per core, each test module kept whole on
one worker (``--dist loadfile``: its live server and browser start once). xdist
hands the modules out in collection order, so a long module collected late runs
alone at the end while the other core idles. ``tests/conftest.py`` collects the
modules longest first (the classic longest-processing-time rule), by the seconds
in ``tests/durations.json``; a module missing from the file counts as short.

Refresh the file after adding or much changing a slow module::

    ./scripts/test --junitxml=/tmp/suite.xml
    python scripts/test_durations.py /tmp/suite.xml

The figures only order the modules: a stale file makes the suite slower, never wrong.
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "durations.json"


def module_of(case: ET.Element) -> str:
    """``tests/test_x.py`` from a test case's ``classname`` (``tests.test_x.TestY``)."""
    parts = case.get("classname", "").split(".")
    for end in range(len(parts), 0, -1):
        path = ROOT.joinpath(*parts[:end]).with_suffix(".py")
        if path.is_file():
            return path.relative_to(ROOT).as_posix()
    return ""


def durations(report: Path) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    # The report is the one our own pytest run wrote, not data from outside.
    for case in ET.parse(report).getroot().iter("testcase"):  # noqa: S314
        module = module_of(case)
        if module:
            seconds[module] += float(case.get("time") or 0)
    return {module: round(total, 1) for module, total in sorted(seconds.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a JUnit XML report of the whole suite")
    args = parser.parse_args()
    found = durations(args.report)
    OUT.write_text(json.dumps(found, indent=1) + "\n")
    slowest = sorted(found.items(), key=lambda item: -item[1])[:5]
    print(f"{OUT.relative_to(ROOT)}: {len(found)} modules; slowest:")
    for module, total in slowest:
        print(f"  {total:7.1f} s  {module}")


if __name__ == "__main__":
    main()
