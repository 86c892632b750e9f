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
