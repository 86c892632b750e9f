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
