"""scripts/_venv.sh and scripts/example: what a first run says, and a port that is taken.

The install runs against a stand-in ``python`` whose ``-m venv`` makes a ``.venv``
whose ``pip`` prints what pip prints (or fails as pip fails), so these tests need
no network and take a second; the real install is what ``./scripts/test`` does.
"""

import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What ``pip install -e .[dev]`` prints (shortened): the noise the scripts hide.
PIP_OUTPUT = """\
Obtaining file:///src/webauth
  Installing build dependencies: started
  Installing build dependencies: finished with status 'done'
Collecting django>=5.2 (from django-webauth==0.1.0)
  Downloading django-5.2.8-py3-none-any.whl.metadata (4.1 kB)
Collecting authlib>=1.3 (from django-webauth==0.1.0)
  Using cached authlib-1.6.5-py2.py3-none-any.whl.metadata (9.8 kB)
Collecting asgiref>=3.8.1 (from django>=5.2->django-webauth==0.1.0)
  Downloading asgiref-3.10.0-py3-none-any.whl.metadata (9.3 kB)
Building wheels for collected packages: django-webauth
  Building editable for django-webauth (pyproject.toml): started
Installing collected packages: asgiref, django, authlib, django-webauth
Successfully installed asgiref-3.10.0 authlib-1.6.5 django-5.2.8 django-webauth-0.1.0
"""

#: The stand-in for python3: ``-m venv DIR`` makes DIR/bin/python, a pip that
#: logs its arguments and prints PIP_OUTPUT (or an error, with FAKE_PIP_FAIL set).
FAKE_PYTHON = textwrap.dedent(
    """\
    #!/usr/bin/env bash
    if [ "$1 $2" = "-m venv" ]; then
        mkdir -p "$3/bin"
        cp "$0" "$3/bin/python"
        exit 0
    fi
    echo "$*" >>"$(dirname "$0")/../pip-calls"
    case "$*" in
    *--upgrade\\ pip*) echo "Requirement already satisfied: pip in ./.venv" ;;
    *)
        if [ -n "${FAKE_PIP_FAIL:-}" ]; then
            echo "Collecting nosuchpackage>=1"
            echo "ERROR: Could not find a version that satisfies the requirement nosuchpackage" >&2
            exit 1
        fi
        cat "$FAKE_PIP_OUTPUT" ;;
    esac
    """
)


@pytest.fixture
def fake(tmp_path):
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON)
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    output = tmp_path / "pip-output.txt"
    output.write_text(PIP_OUTPUT)
    return {"PYTHON": str(python), "FAKE_PIP_OUTPUT": str(output)}


def venv_sh(venv, fake, **env):
    """Source scripts/_venv.sh as the scripts do; print which python is then first."""
    return subprocess.run(
        ["bash", "-c", 'source scripts/_venv.sh; echo "python: $(command -v python)"'],
        cwd=ROOT,
        # The scripts' own settings from the caller's environment (.ci/run
        # exports WEBAUTH_EXTRAS) are not this test's: each test says its own.
        env={
            **{k: v for k, v in os.environ.items() if k != "WEBAUTH_EXTRAS"},
            **fake,
            "WEBAUTH_VENV": str(venv),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_first_run_says_what_it_does_how_long_and_when_it_is_done(tmp_path, fake):
    venv = tmp_path / "venv"
    first = venv_sh(venv, fake)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    assert lines == [
        f"Creating {venv} and installing webauth and its test tools "
        "(first run only, about 1-2 minutes)...",
        "  updating pip",
        "  fetching packages ....",  # a dot per package pip collects
        "  installing 4 packages (the longest step)...",
        lines[-1],
    ]
    assert lines[-1].startswith(f"Done: {venv} is ready (") and lines[-1].endswith(" s).")
    assert first.stdout == f"python: {venv}/bin/python\n"
    # pip's own output is kept in the log, not shown.
    assert (venv / "pip-install.log").read_text().count("Downloading") == 2
    assert "Downloading" not in first.stderr
    assert "-e " + str(ROOT) + "[dev]" in (venv / "pip-calls").read_text()

    again = venv_sh(venv, fake)  # installed: silent
    assert again.returncode == 0 and again.stderr == ""
    assert (venv / "pip-calls").read_text().count("[dev]") == 1


def test_a_new_extra_says_it_updates_the_venv(tmp_path, fake):
    venv = tmp_path / "venv"
    assert venv_sh(venv, fake).returncode == 0
    more = venv_sh(venv, fake, WEBAUTH_EXTRAS="dev,mariadb")
    assert more.returncode == 0, more.stderr
    assert more.stderr.splitlines()[0] == (
        f"Adding the extras dev,mariadb to {venv} (up to a minute)..."
    )
    assert "[dev,mariadb]" in (venv / "pip-calls").read_text()


def test_a_failing_install_shows_pips_error_and_stops(tmp_path, fake):
    venv = tmp_path / "venv"
    failed = venv_sh(venv, fake, FAKE_PIP_FAIL="1")
    assert failed.returncode == 1
    assert "python:" not in failed.stdout  # the calling script stops too
    assert "pip failed. The end of its output:" in failed.stderr
    assert "Could not find a version that satisfies the requirement nosuchpackage" in failed.stderr
    assert f"The whole output is in {venv}/pip-install.log" in failed.stderr
    assert not (venv / ".webauth-installed").exists()  # the next run tries again


def example(venv, port):
    """scripts/example with a real python (its port check runs one). Were the check to
    let it through, pip gets no index: the install fails at once, offline."""
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(venv.parent / "no-wheels")}
    return subprocess.run(
        ["scripts/example"],
        cwd=ROOT,
        env={
            **os.environ,
            **offline,
            "PYTHON": sys.executable,
            "WEBAUTH_VENV": str(venv),
            "PORT": port,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_example_checks_the_port_before_anything_else(tmp_path):
    """A taken port: one line naming a free one, before any install or welcome banner."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        venv = tmp_path / "venv"
        result = example(venv, str(port))
    assert result.returncode != 0
    line = result.stderr.strip()
    assert line.startswith(f"Port {port} is in use; run PORT=")
    suggested = int(line.split("PORT=")[1].split()[0])
    assert suggested > port and line.endswith(" ./scripts/example")
    assert result.stdout == ""  # no banner, no demo logins
    assert not venv.exists()  # and no install


@pytest.mark.parametrize("port", ["abc", "0", "70000"])
def test_example_refuses_a_port_that_is_not_one(tmp_path, port):
    result = example(tmp_path / "venv", port)
    assert result.returncode != 0
    said = result.stderr.strip()
    assert said == f"PORT={port} is not a port number; run PORT=8001 ./scripts/example"
    assert not (tmp_path / "venv").exists()
