"""Generated addresses for the identity tests: a base address and a variant of it.

Each variant is made by one *mutation* whose relation to the base is known
from the rules (webauth.identity), not from the code under test:

* ``SAME``: another spelling of the same mailbox (case, full-width forms,
  decomposed accents, the domain's punycode or Unicode form, the Kelvin sign for
  ``k``, spaces around it);
* ``OTHER``: another mailbox that looks alike (the dotless i, the dotted capital
  I, an accent added or taken away, a Cyrillic look-alike letter, ``ß`` for
  ``ss``);
* ``REFUSED``: not an address webauth accepts (a zero-width or bidi character
  inside it).

tests/test_identity.py checks that :func:`webauth.identity.canonical_email` gives
each mutation its relation; the lookup tests then check that every lookup path
reaches the base's account exactly when the canonical forms are equal.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

import idna
from hypothesis import strategies as st

SAME, OTHER, REFUSED = "same", "other", "refused"

_ASCII_LOCAL = "abcdefghijklmnopqrstuvwxyz0123456789"
# Letters a base address may hold beyond ASCII, so that accents and look-alikes
# have something to work on in both directions.
_UNICODE_LOCAL = "äöüéñçåøıіаеорсßk"
_DOMAIN_LABELS = [
    "gmail",
    "example",
    "mail-box",
    "xn--e1afmkfd",  # пример, in its ASCII form
    "пример",
    "bücher",
    "straße",
    "例え",
    "kiosk",
    "issue",
]
_TLDS = ["com", "org", "de", "io", "рф", "xn--p1ai"]

_CYRILLIC = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "i": "і"}
_ACCENTS = {"a": "ä", "e": "é", "o": "ö", "u": "ü", "n": "ñ", "c": "ç"}
_UNACCENT = {v: k for k, v in _ACCENTS.items()}
_INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u00ad", "\u2060", "\ufeff", "\u202e", "\u200e"]


@dataclass(frozen=True)
class Pair:
    """A base address, a variant, the mutation that made it and its relation."""

    base: str
    variant: str
    mutation: str
    relation: str


def _replace_one(text: str, index: int, new: str) -> str:
    return text[:index] + new + text[index + 1 :]


def _positions(text: str, chars: str | dict[str, str]) -> list[int]:
    return [i for i, c in enumerate(text) if c in chars]


def _domain_other_form(address: str) -> str:
    local, _, domain = address.rpartition("@")
    ascii_form = idna.encode(domain, uts46=True, transitional=False).decode()
    unicode_form = idna.decode(ascii_form)
    other = ascii_form if domain != ascii_form else unicode_form
    return f"{local}@{other}"


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _upper_safely(text: str) -> str:
    # Only letters whose upper case lower-cases back to them (not ß, not ı).
    out = []
    for c in text:
        u = c.upper()
        out.append(u if len(u) == 1 and u.lower() == c else c)
    return "".join(out)


@st.composite
def bases(draw: Callable[..., object]) -> str:
    """A valid address, its local part ASCII with some accented or look-alike letters."""
    alphabet = st.sampled_from(_ASCII_LOCAL + _UNICODE_LOCAL)
    first = draw(st.sampled_from(_ASCII_LOCAL))
    rest = draw(st.text(alphabet=alphabet, min_size=0, max_size=10))
    dot = draw(st.sampled_from(["", ".", "+", "-", "_"]))
    tail = draw(st.text(alphabet=st.sampled_from(_ASCII_LOCAL), min_size=1, max_size=4))
    local = f"{first}{rest}{dot}{tail}" if dot else f"{first}{rest}"
    label = draw(st.sampled_from(_DOMAIN_LABELS))
    tld = draw(st.sampled_from(_TLDS))
    return f"{local}@{label}.{tld}"


def _pick(draw: Callable[..., object], positions: list[int]) -> int:
    return int(draw(st.sampled_from(positions)))  # type: ignore[call-overload]


def _local(address: str) -> str:
    return address.rpartition("@")[0]


def _swap_one(table: dict[str, str]) -> Callable[..., str]:
    """Replace one letter of the local part by its counterpart in *table*."""

    def make(a: str, draw: Callable[..., object]) -> str:
        i = _pick(draw, _positions(_local(a), table))
        return _replace_one(a, i, table[a[i]])

    return make


# A look-alike of a domain's first label: another domain that looks the same.
_LOOKALIKE_LABELS = {
    "gmail": ["gmäil", "gmaıl", "gmаil", "gmaíl"],
    "example": ["exämple", "еxample", "examplе"],
    "kiosk": ["kıosk", "kiösk"],
    "issue": ["ıssue", "іssue"],
    "mail-box": ["maıl-box", "mail-bоx"],
}


def _lookalike_domain(a: str, draw: Callable[..., object]) -> str:
    local, _, domain = a.rpartition("@")
    label, _, rest = domain.partition(".")
    return f"{local}@{draw(st.sampled_from(_LOOKALIKE_LABELS[label]))}.{rest}"


def _insert_invisible(a: str, draw: Callable[..., object]) -> str:
    i = _pick(draw, list(range(1, len(_local(a)))))
    return a[:i] + str(draw(st.sampled_from(_INVISIBLE))) + a[i:]


def _upper_domain(a: str) -> str:
    local, _, domain = a.rpartition("@")
    return f"{local}@{_upper_safely(domain)}"


#: name -> (relation, applies(base) -> bool, make(base, draw) -> variant)
MUTATIONS: dict[str, tuple[str, Callable[[str], bool], Callable[..., str]]] = {
    "identical": (SAME, lambda a: True, lambda a, draw: a),
    "upper case": (SAME, lambda a: True, lambda a, draw: _upper_safely(a)),
    "upper-case domain": (SAME, lambda a: True, lambda a, draw: _upper_domain(a)),
    "full-width": (SAME, lambda a: True, lambda a, draw: _fullwidth(a)),
    "decomposed accents": (
        SAME,
        lambda a: True,
        lambda a, draw: unicodedata.normalize("NFD", a),
    ),
    "punycode or unicode domain": (SAME, lambda a: True, lambda a, draw: _domain_other_form(a)),
    "kelvin sign for k": (
        SAME,
        lambda a: "k" in _local(a),
        lambda a, draw: a.replace("k", "\u212a", 1),
    ),
    "spaces around": (SAME, lambda a: True, lambda a, draw: f"  {a}\t"),
    "dotless i": (
        OTHER,
        lambda a: "i" in _local(a),
        lambda a, draw: _replace_one(a, _pick(draw, _positions(_local(a), "i")), "\u0131"),
    ),
    "dotted capital I": (
        OTHER,
        lambda a: "i" in _local(a),
        lambda a, draw: _replace_one(a, _pick(draw, _positions(_local(a), "i")), "\u0130"),
    ),
    "accent added": (
        OTHER,
        lambda a: bool(_positions(_local(a), _ACCENTS)),
        _swap_one(_ACCENTS),
    ),
    "accent taken away": (
        OTHER,
        lambda a: bool(_positions(_local(a), _UNACCENT)),
        _swap_one(_UNACCENT),
    ),
    "cyrillic look-alike": (
        OTHER,
        lambda a: bool(_positions(_local(a), _CYRILLIC)),
        _swap_one(_CYRILLIC),
    ),
    "sharp s for ss": (
        OTHER,
        lambda a: "ss" in _local(a) or "ß" in _local(a),
        lambda a, draw: a.replace("ss", "ß", 1) if "ss" in _local(a) else a.replace("ß", "ss", 1),
    ),
    "look-alike domain": (
        OTHER,
        lambda a: a.rpartition("@")[2].partition(".")[0] in _LOOKALIKE_LABELS,
        _lookalike_domain,
    ),
    "invisible character": (REFUSED, lambda a: len(_local(a)) > 1, _insert_invisible),
}


@st.composite
def pairs(draw: Callable[..., object], mutations: tuple[str, ...] | None = None) -> Pair:
    """A base address and a variant made by one of *mutations* (default: all)."""
    base = str(draw(bases()))
    names = [
        name
        for name, (_relation, applies, _make) in MUTATIONS.items()
        if (mutations is None or name in mutations) and applies(base)
    ]
    name = str(draw(st.sampled_from(names)))
    relation, _applies, make = MUTATIONS[name]
    return Pair(base, make(base, draw), name, relation)
