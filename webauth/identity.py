"""Identities: the one canonical form of an email address, and the keys limits count under.

Two addresses are the same mailbox for webauth **if and only if** their
:func:`canonical_email` forms are equal, compared exactly (``=`` on the stored
string, and again in Python on the row that comes back). Everything that
stores, looks up, counts or compares an address goes through this module:
the email sign-in's grants, the user's stored address, passkey registration,
OAuth account linking by address, the account center's email change, the app
routes, the rate limits.

Why not a case-insensitive comparison in SQL (Django's ``iexact``)? Because it
is not an identity: PostgreSQL compares ``UPPER(a) = UPPER(b)``, and Unicode
upper-casing maps distinct letters onto one (the dotless i, U+0131,
upper-cases to ``I``); MariaDB and MySQL compare under the column's collation, and the usual
``*_general_ci`` / ``*_unicode_ci`` ones treat ``ä`` as ``a``. Whoever owns a
look-alike domain would receive the code and reach the account of the address
it resembles. So the address is brought to one form once, stored in that form,
and compared exactly.

The canonical form (:func:`canonical_email`):

* **Domain**: mapped and checked under IDNA 2008 with UTS #46 processing
  (non-transitional, STD3 host-name rules), then written in its ASCII form:
  ``пример.рф`` and ``xn--e1afmkfd.xn--p1ai`` are one domain, written
  ``xn--e1afmkfd.xn--p1ai``. The ASCII form is what DNS and SMTP use, so a
  message goes exactly where the canonical form says (Django's mail encodes a
  Unicode domain with the older IDNA 2003, which maps ``ß`` to ``ss``: another
  domain); and it shows a look-alike domain for what it is.
* **Local part**: Unicode NFKC (full-width letters become ASCII, composed and
  decomposed accents one form), then lower-cased, as Auth.js and webauth always
  did. Nothing else: dots and ``+tags`` are kept (that Gmail ignores them is
  Gmail's rule, not the address's), and ``ß`` stays ``ß`` (full case-folding
  would make it ``ss``, another mailbox).
* **Refused**: whitespace, control and format characters (zero-width spaces
  and joiners, bidirectional marks) anywhere; characters that quote, comment
  or separate addresses (``"(),:;<>[]\\``); anything but exactly one ``@``;
  a local part over 64 or an address over 254 characters; a domain IDNA 2008
  does not allow. The message of the ``ValueError`` is what a form shows.

The rate limits count an identifier under a **looser** key
(:func:`identifier_key`): a database with a case- and accent-insensitive
collation may match ``alíce`` to ``alice`` where a project's own code looks a
user up (Django's ``ModelBackend`` compares the username under the column's
collation), so every spelling that could reach one account shares one count.
Folding more there only merges counters; it never lets anyone in.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

import idna
from django.utils.translation import gettext_lazy as _

__all__ = [
    "MAX_EMAIL_LENGTH",
    "MAX_LOCAL_LENGTH",
    "canonical_email",
    "canonical_email_or_none",
    "identifier_key",
]

#: The longest address webauth accepts (RFC 5321's path limit less the brackets).
MAX_EMAIL_LENGTH: Final = 254
#: The longest local part (RFC 5321 4.5.3.1.1).
MAX_LOCAL_LENGTH: Final = 64

# Characters refused anywhere in an address: they quote, comment, separate or
# route (a comma would make two recipients of one "address" in a To: header).
_FORBIDDEN = frozenset('"(),:;<>[]\\')

_EMPTY = _("Enter your email address.")
_INVALID = _("Enter a valid email address.")


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _local_part(local: str) -> str:
    """NFKC (done by the caller), then lower case and NFKC again.

    Lower-casing could in principle undo NFKC, so the result is checked to be
    its own form: a canonical address must stay itself when it is brought to
    the canonical form again (it is, when the adapter looks it up). No text is
    known that fails this (tests/test_identity.py tries every code point, and
    Hypothesis strings); one that did would be refused rather than stored in
    two spellings.
    """
    folded = _nfkc(local.lower())
    if _nfkc(folded.lower()) != folded:
        raise ValueError(_INVALID)
    return folded


# A host-name label of letters, digits and inner hyphens (RFC 952/1123), at most 63.
_LDH_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


def _plain_domain(domain: str) -> str | None:
    """*domain* lower-cased when it is plain ASCII host-name labels, else ``None``.

    A fast path, for nearly every address: what IDNA 2008 with UTS #46 gives
    for such a domain is its lower case, and it accepts it. Anything else
    (Unicode, punycode ``xn--`` labels, which need decoding to be checked, and
    the labels IDNA reserves with ``--`` in their third and fourth places, an
    empty or over-long label, over 253 characters) goes to :mod:`idna`.
    tests/test_identity.py checks that both paths agree.
    """
    lowered = domain.lower()
    if not lowered.isascii() or len(lowered) > 253:
        return None
    for label in lowered.split("."):
        if _LDH_LABEL.fullmatch(label) is None or label[2:4] == "--":
            return None
    return lowered


def _ascii_domain(domain: str) -> str:
    """The domain's IDNA 2008 ASCII form, the same for each of its spellings; ``ValueError``.

    UTS #46 maps first (case, full-width forms, the ideographic full stop as a
    label separator, and ignorable characters), then IDNA 2008 checks every
    label, punycode ones included (``xn--ggg`` decodes to nothing allowed), and
    refuses empty labels and what no host name holds (``_``, ``@``).
    """
    plain = _plain_domain(domain)
    if plain is not None:
        return plain
    try:
        ascii_form = idna.encode(domain, uts46=True, std3_rules=True, transitional=False)
    except (idna.IDNAError, UnicodeError):
        raise ValueError(_INVALID) from None
    text = ascii_form.decode("ascii")
    if text.endswith("."):  # the root's dot: a host name, but no mail domain
        raise ValueError(_INVALID)
    return text


def canonical_email(value: object) -> str:
    """*value* as webauth stores and compares an address; ``ValueError`` if it is none.

    ``" Alice@Пример.РФ "`` is ``"alice@xn--e1afmkfd.xn--p1ai"``;
    ``"alice\uff20example\uff0ecom"`` (a full-width at sign and full stop) is
    ``"alice@example.com"``. The
    rules, and why, are in this module's docstring. The exception's message is
    what the sign-in form shows.
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(_EMPTY)
    if len(value) > 4 * MAX_EMAIL_LENGTH:  # before any work on it
        raise ValueError(_INVALID)
    # NFKC first: a full-width at sign or full stop (U+FF20, U+FF0E) becomes the ASCII one.
    text = _nfkc(value).strip()
    for char in text:
        # isprintable() is false for controls, format characters (zero-width
        # space, joiners, bidi marks), separators other than the space, and
        # unassigned code points.
        if char in _FORBIDDEN or char.isspace() or not char.isprintable():
            raise ValueError(_INVALID)
    # Exactly one "@" with something before it: a second "@" lands in the
    # domain, and an empty or missing domain is refused there, by IDNA.
    local, _at, domain = text.partition("@")
    if not local:
        raise ValueError(_INVALID)
    local = _local_part(local)
    if len(local) > MAX_LOCAL_LENGTH:
        raise ValueError(_INVALID)
    address = f"{local}@{_ascii_domain(domain)}"
    if len(address) > MAX_EMAIL_LENGTH:
        raise ValueError(_INVALID)
    return address


def canonical_email_or_none(value: object) -> str | None:
    """:func:`canonical_email`, or ``None`` for what is not an address webauth accepts."""
    try:
        return canonical_email(value)
    except ValueError:
        return None


def _unaccented(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if unicodedata.category(c) not in ("Mn", "Me"))


def identifier_key(value: str) -> str:
    """What the per-identifier rate limits count *value* under.

    Every spelling that some database could match to the same account gets
    the same key: Unicode NFKC, format characters (zero-width and bidi marks)
    dropped, case-folded, accents dropped, the dotless i (U+0131) read as ``i``, and
    an address's domain read in Unicode (so its punycode spelling counts with
    it). ``" Alice@Example.com"``, ``"ALİCE@example.com"`` and
    ``"alíce@example.com"`` share one count.
    """
    lowered = value.lower()
    if lowered.isascii() and "xn--" not in lowered:
        # ASCII: nothing to map, decompose or drop but case (a fast path, for
        # nearly every key; tests/test_identity.py checks it against the rest).
        return " ".join(lowered.split())
    text = _nfkc(value).strip()
    address = canonical_email_or_none(text)
    if address is not None:
        local, _at, domain = address.partition("@")
        text = f"{local}@{idna.decode(domain)}"  # a canonical domain always decodes
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    text = _unaccented(text.casefold()).replace("\u0131", "i")  # the dotless i
    return " ".join(_nfkc(text).split())
