"""The README's quick start, done as a newcomer does it, with its steps read from README.md.

Every code block of the README's "Quick start" section is a step, in order:

- a ``sh`` block: each line is a command, run in the shell in the project's
  folder (``cd`` carries over, ``export`` sets the environment of the next
  commands). Three are done the way a test can: ``pip install django-webauth``
  installs the wheel built from this checkout, ``createsuperuser`` gets
  ``--noinput`` and its user from the environment (Django's own way to script
  it), and ``runserver`` serves on a free port without the autoreloader, in the
  background;
- a ``python`` block: its first line names the file (``# mysite/views.py``).
  A new file is written as it is. Into an existing one (what ``startproject``
  made) the block goes as a person applies it: its imports are added (or merged
  into the file's import from the same module), an assignment replaces the
  file's assignment of that name, and in a list ``...`` stands for the entries
  already there: new entries go after the entry that precedes them in the block,
  or at that end of the list. Anything else is added at the end.

A block this test cannot apply fails it, so the README cannot grow a step that
is not run here. Then, over real HTTP as a browser does: the dashboard sends a
visitor to the sign-in page, its form signs the new user in, and they land on a
page that shows them (not a 404), from the dashboard's redirect and from
``/auth/signin`` opened on its own; signed out, the dashboard sends them back to
the sign-in page.

How webauth is installed: the checkout's package files are copied to a
temporary folder (so no ``build/`` lands in the checkout) and built into a wheel
by pip with its usual build isolation, which gets the setuptools that
``pyproject.toml`` names from pip's index or cache: the suite's venv has
setuptools 65, too old for the project's metadata (an SPDX ``license`` string),
so ``--no-build-isolation`` cannot build it. The wheel is installed with
``--no-deps`` into a fresh ``python -m venv --without-pip`` (by the suite's pip,
``pip --python``), so the project imports webauth as ``pip install`` leaves it:
its templates, static files and catalogs only if the wheel ships them. The
dependencies are not downloaded: the ones the wheel declares (``Requires-Dist``,
and theirs, markers evaluated) are linked from the suite's venv into the new
one, with their console scripts (``django-admin``), so a dependency that
``pyproject.toml`` forgets to declare fails here too when the quick start's
path imports it. About 10 seconds.

It skips only when pip cannot get setuptools for that build (no index it can
reach and nothing cached): the build backend comes from there, as for anyone
who installs webauth from source, and this test cannot provide it.
"""

from __future__ import annotations

import ast
import email.parser
import importlib.metadata
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests
from packaging.requirements import Requirement

from .support.forms import Forms
from .support.helpers import wait_until_serving

# Subprocesses on their own SQLite file in a temporary folder, never the suite's database.
pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
USERNAME, PASSWORD, EMAIL = "admin", "quick-start-Pa55word", "admin@example.com"


# -- the README's steps ----------------------------------------------------------------------


@dataclass
class Block:
    """A fenced code block: its language, its text, and the README line it starts on."""

    language: str
    text: str
    line: int

    def where(self) -> str:
        return f"README.md line {self.line} ({self.language} block)"


def quickstart_blocks(markdown: str) -> list[Block]:
    """The code blocks between ``## Quick start`` and the next ``## `` heading, in order."""
    match = re.search(r"^## Quick start\n(.*?)(?=^## )", markdown, re.M | re.S)
    assert match, "README.md has no '## Quick start' section"
    first_line = markdown[: match.start(1)].count("\n") + 1
    section = match.group(1)
    return [
        Block(m.group(1), m.group(2), first_line + section[: m.start()].count("\n"))
        for m in re.finditer(r"^```(\w*)\n(.*?)^```$", section, re.M | re.S)
    ]


# -- applying a python block to a file --------------------------------------------------------


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _source(text: str, node: ast.AST) -> str:
    segment = ast.get_source_segment(text, node)
    assert segment is not None
    return segment


def _assigned_name(node: ast.stmt) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    return None


def merge_list(
    name: str, existing: ast.List, existing_text: str, snippet: ast.List, snippet_text: str
) -> str:
    """``name = [...]``: the file's entries with the block's merged in (``...`` = the file's)."""
    entries = [(ast.dump(e), _source(existing_text, e)) for e in existing.elts]
    cursor: int | None = 0  # where the next new entry goes; None: at the end
    for element in snippet.elts:
        if _is_ellipsis(element):
            cursor = None
            continue
        key = ast.dump(element)
        found = [i for i, (k, _) in enumerate(entries) if k == key]
        if found:
            assert cursor is None or found[0] >= cursor, (
                f"{name}: the README puts {_source(snippet_text, element)} after an entry "
                "that the file has after it"
            )
            cursor = found[0] + 1
            continue
        at = len(entries) if cursor is None else cursor
        entries.insert(at, (key, _source(snippet_text, element)))
        cursor = at + 1
    body = "".join(f"    {text},\n" for _, text in entries)
    return f"{name} = [\n{body}]\n"


def _leading_comments(lines: list[str], node: ast.stmt) -> str:
    """The comment lines right above *node* (kept with a statement that moves)."""
    start = node.lineno - 1
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return "".join(lines[start : node.lineno - 1])


def apply_python(existing: str, snippet: str, where: str) -> str:
    """*snippet* applied to the file *existing*, as described in the module's docstring."""
    tree = ast.parse(existing)
    snippet_tree = ast.parse(snippet)
    snippet_lines = snippet.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (first line, last line, new text), 1-based
    new_imports: list[str] = []
    appended: list[str] = []
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    for node in snippet_tree.body:
        text = _source(snippet, node)
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any(ast.dump(i) == ast.dump(node) for i in imports):
                continue
            same = next(
                (
                    i
                    for i in imports
                    if isinstance(node, ast.ImportFrom)
                    and isinstance(i, ast.ImportFrom)
                    and (i.module, i.level) == (node.module, node.level)
                ),
                None,
            )
            if same is not None:
                assert isinstance(same, ast.ImportFrom) and isinstance(node, ast.ImportFrom)
                names = [a.name for a in node.names]
                names += [a.name for a in same.names if a.name not in names]
                module = "." * node.level + (node.module or "")
                edits.append(
                    (
                        same.lineno,
                        same.end_lineno or same.lineno,
                        f"from {module} import " + ", ".join(sorted(names)) + "\n",
                    )
                )
            else:
                new_imports.append(text + "\n")
            continue
        name = _assigned_name(node)
        current = next((n for n in tree.body if name and _assigned_name(n) == name), None)
        if (
            name
            and isinstance(node, ast.Assign)
            and isinstance(node.value, ast.List)
            and any(_is_ellipsis(e) for e in node.value.elts)
        ):
            assert current is not None and isinstance(current, ast.Assign), (
                f"{where}: `...` stands for the entries of {name}, which the file lacks"
            )
            assert isinstance(current.value, ast.List), f"{where}: {name} is no list"
            text = merge_list(name, current.value, existing, node.value, snippet).rstrip()
        assert "..." not in text.replace('"..."', ""), f"{where}: cannot apply `...` in {text}"
        if current is not None:
            edits.append((current.lineno, current.end_lineno or current.lineno, text + "\n"))
        else:
            appended.append("\n" + _leading_comments(snippet_lines, node) + text + "\n")
    if new_imports:
        after = imports[-1].end_lineno if imports else 0
        edits.append((after + 1, after, "".join(new_imports)))  # an insertion
    lines = existing.splitlines(keepends=True)
    for first, last, text in sorted(edits, key=lambda e: e[0], reverse=True):
        lines[first - 1 : last] = [text]
    return "".join(lines) + "".join(appended)


def test_apply_python_merges_as_a_person_does():
    """The rules above, on a settings module like startproject's."""
    existing = (
        "from pathlib import Path\n\n"
        "INSTALLED_APPS = [\n    'django.contrib.admin',\n    'django.contrib.auth',\n]\n"
        "MIDDLEWARE = [\n    'a.Security',\n    'a.Authentication',\n    'a.Messages',\n]\n"
        "DEBUG = True\n"
    )
    snippet = (
        "# mysite/settings.py\nimport os\nfrom pathlib import Path, PurePath\n\n"
        'INSTALLED_APPS = [..., "webauth"]\n'
        'MIDDLEWARE = [..., "a.Authentication", "webauth.Auth", ...]\n'
        "DEBUG = False\n"
        "# the secret\n"
        'WEBAUTH = {"secret": os.environ.get("AUTH_SECRET")}\n'
    )
    merged = apply_python(existing, snippet, "test")
    namespace: dict = {}
    exec(compile(merged, "merged", "exec"), namespace)
    assert namespace["INSTALLED_APPS"] == ["django.contrib.admin", "django.contrib.auth", "webauth"]
    assert namespace["MIDDLEWARE"] == [
        "a.Security",
        "a.Authentication",
        "webauth.Auth",
        "a.Messages",
    ]
    assert namespace["DEBUG"] is False and namespace["PurePath"]
    assert merged.count("DEBUG") == 1 and merged.index("import os") < merged.index("INSTALLED")
    assert "# the secret\nWEBAUTH" in merged
    with pytest.raises(AssertionError, match="the file lacks"):
        apply_python("X = 1\n", "TEMPLATES = [...]\n", "test")
    with pytest.raises(AssertionError, match="after an entry"):
        apply_python(existing, 'MIDDLEWARE = ["a.Messages", "a.Security", ...]\n', "test")


# -- installing webauth from the checkout -------------------------------------------------------


def build_wheel(tmp_path: Path) -> Path:
    """The checkout's package built into a wheel by pip, in a copy (no build/ in the checkout)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "webauth",
        source / "webauth",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "wheel",
            "--no-deps",
            "--retries",
            "1",
            "--progress-bar",
            "off",
            "-w",
            str(tmp_path / "wheels"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = built.stdout + built.stderr
    if built.returncode != 0:
        unreachable = (
            "No matching distribution found for setuptools",
            "Failed to establish a new connection",
            "Temporary failure in name resolution",
            "Network is unreachable",
        )
        said = [line.strip() for line in output.splitlines() if any(s in line for s in unreachable)]
        if said:
            pytest.skip(
                "pip cannot get setuptools, the build backend pyproject.toml names, from its "
                f"index (PyPI) or cache to build webauth's wheel: {said[-1][:200]}"
            )
        raise AssertionError("building the wheel failed:\n" + output)
    [wheel] = (tmp_path / "wheels").glob("django_webauth-*.whl")
    return wheel


def declared_requirements(wheel: Path) -> list[Requirement]:
    """The wheel's ``Requires-Dist`` that apply without extras, here."""
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.parser.Parser().parsestr(archive.read(name).decode())
    requirements = [Requirement(r) for r in metadata.get_all("Requires-Dist") or []]
    return [r for r in requirements if r.marker is None or r.marker.evaluate({"extra": ""})]


def dependency_closure(requirements: list[Requirement]) -> list[importlib.metadata.Distribution]:
    """The installed distributions that *requirements* need, theirs included (extras followed)."""
    seen: dict[str, importlib.metadata.Distribution] = {}
    pending = list(requirements)
    while pending:
        requirement = pending.pop()
        try:
            dist = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            raise AssertionError(f"{requirement} is declared but not in the suite's venv") from None
        assert requirement.specifier.contains(dist.version, prereleases=True), (
            f"{requirement} is declared, the suite's venv has {dist.version}"
        )
        key = f"{dist.metadata['Name'].lower()}[{','.join(sorted(requirement.extras))}]"
        if key in seen:
            continue
        seen[key] = dist
        for text in dist.requires or []:
            needed = Requirement(text)
            extras = requirement.extras or {""}
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                pending.append(needed)
    return list({d.metadata["Name"].lower(): d for d in seen.values()}.values())


def link_distribution(dist: importlib.metadata.Distribution, venv: Path) -> None:
    """*dist* made importable in *venv* (its top-level files linked), with its console scripts."""
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    origin = Path(str(dist.locate_file("")))
    files = [Path(str(f)) for f in dist.files or [] if not str(f).startswith("..")]
    tops = {f.parts[0] for f in files} - {"__pycache__"}
    for top in sorted(tops):
        target = site / top
        if (origin / top).exists() and not target.exists():
            target.symlink_to(origin / top)
    for entry in dist.entry_points.select(group="console_scripts"):
        module, _, attribute = entry.value.partition(":")
        script = venv / "bin" / entry.name
        script.write_text(
            f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom {module} import {attribute}\n"
            f"sys.exit({attribute}())\n"
        )
        script.chmod(0o755)


@pytest.fixture(scope="module")
def newcomer_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with webauth installed from the checkout (see the module's docstring)."""
    tmp_path = tmp_path_factory.mktemp("quickstart-venv")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    wheel = build_wheel(tmp_path)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(wheel),
        ],
        check=True,
        timeout=120,
    )
    for dist in dependency_closure(declared_requirements(wheel)):
        link_distribution(dist, venv)
    return venv


# -- doing the steps ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Newcomer:
    """A shell in the new venv: its folder, its environment, the server it started."""

    venv: Path
    cwd: Path
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    server: subprocess.Popen | None = None
    base: str = ""

    def __post_init__(self) -> None:
        suite_bin = str(Path(sys.executable).parent)
        path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p != suite_bin]
        self.env = {
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("AUTH_", "DJANGO_", "PYTHON", "VIRTUAL_ENV", "PIP_"))
            },
            "PATH": os.pathsep.join([str(self.venv / "bin"), *path]),
            "VIRTUAL_ENV": str(self.venv),
        }

    def shell(self, command: str, *, where: str) -> str:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{where}: `{command}` failed:\n{done.stdout}{done.stderr}"
        return done.stdout

    def run_line(self, line: str, *, where: str) -> None:
        words = shlex.split(line, comments=True)
        if not words:
            return
        if words == ["pip", "install", "django-webauth"]:
            return  # done by the newcomer_venv fixture: the checkout's wheel
        if words[0] == "cd" and len(words) == 2:
            self.cwd = self.cwd / words[1]
            assert self.cwd.is_dir(), f"{where}: no folder {self.cwd}"
            return
        if words[0] == "export":
            [name] = re.findall(r"^export (\w+)=", line)
            self.env[name] = self.shell(f'{line}\nprintf %s "${name}"', where=where)
            assert self.env[name], f"{where}: {name} is empty"
            return
        if words[-1] == "createsuperuser":
            self.env |= {
                "DJANGO_SUPERUSER_USERNAME": USERNAME,
                "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
                "DJANGO_SUPERUSER_EMAIL": EMAIL,
            }
            self.shell(line + " --noinput", where=where)
            return
        if words[-1] == "runserver":
            port = free_port()
            with open(self.log, "w") as output:
                self.server = subprocess.Popen(
                    [*words, "--noreload", f"localhost:{port}"],
                    cwd=self.cwd,
                    env=self.env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
            self.base = f"http://localhost:{port}"
            wait_until_serving(self.base, self.server, self.log)
            return
        self.shell(line, where=where)

    def write(self, block: Block) -> None:
        first, _, body = block.text.partition("\n")
        match = re.fullmatch(r"# (\S+\.py)", first.strip())
        assert match, f"{block.where()}: the first line does not name the file (# mysite/x.py)"
        path = self.cwd / match.group(1)
        assert path.parent.is_dir(), f"{block.where()}: no folder for {match.group(1)}"
        if path.exists():
            path.write_text(apply_python(path.read_text(), body, block.where()))
        else:
            assert "..." not in body, f"{block.where()}: `...` in a new file"
            path.write_text(body)

    def do(self, block: Block) -> None:
        if block.language == "sh":
            for offset, line in enumerate(block.text.splitlines(), 1):
                self.run_line(line, where=f"README.md line {block.line + offset}")
        elif block.language == "python":
            self.write(block)
        else:
            raise AssertionError(f"{block.where()}: a quick-start step this test cannot do")

    def stop(self) -> None:
        if self.server is not None:
            self.server.terminate()
            self.server.wait(timeout=30)


def sign_in(browser: requests.Session, signin_url: str) -> requests.Response:
    """The sign-in page's password form, filled in and sent; the answer, not followed."""
    page = browser.get(signin_url)
    assert page.status_code == 200, page.text[:500]
    form = Forms(page.text).posting_to("/auth/callback/credentials")
    assert form["method"] == "post" and {"username", "password"} <= set(form["fields"])
    return browser.post(
        urljoin(page.url, form["action"]),
        data={**form["fields"], "username": USERNAME, "password": PASSWORD},
        allow_redirects=False,
    )


def test_the_readme_quick_start_runs_as_written(newcomer_venv, tmp_path):
    blocks = quickstart_blocks(README.read_text())
    newcomer = Newcomer(venv=newcomer_venv, cwd=tmp_path, log=tmp_path / "runserver.log")
    try:
        for block in blocks:
            newcomer.do(block)
        assert newcomer.server is not None, "the quick start never starts the server"
        base = newcomer.base
        # The project imports the installed webauth, not the checkout.
        where = newcomer.shell(
            "python -c 'import webauth; print(webauth.__file__)'", where="webauth.__file__"
        )
        assert where.startswith(str(newcomer_venv)), where

        # Signed out, the dashboard sends the visitor to the sign-in page...
        browser = requests.Session()
        first = browser.get(f"{base}/", allow_redirects=False)
        assert first.status_code == 302, f"GET / answered {first.status_code}: {first.text[:300]}"
        signin_url = urljoin(base, first.headers["Location"])
        assert urlsplit(signin_url).path == "/auth/signin"
        assert parse_qs(urlsplit(signin_url).query)["callbackUrl"] == ["/"]
        # ...whose form signs the new user in and sends them back to it.
        signed_in = sign_in(browser, signin_url)
        assert signed_in.status_code == 302, signed_in.text[:500]
        landing = browser.get(urljoin(base, signed_in.headers["Location"]))
        assert landing.status_code == 200 and urlsplit(landing.url).path == "/", landing.url
        assert f"Signed in as {USERNAME}." in landing.text
        assert browser.get(f"{base}/auth/session").json()["user"]["name"] == USERNAME

        # The sign-in page opened on its own lands on the dashboard too, not on a 404.
        other = requests.Session()
        signed_in = sign_in(other, f"{base}/auth/signin")
        assert signed_in.status_code == 302, signed_in.text[:500]
        landing = other.get(urljoin(base, signed_in.headers["Location"]))
        assert landing.status_code == 200, (landing.status_code, landing.url)
        assert f"Signed in as {USERNAME}." in landing.text

        # Its "Sign out" link, and the dashboard is closed again.
        signout = Forms(other.get(f"{base}/auth/signout").text).posting_to("/auth/signout")
        out = other.post(urljoin(base, signout["action"]), data=signout["fields"])
        assert out.status_code == 200, out.text[:500]
        again = other.get(f"{base}/", allow_redirects=False)
        assert again.status_code == 302
        assert urlsplit(again.headers["Location"]).path == "/auth/signin"
    finally:
        newcomer.stop()
    log = newcomer.log.read_text()
    assert " 404 " not in log and "Traceback" not in log, log
