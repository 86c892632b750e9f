"""A small reader of GNU gettext ``.po`` files, for the catalog tests (tests/test_i18n.py).

It reads what ``makemessages`` writes: comments and flags (``#,``), ``msgctxt``,
``msgid``, ``msgid_plural``, ``msgstr`` and ``msgstr[N]``, each a C string that
may continue on the following lines. Obsolete entries (``#~``) are kept apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "a": "\a", "b": "\b"}
_KEYWORD = re.compile(r"^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+(\".*\")\s*$")


def _unquote(text: str) -> str:
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        raise ValueError(f"not a C string: {text!r}")
    body = text[1:-1]
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 1
            out.append(_ESCAPES.get(body[i], "\\" + body[i]))
        else:
            out.append(c)
        i += 1
    return "".join(out)


@dataclass
class Entry:
    """One message of a catalog."""

    msgid: str = ""
    msgid_plural: str | None = None
    msgctxt: str | None = None
    msgstr: str = ""
    msgstr_plural: dict[int, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    obsolete: bool = False
    line: int = 0

    @property
    def fuzzy(self) -> bool:
        return "fuzzy" in self.flags

    @property
    def key(self) -> tuple[str | None, str]:
        """What identifies the message: its context and its id."""
        return self.msgctxt, self.msgid

    def translations(self) -> list[str]:
        """The translated texts: one, or one per plural form."""
        if self.msgid_plural is None:
            return [self.msgstr]
        return [self.msgstr_plural[i] for i in sorted(self.msgstr_plural)]


@dataclass
class Catalog:
    """A parsed ``.po`` file: its header entry and its messages."""

    header: dict[str, str]
    header_fuzzy: bool
    entries: list[Entry]
    obsolete: list[Entry]

    def by_key(self) -> dict[tuple[str | None, str], Entry]:
        return {e.key: e for e in self.entries}


def parse(text: str) -> Catalog:
    """Parse the text of a ``.po`` file (raises ``ValueError`` on what it cannot read)."""
    entries: list[Entry] = []
    current: Entry | None = None
    target: str | None = None  # which field the continuation lines extend
    plural_index = 0
    pending_flags: set[str] = set()

    def finish() -> None:
        nonlocal current, target
        if current is not None:
            entries.append(current)
        current, target = None, None

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        obsolete = line.startswith("#~")
        if obsolete:
            line = line[2:].strip()
        elif line.startswith("#"):
            if target is not None and target != "msgctxt":
                finish()
            if line.startswith("#,"):
                pending_flags |= {f.strip() for f in line[2:].split(",") if f.strip()}
            continue
        if not line:
            if target is not None:
                finish()
            continue
        match = _KEYWORD.match(line)
        if match:
            keyword, index, value = match.group(1), match.group(2), _unquote(match.group(3))
            if keyword in ("msgctxt", "msgid") and target not in (None, "msgctxt"):
                finish()
            if current is None:
                current = Entry(flags=pending_flags, obsolete=obsolete, line=number)
                pending_flags = set()
            if keyword == "msgctxt":
                current.msgctxt = value
            elif keyword == "msgid":
                current.msgid = value
            elif keyword == "msgid_plural":
                current.msgid_plural = value
            elif index is not None:
                plural_index = int(index)
                current.msgstr_plural[plural_index] = value
                keyword = "msgstr[]"
            else:
                current.msgstr = value
            target = keyword
            continue
        if line.startswith('"') and current is not None and target is not None:
            value = _unquote(line)
            if target == "msgctxt":
                current.msgctxt = (current.msgctxt or "") + value
            elif target == "msgid":
                current.msgid += value
            elif target == "msgid_plural":
                current.msgid_plural = (current.msgid_plural or "") + value
            elif target == "msgstr[]":
                current.msgstr_plural[plural_index] += value
            else:
                current.msgstr += value
            continue
        raise ValueError(f"line {number}: cannot read {raw!r}")
    finish()

    header_entry = next((e for e in entries if e.msgid == "" and e.msgctxt is None), None)
    header: dict[str, str] = {}
    if header_entry is not None:
        for row in header_entry.msgstr.splitlines():
            name, sep, value = row.partition(":")
            if sep:
                header[name.strip()] = value.strip()
    return Catalog(
        header=header,
        header_fuzzy=header_entry is not None and header_entry.fuzzy,
        entries=[e for e in entries if e is not header_entry and not e.obsolete],
        obsolete=[e for e in entries if e.obsolete],
    )


def read(path: Path) -> Catalog:
    """Parse the ``.po`` file at *path* (UTF-8, as makemessages writes it)."""
    return parse(path.read_text(encoding="utf-8"))
