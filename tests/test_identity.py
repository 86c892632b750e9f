"""webauth.identity: the one canonical form of an address, and the keys limits count under.

The rules are checked here against what they must say for each kind of
spelling (tests/support/addresses.py's mutations), so that the lookup tests
(tests/test_identity_lookups.py), which compare every lookup path with the
canonical form, rest on a form that conflates nothing it must not.
"""

from __future__ import annotations

import sys
import unicodedata

import idna
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from webauth.identity import (
    MAX_EMAIL_LENGTH,
    _plain_domain,
    canonical_email,
    canonical_email_or_none,
    identifier_key,
)
from webauth.providers.email import normalize_email

from .support.addresses import OTHER, REFUSED, SAME, Pair, bases, pairs

QUICK = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.parametrize(
    ("typed", "canonical"),
    [
        ("alice@example.com", "alice@example.com"),
        ("  Alice@Example.COM\t", "alice@example.com"),
        ("ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ", "alice@example.com"),  # full-width
        ("dup@пример.рф", "dup@xn--e1afmkfd.xn--p1ai"),
        ("dup@xn--e1afmkfd.xn--p1ai", "dup@xn--e1afmkfd.xn--p1ai"),
        ("dup@XN--E1AFMKFD.XN--P1AI", "dup@xn--e1afmkfd.xn--p1ai"),
        ("dup@ПРИМЕР.РФ", "dup@xn--e1afmkfd.xn--p1ai"),
        ("alice@gmäil.com", "alice@xn--gmil-moa.com"),
        ("alice@gma\u0308il.com", "alice@xn--gmil-moa.com"),  # a + combining diaeresis
        ("alice@straße.de", "alice@xn--strae-oqa.de"),  # IDNA 2008: ß stays ß
        ("alice@例え.jp", "alice@xn--r8jz45g.jp"),
        ("Jöhn@example.com", "jöhn@example.com"),
        ("jo\u0308hn@example.com", "jöhn@example.com"),  # decomposed: one form
        ("alıce@gmail.com", "alıce@gmail.com"),  # the dotless i is another letter
        ("ALİCE@example.com", "ali\u0307ce@example.com"),  # İ lower-cases to i + dot
        ("stra\u00dfe@example.com", "straße@example.com"),  # not full case-folding
        ("\u212aate@example.com", "kate@example.com"),  # the Kelvin sign is a K
        ("first.last+tag@example.com", "first.last+tag@example.com"),
        ("alice@example\u3002com", "alice@example.com"),  # the ideographic full stop
        ("alice@例え。jp", "alice@xn--r8jz45g.jp"),
        ("a" * 64 + "@example.com", "a" * 64 + "@example.com"),
        ("a@b", "a@b"),
    ],
)
def test_the_canonical_form(typed, canonical):
    assert canonical_email(typed) == canonical
    assert normalize_email(typed) == canonical  # the name webauth.providers.email exports


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("", "Enter your email address."),
        ("   ", "Enter your email address."),
        (None, "Enter your email address."),
        (42, "Enter your email address."),
        ("alice", "Enter a valid email address."),
        ("alice@", "Enter a valid email address."),
        ("@example.com", "Enter a valid email address."),
        ("a@b@example.com", "Enter a valid email address."),
        ("ali\u200bce@example.com", "Enter a valid email address."),  # zero-width space
        ("alice@gm\u200bail.com", "Enter a valid email address."),
        ("ali\u200dce@example.com", "Enter a valid email address."),  # zero-width joiner
        ("ali\u00adce@example.com", "Enter a valid email address."),  # soft hyphen
        ("\u202ealice@example.com", "Enter a valid email address."),  # bidi override
        ("al ice@example.com", "Enter a valid email address."),
        ("alice@exa mple.com", "Enter a valid email address."),
        ('"alice"@example.com', "Enter a valid email address."),
        ("alice,bob@example.com", "Enter a valid email address."),
        ("alice@example.com.", "Enter a valid email address."),
        ("alice@.example.com", "Enter a valid email address."),
        ("alice@example..com", "Enter a valid email address."),
        ("alice@exam_ple.com", "Enter a valid email address."),  # no host name
        ("alice@-example.com", "Enter a valid email address."),
        ("alice@xn--ggg.com", "Enter a valid email address."),  # no valid A-label
        ("alice@example.com\u3002", "Enter a valid email address."),  # ideographic full stop
        ("alice@", "Enter a valid email address."),
        ("alice@\u3002", "Enter a valid email address."),
        ("alice@@example.com", "Enter a valid email address."),
        ("alice@xn--E1AFMKFD\u0301.com", "Enter a valid email address."),
        ("a" * 65 + "@example.com", "Enter a valid email address."),
        (
            "a@" + "b" * 63 + "." + "c" * 63 + "." + "d" * 63 + "." + "e" * 62,
            "Enter a valid email address.",
        ),
        ("a" * 2000 + "@example.com", "Enter a valid email address."),
    ],
)
def test_what_is_refused_and_what_the_form_says(typed, message):
    with pytest.raises(ValueError) as info:
        canonical_email(typed)
    assert str(info.value) == message
    assert canonical_email_or_none(typed) is None


def test_the_longest_address_is_254_characters():
    assert MAX_EMAIL_LENGTH == 254  # RFC 5321's path less the brackets
    domain = "b" * 63 + "." + "c" * 63 + "." + "d" * 63 + ".ee"
    local = "a" * (254 - len(domain) - 1)
    assert len(local) <= 64
    assert canonical_email(f"{local}@{domain}") == f"{local}@{domain}"
    with pytest.raises(ValueError):
        canonical_email(f"{local}a@{domain}")


def test_every_code_point_is_its_own_form_after_one_round():
    # What _local_part relies on, for every single character.
    for code_point in range(sys.maxunicode + 1):
        if 0xD800 <= code_point <= 0xDFFF:
            continue
        once = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", chr(code_point)).lower())
        assert unicodedata.normalize("NFKC", once.lower()) == once, hex(code_point)


def test_a_punycode_domain_counts_after_its_encoding():
    # 60 Cyrillic letters are a valid label, whose ASCII form is longer than 63: refused.
    with pytest.raises(ValueError):
        canonical_email("a@" + "я" * 60 + ".рф")


@QUICK
@given(st.text(max_size=300))
@example("\x00@\x00")
@example("a@\udcff.com")
@example("a@" + "\u0308" * 10)
def test_any_text_is_an_address_or_a_value_error(text):
    try:
        address = canonical_email(text)
    except ValueError:
        return
    local, _, domain = address.partition("@")
    assert local and domain and "@" not in domain
    assert domain.isascii() and domain == domain.lower()
    assert unicodedata.normalize("NFKC", local) == local and local == local.lower()
    assert len(address) <= MAX_EMAIL_LENGTH and len(local) <= 64
    assert all(c.isprintable() and not c.isspace() for c in address)


@QUICK
@given(st.one_of(bases(), st.text(max_size=80)))
def test_the_canonical_form_is_its_own_canonical_form(text):
    address = canonical_email_or_none(text)
    if address is not None:
        assert canonical_email(address) == address


@QUICK
@given(bases())
def test_the_domain_is_the_same_in_unicode_and_in_punycode(address):
    local, _, domain = address.partition("@")
    ascii_form = idna.encode(domain, uts46=True, transitional=False).decode()
    unicode_form = idna.decode(ascii_form)
    assert canonical_email(f"{local}@{ascii_form}") == canonical_email(f"{local}@{unicode_form}")
    assert canonical_email(address).partition("@")[2] == ascii_form


@QUICK
@given(pairs())
@example(Pair("alice@gmail.com", "alıce@gmail.com", "dotless i", OTHER))
@example(Pair("alice@gmail.com", "alice@gmäil.com", "accent added", OTHER))
@example(Pair("alice@gmail.com", "alice@gmаil.com", "cyrillic look-alike", OTHER))
@example(Pair("dup@пример.рф", "dup@xn--e1afmkfd.xn--p1ai", "punycode or unicode domain", SAME))
@example(Pair("alice@example.com", "ali\u200bce@example.com", "invisible character", REFUSED))
def test_each_kind_of_spelling_has_its_relation(pair):
    base = canonical_email(pair.base)
    variant = canonical_email_or_none(pair.variant)
    if pair.relation == SAME:
        assert variant == base, pair
    elif pair.relation == OTHER:
        assert variant is not None and variant != base, pair
    else:
        assert variant is None, pair


_ASCII_DOMAINS = st.text(alphabet="abcXYZ019-._x", min_size=1, max_size=30) | st.builds(
    lambda labels: ".".join(labels),
    st.lists(st.text(alphabet="ab-9", min_size=0, max_size=70), min_size=1, max_size=5),
)


@QUICK
@given(_ASCII_DOMAINS)
@example("xn--e1afmkfd.com")
@example("ab--cd.com")
@example("ab--cd.ef--gh")  # every label reserved: IDNA refuses, so must the fast path
@example("a" * 63 + ".com")
@example("a" * 64 + ".com")
@example(("a" * 63 + ".") * 4 + "a")
@example("-a.com")
@example("a-.com")
def test_the_plain_domain_fast_path_agrees_with_idna(domain):
    fast = _plain_domain(domain)
    try:
        slow = idna.encode(domain, uts46=True, std3_rules=True, transitional=False).decode()
    except idna.IDNAError:
        slow = None
    if fast is not None:
        assert fast == slow


@QUICK
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
@example("Alice@XN--EXMPLE-CUA.com")
@example(" Alice@Example.COM ")
@example("al ice\x1c")
def test_the_ascii_fast_path_of_the_keys_agrees_with_the_general_one(text):
    general = _identifier_key_general(text)
    assert identifier_key(text) == general


def _identifier_key_general(value: str) -> str:
    # identifier_key without its ASCII fast path: the same steps, spelt out.
    text = unicodedata.normalize("NFKC", value).strip()
    address = canonical_email_or_none(text)
    if address is not None:
        local, _, domain = address.partition("@")
        text = f"{local}@{idna.decode(domain)}"
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(c for c in text if unicodedata.category(c) not in ("Mn", "Me"))
    return " ".join(unicodedata.normalize("NFKC", text.replace("\u0131", "i")).split())


# -- the rate limits' keys --------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        "alice@example.com",
        " Alice@Example.COM ",
        "ａｌｉｃｅ@example.com",
        "alıce@example.com",  # dotless i
        "ALİCE@example.com",  # dotted capital I
        "alíce@example.com",
        "ali\u200bce@example.com",  # zero-width space
        "ali\u00adce@example.com",  # soft hyphen
        "alice@exämple.com",
        "alice@xn--exmple-cua.com",  # the same, in punycode
    ],
)
def test_look_alike_spellings_share_one_rate_limit_key(spelling):
    assert identifier_key(spelling) == "alice@example.com"


@pytest.mark.parametrize(
    "spelling",
    ["Alice", "alıce", "ALİCE", "ａｌｉｃｅ", "ali\u200bce", "álice", "  alice  ", "a\u20ddlice"],
)
def test_usernames_fold_the_same_way(spelling):
    assert identifier_key(spelling) == "alice"


def test_different_identifiers_keep_different_keys():
    keys = {identifier_key(v) for v in ("alice", "alicia", "bob@example.com", "bob@example.org")}
    assert len(keys) == 4


@QUICK
@given(pairs())
def test_addresses_with_one_canonical_form_share_a_key(pair):
    # The key folds more than the canonical form: never less.
    if canonical_email_or_none(pair.variant) == canonical_email(pair.base):
        assert identifier_key(pair.variant) == identifier_key(pair.base)


@QUICK
@given(st.text(max_size=200))
def test_any_text_has_a_key(text):
    key = identifier_key(text)
    assert isinstance(key, str) and identifier_key(key) == key
