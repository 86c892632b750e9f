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
    """NFKC and lower case, until neither changes anything (once, for any text seen so far)."""
    for _round in range(4):
        folded = _nfkc(local.lower())
        if folded == local:
            return local
        local = folded
    raise ValueError(_INVALID)  # pragma: no cover - no Unicode text needs more rounds


def _ascii_domain(domain: str) -> str:
    """The domain's IDNA 2008 ASCII form, the same for each of its spellings; ``ValueError``."""
    if domain.startswith(".") or domain.endswith(".") or ".." in domain:
        raise ValueError(_INVALID)
    try:
        ascii_form = idna.encode(domain, uts46=True, std3_rules=True, transitional=False)
        text = ascii_form.decode("ascii")
        # An A-label that decodes to something whose own A-label differs (an
        # upper-case or otherwise odd spelling of punycode) is not canonical:
        # going round once more must give the same text.
        again = idna.encode(idna.decode(text), uts46=True, std3_rules=True, transitional=False)
    except (idna.IDNAError, UnicodeError, ValueError):
        raise ValueError(_INVALID) from None
    if again != ascii_form or text.endswith("."):
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
    local, at, domain = text.partition("@")
    if not at or not local or not domain or "@" in domain:
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
    text = _nfkc(value).strip()
    address = canonical_email_or_none(text)
    if address is not None:
        local, _at, domain = address.partition("@")
        try:
            text = f"{local}@{idna.decode(domain)}"
        except (idna.IDNAError, UnicodeError):  # pragma: no cover - canonical domains decode
            text = address
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    text = _unaccented(text.casefold()).replace("\u0131", "i")  # the dotless i
    return " ".join(_nfkc(text).split())
