"""Cookie attributes as written on the wire: Domain, Path, SameSite, Expires, deletion.

(Chunk naming and order are tested in tests/test_cookies.py.)
"""

from datetime import UTC, datetime
from http.cookies import CookieError

import pytest
from django.http import HttpResponse
from freezegun import freeze_time

from webauth import cookies as ck
from webauth.conf import build_config

NOW = "2026-01-02 03:04:05"
IN_15_MIN = "Fri, 02 Jan 2026 03:19:05 GMT"


def config(**kw):
    return build_config({"secret": "s" * 40, **kw}, lambda name: None)


def spec_of(key, https=False, **options):
    cookies = {key: {"options": options}} if options else {}
    return ck.cookie_specs(config(cookies=cookies), https)[key]


def header(response, name):
    return response.cookies[name].OutputString()


def test_a_configured_domain_is_written_on_set_chunk_and_delete():
    spec = spec_of("session_token", domain=".site.example")
    assert spec.domain == ".site.example"
    response = HttpResponse()
    ck.set_cookie(response, spec, "v")
    assert "Domain=.site.example" in header(response, spec.name)
    response = HttpResponse()
    ck.set_chunked(response, spec, "v" * (ck.CHUNK_SIZE + 1), {})
    assert "Domain=.site.example" in header(response, spec.name + ".0")
    assert "Domain=.site.example" in header(response, spec.name + ".1")
    response = HttpResponse()
    ck.delete_cookie(response, spec)
    # A cookie set for a domain is only removed by a deletion for that domain.
    assert "Domain=.site.example" in header(response, spec.name)


def test_without_a_domain_none_is_written():
    response = HttpResponse()
    spec = spec_of("session_token")
    ck.set_cookie(response, spec, "v")
    assert "domain" not in header(response, spec.name).lower()


def test_path_same_site_and_http_only_overrides_are_written():
    spec = spec_of("session_token", path="/app", same_site="strict", http_only=False)
    response = HttpResponse()
    ck.set_cookie(response, spec, "v")
    text = header(response, spec.name)
    assert "Path=/app" in text and "SameSite=Strict" in text and "HttpOnly" not in text


def test_defaults_are_http_only_lax_root_path():
    spec = spec_of("session_token")
    assert (spec.http_only, spec.same_site, spec.path, spec.partitioned) == (
        True,
        "Lax",
        "/",
        False,
    )
    response = HttpResponse()
    ck.set_cookie(response, spec, "v")
    text = header(response, spec.name)
    assert "HttpOnly" in text and "SameSite=Lax" in text and "Path=/" in text
    assert "Secure" not in text and "Partitioned" not in text


def test_secure_cookies_say_so_and_can_be_turned_off():
    response = HttpResponse()
    spec = spec_of("session_token", secure=True)
    ck.set_cookie(response, spec, "v")
    assert "; Secure" in header(response, spec.name)
    assert spec_of("session_token", True, secure=False).secure is False


@freeze_time(NOW)
def test_short_lived_cookies_get_max_age_and_the_matching_expires():
    for key in ("state", "pkce_code_verifier", "webauthn_challenge"):
        response = HttpResponse()
        spec = spec_of(key)
        ck.set_cookie(response, spec, "v")
        morsel = response.cookies[spec.name]
        assert morsel["max-age"] == "900"
        assert morsel["expires"] == IN_15_MIN


@freeze_time(NOW)
def test_a_configured_max_age_sets_expires_from_it():
    spec = spec_of("callback_url", max_age=60)
    response = HttpResponse()
    ck.set_cookie(response, spec, "/x")
    assert response.cookies[spec.name]["max-age"] == "60"
    assert response.cookies[spec.name]["expires"] == "Fri, 02 Jan 2026 03:05:05 GMT"


@freeze_time(NOW)
def test_an_explicit_expiry_wins_and_session_cookies_have_no_max_age():
    expires = datetime(2026, 2, 1, 0, 0, 30, tzinfo=UTC)
    spec = spec_of("session_token")
    response = HttpResponse()
    ck.set_cookie(response, spec, "v", expires=expires)
    morsel = response.cookies[spec.name]
    assert morsel["expires"] == "Sun, 01 Feb 2026 00:00:30 GMT" and morsel["max-age"] == ""
    response = HttpResponse()
    ck.set_chunked(response, spec, "v", {}, expires=expires)
    assert response.cookies[spec.name]["expires"] == "Sun, 01 Feb 2026 00:00:30 GMT"
    # A check cookie given its expiry keeps it (and its Max-Age).
    response = HttpResponse()
    state = spec_of("state")
    ck.set_cookie(response, state, "v", expires=expires)
    assert response.cookies[state.name]["expires"] == "Sun, 01 Feb 2026 00:00:30 GMT"
    assert response.cookies[state.name]["max-age"] == "900"


def test_a_session_cookie_without_expiry_is_a_browser_session_cookie():
    response = HttpResponse()
    spec = spec_of("csrf_token")
    ck.set_cookie(response, spec, "t|h")
    assert response.cookies[spec.name]["expires"] == ""


def test_deleting_keeps_path_flags_and_empties_the_value():
    spec = spec_of("session_token", True, path="/app", same_site="none")
    response = HttpResponse()
    ck.delete_cookie(response, spec)
    morsel = response.cookies[spec.name]
    assert morsel.value == "" and morsel["max-age"] == "0"
    assert morsel["path"] == "/app" and morsel["samesite"] == "None" and morsel["secure"] is True
    response = HttpResponse()
    ck.delete_cookie(response, spec, name=spec.name + ".3")
    assert response.cookies[spec.name + ".3"]["max-age"] == "0"
    assert spec.name not in response.cookies


def test_another_name_keeps_the_specs_attributes():
    spec = spec_of("session_token", domain="site.example")
    response = HttpResponse()
    ck.set_cookie(response, spec, "a b", name="other-name")
    morsel = response.cookies["other-name"]
    assert morsel.coded_value == "a%20b" and morsel["domain"] == "site.example"
    assert spec.name not in response.cookies


def test_an_encoded_value_given_is_used_as_is():
    spec = spec_of("callback_url")
    response = HttpResponse()
    ck.set_cookie(response, spec, "/a b", coded="%2Fa%20b")
    assert header(response, spec.name).startswith("authjs.callback-url=%2Fa%20b;")
    response = HttpResponse()
    ck.set_cookie(response, spec, "/a b")
    assert header(response, spec.name).startswith("authjs.callback-url=%2Fa%20b;")


def test_a_name_no_cookie_can_have_is_refused_when_configured():
    with pytest.raises(CookieError):
        ck.CookieSpec(name="bad name;")
    with pytest.raises(CookieError):
        ck.set_cookie(HttpResponse(), spec_of("session_token"), "v", name="bad name;")


def test_a_name_override_replaces_the_prefixed_name():
    cfg = config(cookies={"csrf_token": {"name": "my-csrf"}})
    assert ck.cookie_specs(cfg, True)["csrf_token"].name == "my-csrf"
    assert ck.cookie_specs(cfg, True)["csrf_token"].secure is True


def test_decoding_only_when_percent_encoded():
    assert ck.decode_value("a+b") == "a+b"  # no "%": not even "+" is touched
    assert ck.decode_value("a%2Bb") == "a+b"
    assert ck.encode_value("abc-_.!~*'()") == "abc-_.!~*'()"
    assert ck.encode_value("a/b") == "a%2Fb"


def test_session_cookies_are_read_whole_before_chunks():
    cookies = {"authjs.session-token": "whole%20value", "authjs.session-token.0": "chunk"}
    assert ck.read_chunked(cookies, "authjs.session-token") == "whole value"
    assert ck.read_chunked({}, "authjs.session-token") is None
    assert ck.read_chunked({"authjs.session-token": ""}, "authjs.session-token") is None


def test_a_cookie_spec_defaults_to_auth_js_attributes():
    spec = ck.CookieSpec(name="my-cookie")
    assert (spec.http_only, spec.same_site, spec.path, spec.secure) == (True, "Lax", "/", False)
    assert (spec.domain, spec.max_age, spec.partitioned) == (None, None, False)
    response = HttpResponse()
    ck.set_cookie(response, spec, "v")
    assert header(response, "my-cookie") == "my-cookie=v; HttpOnly; Path=/; SameSite=Lax"


def test_flags_are_bare_attributes():
    # HttpOnly, Secure and Partitioned carry no value on the wire.
    spec = spec_of("session_token", True, partitioned=True)
    response = HttpResponse()
    ck.set_cookie(response, spec, "v")
    assert header(response, spec.name) == (
        "__Secure-authjs.session-token=v; HttpOnly; Partitioned; Path=/; SameSite=Lax; Secure"
    )


def test_cookie_specs_are_hashable_values():
    spec = spec_of("session_token")
    assert spec in {spec} and hash(spec) == hash(ck.CookieSpec(name=spec.name))


def test_each_chunk_carries_its_own_piece_on_the_wire():
    spec = spec_of("session_token")
    value = "a" * ck.CHUNK_SIZE + "b" * 10
    response = HttpResponse()
    ck.set_chunked(response, spec, value, {})
    assert header(response, spec.name + ".0").startswith(f"{spec.name}.0={'a' * ck.CHUNK_SIZE};")
    assert header(response, spec.name + ".1").startswith(f"{spec.name}.1={'b' * 10};")
