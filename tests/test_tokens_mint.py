"""webauth.tokens.mint in isolation: the claims it sets, what the ``token`` callback may
and may not change, and what it refuses to sign."""

from __future__ import annotations

import base64
import json

import pytest

from webauth.conf import build_config
from webauth.sessions.base import Assurance, SessionFacts
from webauth.tokens.keys import generate
from webauth.tokens.mint import TokenCallbackError, mint

pytestmark = pytest.mark.backend_independent

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
KEY = generate("ES256", kid="k").export(private_key=True)
NOW = 1_796_212_800


def config(callback=None, max_age=300):
    raw = {
        "secret": SECRET,
        "tokens": {"keys": [KEY], "audiences": ["api"], "max_age": max_age},
        **({"callbacks": {"token": callback}} if callback else {}),
    }
    return build_config(raw, lambda name: None)


def minted(cfg, facts=None, **kwargs):
    return mint(
        cfg,
        issuer="https://example.com/auth",
        user_id="42",
        audience="api",
        facts=facts or SessionFacts(sid="the-sid"),
        now=NOW,
        **kwargs,
    )


def payload_bytes(token):
    part = token.split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def test_the_registered_claims_and_the_life():
    made = minted(config(max_age=120))
    claims = json.loads(payload_bytes(made.token))
    assert claims == made.claims
    assert {k: claims[k] for k in ("iss", "sub", "aud", "iat", "exp", "sid")} == {
        "iss": "https://example.com/auth",
        "sub": "42",
        "aud": "api",
        "iat": NOW,
        "exp": NOW + 120,
        "sid": "the-sid",
    }
    assert made.expires_at == NOW + 120
    assert len(claims["jti"]) == 22  # 128 random bits in base64url
    assert "amr" not in claims and "auth_time" not in claims and "nbf" not in claims


def test_two_tokens_have_two_jtis():
    cfg = config()
    assert minted(cfg).claims["jti"] != minted(cfg).claims["jti"]


def test_the_session_s_methods_and_sign_in_time():
    facts = SessionFacts(
        sid="s", signed_in_at=NOW - 60.7, assurance=Assurance(amr=("pwd", "otp"), mfa_at=None)
    )
    claims = minted(config(), facts).claims
    assert claims["amr"] == ["pwd", "otp"]
    assert claims["auth_time"] == NOW - 61 and isinstance(claims["auth_time"], int)


def test_the_callback_adds_claims_and_cannot_touch_webauths():
    def callback(token, user, session, audience):
        return {
            # Named here, not read from REGISTERED_CLAIMS: the test must catch a
            # name missing from it.
            **dict.fromkeys(("iss", "sub", "aud", "exp", "iat", "nbf", "jti", "sid"), "forged"),
            "plan": "pro",
            "seen": sorted(token),
            "for": audience,
        }

    claims = minted(config(callback)).claims
    assert claims["plan"] == "pro" and claims["for"] == "api"
    assert claims["seen"] == sorted(["iss", "sub", "aud", "iat", "exp", "jti", "sid"])
    for name in ("iss", "sub", "aud", "iat", "exp", "jti", "sid"):
        assert claims[name] != "forged", name
    assert "nbf" not in claims  # a registered claim webauth does not set is dropped


@pytest.mark.parametrize("returned", [None, ["a"], "claims", 5])
def test_a_callback_that_returns_no_mapping_is_refused(returned):
    with pytest.raises(TokenCallbackError, match="must return a dict of claims"):
        minted(config(lambda **kw: returned))


@pytest.mark.parametrize("value", [{1, 2}, float("nan"), float("inf"), object()])
def test_claims_that_are_no_json_are_refused(value):
    with pytest.raises(TokenCallbackError, match="not JSON"):
        minted(config(lambda token, **kw: {**token, "bad": value}))


def test_text_is_signed_as_utf_8():
    made = minted(config(lambda token, **kw: {**token, "name": "Zoë"}))
    assert "Zoë".encode() in payload_bytes(made.token)
    assert b" " not in payload_bytes(made.token)  # compact separators
