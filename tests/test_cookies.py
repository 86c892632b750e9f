"""Cookie names, attributes, JS-style encoding and chunking (protocol section 2)."""

import pytest
from django.http import HttpResponse

from webauth import cookies as ck
from webauth.conf import build_config


def config(**kw):
    return build_config({"secret": "s" * 40, **kw}, lambda name: None)


@pytest.mark.parametrize(
    ("key", "http", "https"),
    [
        ("session_token", "authjs.session-token", "__Secure-authjs.session-token"),
        ("callback_url", "authjs.callback-url", "__Secure-authjs.callback-url"),
        ("csrf_token", "authjs.csrf-token", "__Host-authjs.csrf-token"),
        ("pkce_code_verifier", "authjs.pkce.code_verifier", "__Secure-authjs.pkce.code_verifier"),
        ("state", "authjs.state", "__Secure-authjs.state"),
        ("nonce", "authjs.nonce", "__Secure-authjs.nonce"),
        ("webauthn_challenge", "authjs.challenge", "__Secure-authjs.challenge"),
    ],
)
def test_cookie_names(key, http, https):
    cfg = config()
    assert ck.cookie_specs(cfg, False)[key].name == http
    assert ck.cookie_specs(cfg, True)[key].name == https
    assert ck.cookie_specs(cfg, True)[key].secure is True
    assert ck.cookie_specs(cfg, False)[key].secure is False


def test_check_cookies_have_max_age():
    specs = ck.cookie_specs(config(), False)
    assert specs["state"].max_age == 900
    assert specs["pkce_code_verifier"].max_age == 900
    assert specs["nonce"].max_age is None
    assert specs["session_token"].max_age is None


def test_cookie_overrides():
    cfg = config(
        cookies={
            "session_token": {
                "name": "my-session",
                "options": {"same_site": "strict", "domain": "example.com"},
            }
        }
    )
    spec = ck.cookie_specs(cfg, True)["session_token"]
    assert spec.name == "my-session" and spec.same_site == "Strict"
    assert spec.domain == "example.com" and spec.secure


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [
        ("a|b", "a%7Cb"),
        ("https://app.example.com", "https%3A%2F%2Fapp.example.com"),
        ("hé llo", "h%C3%A9%20llo"),
        ("-_.!~*'()", "-_.!~*'()"),
        ("a+b=c&d", "a%2Bb%3Dc%26d"),
    ],
)
def test_encode_like_encode_uri_component(raw, encoded):
    assert ck.encode_value(raw) == encoded
    assert ck.decode_value(encoded) == raw


def test_decode_falls_back_to_raw_value():
    assert ck.decode_value("%E0%A4%A") == "%E0%A4%A"
    assert ck.decode_value("%ff") == "%ff"
    assert ck.decode_value("plain") == "plain"


def test_set_cookie_header_format():
    response = HttpResponse()
    spec = ck.cookie_specs(config(), True)["csrf_token"]
    ck.set_cookie(response, spec, "tok|hash")
    header = response.cookies[spec.name].OutputString()
    assert header.startswith("__Host-authjs.csrf-token=tok%7Chash;")
    for part in ("Path=/", "HttpOnly", "Secure", "SameSite=Lax"):
        assert part in header
    assert "Max-Age" not in header and "expires" not in header.lower()


def test_partitioned_cookies_say_so():
    cfg = config(cookies={"session_token": {"options": {"partitioned": True}}})
    specs = ck.cookie_specs(cfg, True)
    response = HttpResponse()
    ck.set_chunked(response, specs["session_token"], "v" * 10, {})
    ck.set_cookie(response, specs["csrf_token"], "tok|hash")
    session = response.cookies[specs["session_token"].name].OutputString()
    assert "; Partitioned" in session and "; Secure" in session
    assert "Partitioned" not in response.cookies[specs["csrf_token"].name].OutputString()
    # What Django sends as the Set-Cookie header value.
    assert "Partitioned" in response.cookies[specs["session_token"].name].output(header="")


def test_check_cookie_has_max_age_and_expires():
    response = HttpResponse()
    spec = ck.cookie_specs(config(), False)["state"]
    ck.set_cookie(response, spec, "v")
    header = response.cookies[spec.name].OutputString()
    assert "Max-Age=900" in header and "expires=" in header.lower()


def test_chunking_splits_at_3936_and_reassembles():
    spec = ck.cookie_specs(config(), False)["session_token"]
    value = "abcdefghij" * 1000  # 10000 chars -> 3 chunks
    response = HttpResponse()
    ck.set_chunked(response, spec, value, {})
    names = sorted(response.cookies)
    assert names == [f"{spec.name}.0", f"{spec.name}.1", f"{spec.name}.2"]
    assert [len(response.cookies[n].value) for n in names] == [3936, 3936, 10000 - 2 * 3936]
    jar = {n: response.cookies[n].coded_value for n in names}
    assert ck.read_chunked(jar, spec.name) == value


def test_chunks_sorted_numerically():
    spec = ck.cookie_specs(config(), False)["session_token"]
    jar = {f"{spec.name}.{i}": str(i) for i in range(12)}
    assert ck.read_chunked(jar, spec.name) == "".join(str(i) for i in range(12))


def test_exactly_one_chunk_keeps_plain_name():
    spec = ck.cookie_specs(config(), False)["session_token"]
    response = HttpResponse()
    ck.set_chunked(response, spec, "x" * 3936, {})
    assert list(response.cookies) == [spec.name]


def test_shrinking_deletes_stale_chunks():
    spec = ck.cookie_specs(config(), False)["session_token"]
    old = {f"{spec.name}.0": "a", f"{spec.name}.1": "b", "unrelated": "x"}
    response = HttpResponse()
    ck.set_chunked(response, spec, "small", old)
    assert response.cookies[spec.name].value == "small"
    assert response.cookies[f"{spec.name}.0"]["max-age"] == "0"
    assert response.cookies[f"{spec.name}.1"]["max-age"] == "0"
    assert "unrelated" not in response.cookies


def test_deleting_removes_every_chunk():
    spec = ck.cookie_specs(config(), False)["session_token"]
    old = {spec.name: "a", f"{spec.name}.0": "b"}
    response = HttpResponse()
    ck.set_chunked(response, spec, None, old)
    assert {n: response.cookies[n]["max-age"] for n in response.cookies} == {
        spec.name: "0",
        f"{spec.name}.0": "0",
    }


# -- chunk names: only <name>.<ASCII digits>, capped -------------------------------

SESSION = "authjs.session-token"


@pytest.mark.parametrize(
    "suffix",
    [
        "@",  # not a token character: no Set-Cookie can even name it
        "\u00b2",  # superscript two: str.isdigit() says yes, int() says no
        "\uff11",  # fullwidth one: int() accepts it, but it is no ASCII digit
        "\u0663",  # Arabic-Indic three, same
        "x",
        "",
        "0x",
        "-1",
        "+1",
        " 1",
        "1 ",
        "01",  # Auth.js never writes a leading zero: .01 would duplicate .1
        "00",
        "0.1",
        "1_0",
        "9" * 5000,  # int() refuses more than 4300 digits
    ],
)
def test_stray_names_are_not_chunks(suffix):
    stray = f"{SESSION}.{suffix}"
    jar = {f"{SESSION}.0": "ab", f"{SESSION}.1": "cd", stray: "junk"}
    assert ck.read_chunked(jar, SESSION) == "abcd"
    assert ck.read_chunked({stray: "junk"}, SESSION) is None
    assert not ck.has_chunked({stray: "junk"}, SESSION)
    spec = ck.cookie_specs(config(), False)["session_token"]
    response = HttpResponse()
    ck.set_chunked(response, spec, None, jar)  # must not try to delete the stray
    assert sorted(response.cookies) == [f"{SESSION}.0", f"{SESSION}.1"]


@pytest.mark.parametrize(
    "other", ["authjs.session-tokens", "authjs.session-token-old", "xauthjs.session-token"]
)
def test_chunk_names_match_exactly(other):
    jar = {other: "junk", f"{other}.0": "junk"}
    assert ck.read_chunked(jar, SESSION) is None
    assert not ck.has_chunked(jar, SESSION)
    spec = ck.cookie_specs(config(), False)["session_token"]
    response = HttpResponse()
    ck.set_chunked(response, spec, "new", jar)
    assert list(response.cookies) == [SESSION]


def test_chunks_sorted_numerically_not_as_text():
    jar = {f"{SESSION}.{i}": chr(ord("a") + i) for i in (10, 2, 9, 0, 1, 3, 4, 5, 6, 7, 8)}
    assert ck.read_chunked(jar, SESSION) == "abcdefghijk"


def test_a_gap_in_the_chunks_is_no_session():
    # A real set is always .0 ... .n-1: a missing chunk means a lost or planted cookie.
    assert ck.read_chunked({f"{SESSION}.0": "a", f"{SESSION}.2": "c"}, SESSION) is None
    assert ck.read_chunked({f"{SESSION}.1": "b"}, SESSION) is None


def test_empty_chunks_do_not_count():
    assert ck.read_chunked({f"{SESSION}.0": "a", f"{SESSION}.1": ""}, SESSION) == "a"
    assert ck.read_chunked({f"{SESSION}.0": ""}, SESSION) is None


def test_the_plain_cookie_wins_over_chunks():
    jar = {SESSION: "plain", f"{SESSION}.0": "a", f"{SESSION}.1": "b"}
    assert ck.read_chunked(jar, SESSION) == "plain"


def test_the_cap_is_far_above_any_real_session():
    # Node refuses more than 16 KiB of headers: an Auth.js app never sees over 4 chunks.
    assert ck.MAX_CHUNKS * ck.CHUNK_SIZE >= 3 * 16 * 1024


def test_the_most_chunks_a_session_may_have_are_read():
    jar = {f"{SESSION}.{i}": str(i % 10) for i in range(ck.MAX_CHUNKS)}
    assert ck.read_chunked(jar, SESSION) == "".join(str(i % 10) for i in range(ck.MAX_CHUNKS))


def test_a_chunk_set_over_the_cap_is_no_session():
    jar = {f"{SESSION}.{i}": "x" for i in range(ck.MAX_CHUNKS + 1)}
    assert ck.read_chunked(jar, SESSION) is None
    # One chunk far beyond the cap is the same: no real set reaches it.
    assert (
        ck.read_chunked({f"{SESSION}.0": "a", f"{SESSION}.{ck.MAX_CHUNKS}": "b"}, SESSION) is None
    )


def test_deleting_stray_chunks_is_capped():
    # 200 planted chunk cookies made 202 Set-Cookie headers on one response.
    jar = {SESSION: "plain", **{f"{SESSION}.{i}": "x" for i in range(200)}}
    spec = ck.cookie_specs(config(), False)["session_token"]
    response = HttpResponse()
    ck.set_chunked(response, spec, None, jar)
    assert len(response.cookies) == ck.MAX_CHUNKS + 1
    # The lowest indexes go first: the next responses delete the rest.
    assert set(response.cookies) == {SESSION} | {f"{SESSION}.{i}" for i in range(ck.MAX_CHUNKS)}
    response = HttpResponse()
    ck.set_chunked(response, spec, "new", jar)
    assert len(response.cookies) == ck.MAX_CHUNKS + 1
    assert response.cookies[SESSION].value == "new"


def test_the_cap_is_sixteen_chunks_as_documented():
    # docs/sessions.md and docs/security.md promise 16: a set of 16 is read, 17 is not.
    sixteen = {f"{SESSION}.{i}": chr(ord("a") + i) for i in range(16)}
    assert ck.read_chunked(sixteen, SESSION) == "abcdefghijklmnop"
    seventeen = {**sixteen, f"{SESSION}.16": "q"}
    assert ck.read_chunked(seventeen, SESSION) is None


def test_a_cookie_of_another_name_with_digits_at_the_chunk_position_is_no_chunk():
    # Same length as "<name>." and digits after it, but another name.
    other = "x" * len(SESSION + ".")
    assert ck.read_chunked({f"{SESSION}.0": "a", f"{other}1": "b"}, SESSION) == "a"
    assert ck.has_chunked({f"{other}0": "b"}, SESSION) is False


@pytest.mark.parametrize(
    ("jar", "expected"),
    [
        ({SESSION: "v"}, True),
        ({f"{SESSION}.0": "v"}, True),
        ({f"{SESSION}.3": "v"}, True),
        ({f"{SESSION}.@": "v"}, False),
        ({f"{SESSION}.01": "v"}, False),
        ({f"{SESSION}-old": "v"}, False),
        ({"other": "v"}, False),
        ({}, False),
    ],
)
def test_has_chunked(jar, expected):
    assert ck.has_chunked(jar, SESSION) is expected
