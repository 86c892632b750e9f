"""Auth.js's double-submit CSRF token (protocol section 3), against the real @auth/core."""

import json
from pathlib import Path

import pytest

from webauth import cookies as ck
from webauth.csrf import check_csrf

VECTORS = json.loads((Path(__file__).parent / "data/authjs-vectors.json").read_text())


# -- CSRF vectors from the real @auth/core --------------------------------------------


@pytest.mark.parametrize("vector", VECTORS["csrf"]["vectors"])
def test_csrf_vectors(vector):
    value = vector.get("cookie_value_decoded") or vector.get("python_made_cookie_decoded")
    secret = vector["secret"]
    if isinstance(secret, list):
        secret = ",".join(secret)
    state = check_csrf(value, vector["csrfToken"], is_post=True, secret=secret)
    expected = vector.get("node_trusted", True)
    assert (state.cookie is None) is expected
    assert state.verified is expected
    if "set_cookie" in vector:
        name, _, rest = vector["set_cookie"].partition("=")
        assert name == vector["cookie_name"]
        assert ck.decode_value(rest.split(";")[0]) == value


def test_csrf_get_is_never_verified():
    from webauth.csrf import new_csrf_cookie_value

    token, cookie = new_csrf_cookie_value("s")
    assert check_csrf(cookie, token, is_post=False, secret="s").verified is False
    assert check_csrf(cookie, token, is_post=True, secret="s").verified is True
    assert check_csrf(cookie, token, is_post=True, secret="other").verified is False
    assert check_csrf(cookie, None, is_post=True, secret="s").verified is False
    assert check_csrf(cookie, ["x"], is_post=True, secret="s").verified is False


# -- what a forged or planted token must not achieve ---------------------------------------

SECRET = "csrf-test-secret"


def test_a_fresh_token_is_64_hex_characters():
    from webauth.csrf import new_csrf_cookie_value

    token, cookie = new_csrf_cookie_value(SECRET)
    assert len(token) == 64 and int(token, 16) >= 0
    assert cookie.startswith(token + "|") and len(cookie) == 64 + 1 + 64
    assert new_csrf_cookie_value(SECRET)[0] != token


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t[:-1],  # a prefix of the token
        lambda t: t[:32],
        lambda t: t + "0",  # the token and more
        lambda t: t[:-1] + ("0" if t[-1] != "0" else "1"),  # the last character wrong
        lambda t: ("0" if t[0] != "0" else "1") + t[1:],  # the first character wrong
        lambda t: t.upper(),
        lambda t: "",
    ],
)
def test_only_the_exact_token_verifies(change):
    from webauth.csrf import new_csrf_cookie_value

    token, cookie = new_csrf_cookie_value(SECRET)
    body = change(token)
    assert body != token
    state = check_csrf(cookie, body, is_post=True, secret=SECRET)
    assert state.verified is False
    # The cookie itself is still good: no new one is issued.
    assert state.cookie is None and state.token == token


def test_without_a_cookie_a_new_one_is_issued_and_nothing_verifies():
    for missing in (None, ""):
        state = check_csrf(missing, "anything", is_post=True, secret=SECRET)
        assert state.verified is False
        token, _, digest = state.cookie.partition("|")
        assert token == state.token and len(digest) == 64


@pytest.mark.parametrize("value", ["no-separator", "|", "abc|", "|abc", "a|b|c"])
def test_a_cookie_we_did_not_issue_is_replaced(value):
    state = check_csrf(value, value.partition("|")[0], is_post=True, secret=SECRET)
    assert state.verified is False
    assert state.cookie is not None and state.token != value.partition("|")[0]


def test_an_empty_token_with_a_valid_hash_is_not_a_token():
    # "|sha256(secret)" is a correct hash of the empty token: anyone who could guess
    # the secret's hash form must still not get an empty token verified by an empty body.
    import hashlib

    planted = "|" + hashlib.sha256(SECRET.encode()).hexdigest()
    state = check_csrf(planted, "", is_post=True, secret=SECRET)
    assert state.verified is False and state.cookie is not None and state.token


def test_a_token_that_was_never_sent_cannot_match():
    from webauth.csrf import CsrfState, token_matches

    # A token made up for this response (cookie to set) was never seen by the client,
    # even if the body happens to carry the same string.
    made_up = CsrfState(token="t" * 64, cookie="t" * 64 + "|x", verified=False)
    assert token_matches(made_up, "t" * 64) is False
    issued = CsrfState(token="t" * 64, cookie=None, verified=False)
    assert token_matches(issued, "t" * 64) is True
    assert token_matches(issued, "t" * 63) is False
