"""ID token validation (webauth.oauth.idtoken), claim by claim, without a browser.

Each test changes one thing in an otherwise valid token, so that any check
dropped or loosened in the validator makes exactly one test fail. Tokens are
signed with jwcrypto; RS256 keys come from a JWKS served over real HTTP.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.cache import cache
from freezegun import freeze_time
from jwcrypto import jwk, jws

from webauth.conf import get_config
from webauth.oauth.idtoken import CLOCK_TOLERANCE, MAX_AGE_OF_IAT, InvalidIDToken, validate_id_token
from webauth.providers.oauth import OIDC

CLIENT_ID = "the-client"
CLIENT_SECRET = "the-client-secret-0123456789abcdef"
ISSUER = "https://idp.example"
NOW = 1_800_000_000


@pytest.fixture(autouse=True)
def _clean_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def frozen():
    with freeze_time(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(NOW))):
        yield


def provider(**options: Any) -> OIDC:
    defaults = {"client_secret": CLIENT_SECRET, "id_token_signing_algs": ("HS256",)}
    return OIDC(id="example", issuer=ISSUER, client_id=CLIENT_ID, **{**defaults, **options})


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())  # NOW under the frozen clock
    base = {
        "iss": ISSUER,
        "aud": CLIENT_ID,
        "sub": "user-1",
        "exp": now + 300,
        "iat": now,
        "nonce": "n-1",
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()


def hs_token(payload: Any, *, secret: str = CLIENT_SECRET, header: dict | None = None) -> str:
    key = jwk.JWK.from_password(secret)
    body = payload if isinstance(payload, str | bytes) else json.dumps(payload)
    token = jws.JWS(body)
    token.add_signature(key, alg="HS256", protected=json.dumps(header or {"alg": "HS256"}))
    return token.serialize(compact=True)


def validate(token: str, prov: OIDC | None = None, *, nonce: str | None = "n-1", **kw: Any):
    return validate_id_token(
        get_config(),
        prov or provider(),
        token,
        issuer=kw.get("issuer", ISSUER),
        jwks_uri=kw.get("jwks_uri"),
        nonce=nonce,
    )


def refused(token: str, prov: OIDC | None = None, **kw: Any) -> str:
    with pytest.raises(InvalidIDToken) as info:
        validate(token, prov, **kw)
    return str(info.value)


# -- a valid token, and the shape of the token -------------------------------------------


def test_a_valid_token_gives_its_claims():
    assert validate(hs_token(claims(name="Ida"))) == claims(name="Ida")


def test_a_token_signed_with_another_secret_is_refused():
    assert "signature" in refused(hs_token(claims(), secret="not-the-client-secret-0123456789"))


@pytest.mark.parametrize("token", ["", "not-a-jws", "a.b", "a.b.c.d", "e30.e30.AAAA"])
def test_what_is_not_a_jws_is_refused(token):
    refused(token)


def test_a_token_with_several_signatures_is_refused():
    token = jws.JWS(json.dumps(claims()))
    for secret in (CLIENT_SECRET, "second-secret-0123456789abcdef012"):
        token.add_signature(
            jwk.JWK.from_password(secret), alg="HS256", protected=json.dumps({"alg": "HS256"})
        )
    assert "several signatures" in refused(token.serialize())


def test_an_algorithm_the_provider_does_not_use_is_refused():
    # An HS256 token signed with the (public) client secret, for a provider that signs with RS256.
    message = refused(hs_token(claims()), provider(id_token_signing_algs=("RS256",)))
    assert "algorithm 'HS256'" in message


@pytest.mark.parametrize("payload", ["not json", "[1, 2]", '"sub"', "null"])
def test_a_payload_that_is_not_a_json_object_is_refused(payload):
    refused(hs_token(payload))


# -- iss -----------------------------------------------------------------------------------


@pytest.mark.parametrize("iss", ["https://evil.example", ISSUER + "/", "", None, _DROP])
def test_the_issuer_must_be_the_providers(iss):
    assert "issuer" in refused(hs_token(claims(iss=iss)))


def test_without_a_known_issuer_iss_is_not_compared():
    # A provider configured with endpoints only: nothing to compare iss with.
    token = hs_token(claims(iss="https://whoever.example"))
    assert validate(token, issuer=None)["iss"] == "https://whoever.example"


# -- aud and azp -----------------------------------------------------------------------------


@pytest.mark.parametrize("aud", ["another-client", "", [], ["another-client"], None, _DROP])
def test_a_token_for_another_client_is_refused(aud):
    assert "(aud)" in refused(hs_token(claims(aud=aud)))


def test_an_audience_list_with_only_this_client_needs_no_azp():
    assert validate(hs_token(claims(aud=[CLIENT_ID])))["aud"] == [CLIENT_ID]


def test_several_audiences_need_azp_naming_this_client():
    aud = [CLIENT_ID, "another-client"]
    assert "(azp)" in refused(hs_token(claims(aud=aud)))
    assert "(azp)" in refused(hs_token(claims(aud=aud, azp="another-client")))
    assert validate(hs_token(claims(aud=aud, azp=CLIENT_ID)))["azp"] == CLIENT_ID


@pytest.mark.parametrize("azp", ["another-client", "", 0])
def test_an_azp_naming_another_client_is_refused(azp):
    assert "(azp)" in refused(hs_token(claims(azp=azp)))


def test_an_azp_naming_this_client_is_accepted():
    assert validate(hs_token(claims(azp=CLIENT_ID)))["azp"] == CLIENT_ID


# -- exp and iat ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exp", "accepted"),
    [
        (NOW - CLOCK_TOLERANCE, True),  # expired, but within the clock tolerance
        (NOW - CLOCK_TOLERANCE - 1, False),
        (NOW - CLOCK_TOLERANCE + 0.5, True),
        (NOW - 86400, False),
    ],
)
def test_exp_with_clock_tolerance(frozen, exp, accepted):
    token = hs_token(claims(exp=exp))
    if accepted:
        assert validate(token)["exp"] == exp
    else:
        assert "expired" in refused(token)


@pytest.mark.parametrize("exp", [_DROP, None, "1900000000", [2_000_000_000]])
def test_exp_must_be_a_number(exp):
    assert "expired" in refused(hs_token(claims(exp=exp)))


@pytest.mark.parametrize(
    ("iat", "accepted"),
    [
        (NOW + CLOCK_TOLERANCE, True),  # ahead, within the tolerance
        (NOW + CLOCK_TOLERANCE + 1, False),
        (NOW - MAX_AGE_OF_IAT, True),  # an hour old: still fresh
        (NOW - MAX_AGE_OF_IAT - 1, False),
    ],
)
def test_iat_neither_in_the_future_nor_too_old(frozen, iat, accepted):
    token = hs_token(claims(iat=iat, exp=NOW + 3600))
    if accepted:
        assert validate(token)["iat"] == iat
    else:
        assert "(iat)" in refused(token)


@pytest.mark.parametrize("iat", [_DROP, None, str(NOW)])
def test_iat_must_be_a_number(iat):
    assert "(iat)" in refused(hs_token(claims(iat=iat)))


def test_the_limits_are_what_the_docs_say():
    assert (CLOCK_TOLERANCE, MAX_AGE_OF_IAT) == (60, 3600)


# -- sub -------------------------------------------------------------------------------------


@pytest.mark.parametrize("sub", [_DROP, "", None, 42, ["user-1"], {"id": "user-1"}])
def test_the_subject_must_be_a_non_empty_string(sub):
    assert "(sub)" in refused(hs_token(claims(sub=sub)))


# -- nonce -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["n-2", "", "n-1 ", None, _DROP])
def test_the_nonce_must_be_the_one_sent(value):
    assert "nonce does not match" in refused(hs_token(claims(nonce=value)))


def test_an_unsolicited_nonce_is_refused():
    assert "did not send" in refused(hs_token(claims()), nonce=None)
    assert "did not send" in refused(hs_token(claims(nonce=None)), nonce=None)


def test_without_a_nonce_sent_none_is_needed():
    assert "nonce" not in validate(hs_token(claims(nonce=_DROP)), nonce=None)


# -- RS256 against the issuer's JWKS ---------------------------------------------------------


class _JWKSServer:
    """A JWKS endpoint on a real socket; ``keys`` is what it serves right now."""

    def __init__(self) -> None:
        self.keys: list[jwk.JWK] = []
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests += 1
                body = json.dumps(
                    {"keys": [json.loads(k.export_public()) for k in owner.keys]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def _jwks_server_running():
    server = _JWKSServer()
    yield server
    server.close()


@pytest.fixture
def jwks_server(_jwks_server_running):
    _jwks_server_running.keys, _jwks_server_running.requests = [], 0
    return _jwks_server_running


@functools.cache
def rsa_key(kid: str, label: str = "") -> jwk.JWK:
    """An RSA key named *kid* (one per *label*: generating them is slow)."""
    return jwk.JWK.generate(kty="RSA", size=2048, kid=kid)


def rs_token(key: jwk.JWK, payload: dict[str, Any], kid: str | None = None) -> str:
    header = {"alg": "RS256"}
    if kid is not None:
        header["kid"] = kid
    token = jws.JWS(json.dumps(payload))
    token.add_signature(key, alg="RS256", protected=json.dumps(header))
    return token.serialize(compact=True)


RS = {"id_token_signing_algs": ("RS256",)}


def test_rs256_token_verified_with_the_jwks(jwks_server):
    key = rsa_key("k1")
    jwks_server.keys = [key]
    assert validate(rs_token(key, claims(), "k1"), provider(**RS), jwks_uri=jwks_server.url)
    assert jwks_server.requests == 1
    # The JWKS is cached: a second token costs no request.
    validate(rs_token(key, claims(), "k1"), provider(**RS), jwks_uri=jwks_server.url)
    assert jwks_server.requests == 1


def test_a_rotated_key_is_fetched_once(jwks_server):
    old, new = rsa_key("old"), rsa_key("new")
    jwks_server.keys = [old]
    validate(rs_token(old, claims(), "old"), provider(**RS), jwks_uri=jwks_server.url)
    jwks_server.keys = [new]
    validate(rs_token(new, claims(), "new"), provider(**RS), jwks_uri=jwks_server.url)
    assert jwks_server.requests == 2


def test_a_key_the_issuer_does_not_publish_is_refused(jwks_server):
    jwks_server.keys = [rsa_key("k1")]
    forged = rsa_key("k1", "forged")  # same kid, another key
    message = refused(rs_token(forged, claims(), "k1"), provider(**RS), jwks_uri=jwks_server.url)
    assert "no key of the issuer" in message
    assert jwks_server.requests == 2  # the cached set, then one fresh fetch


def test_a_token_without_kid_is_tried_against_every_key(jwks_server):
    keys = [rsa_key("a"), rsa_key("b")]
    jwks_server.keys = keys
    token = rs_token(keys[1], claims())
    assert validate(token, provider(**RS), jwks_uri=jwks_server.url)["sub"] == "user-1"
    assert jwks_server.requests == 1


def test_a_kid_selects_the_key(jwks_server):
    key = rsa_key("a")
    jwks_server.keys = [key]
    # The right key, but the token names another kid: no key of that kid exists.
    refused(rs_token(key, claims(), "b"), provider(**RS), jwks_uri=jwks_server.url)


def test_without_a_jwks_uri_nothing_verifies():
    key = rsa_key("k1")
    assert "no jwks_uri" in refused(rs_token(key, claims(), "k1"), provider(**RS), jwks_uri=None)


def test_claims_are_checked_after_a_good_rs256_signature(jwks_server):
    key = rsa_key("k1")
    jwks_server.keys = [key]
    token = rs_token(key, claims(aud=[CLIENT_ID, "other"]), "k1")
    assert "(azp)" in refused(token, provider(**RS), jwks_uri=jwks_server.url)


# -- HS256: the client secret is the key -----------------------------------------------------


def test_the_error_is_a_callback_route_error():
    assert InvalidIDToken.type == "CallbackRouteError"


@pytest.mark.parametrize(
    "secret",
    [
        "client-secret-0123456789abcdefghijkW",  # base64url ends in "X", no padding
        "client-secret-0123456789abcdefghijk",  # one "=" of padding
        "client-secret-0123456789abcdefghijé",  # not ASCII
    ],
)
def test_any_client_secret_verifies_its_tokens(secret):
    token = hs_token(claims(), secret=secret)
    assert validate(token, provider(client_secret=secret))["sub"] == "user-1"
    refused(token, provider(client_secret=secret + "x"))


@pytest.mark.parametrize("forged_with", ["", "XX", "None"])
def test_without_a_client_secret_no_hs256_token_verifies(forged_with):
    import base64
    import hashlib
    import hmac

    def b64(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    signing_input = b64(b'{"alg":"HS256"}') + b"." + b64(json.dumps(claims()).encode())
    mac = hmac.new(forged_with.encode(), signing_input, hashlib.sha256).digest()
    token = (signing_input + b"." + b64(mac)).decode()
    refused(token, provider(client_secret=None))
