"""Signed access tokens (``WEBAUTH["tokens"]``): the key set, minting, the JWKS and
the Python verifier (docs/tokens.md).

A token is minted for a live session by ``GET /auth/token`` (the cookie, or a
bearer token) and ``POST /auth/app/access-token``, signed by the first key, and
checked here by :class:`webauth.tokens.Verifier` against the JWKS the site
serves, as another service would. Hostile tokens (``alg`` confusion, ``none``,
unknown ``kid``, oversized) are refused with a reason and never a crash.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from freezegun import freeze_time
from jwcrypto import jwk, jws

from webauth.conf import build_config, get_config
from webauth.test import session_cookie_for
from webauth.tokens import InvalidToken, Verifier
from webauth.tokens.keys import KeyProblem, generate, public_jwks, read_key, read_keys

pytestmark = pytest.mark.django_db

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
COOKIE = "authjs.session-token"
ADAPTER = "webauth.adapters.django.DjangoAdapter"
API = "https://api.example.com"
ISSUER = "http://testserver/auth"

KEY = generate("ES256", kid="key-1").export(private_key=True)
OLD = generate("EdDSA", kid="key-0")


def configure(settings, strategy="jwt", tokens=None, **extra):
    settings.WEBAUTH = {
        "secret": SECRET,
        "providers": ["webauth.providers.DjangoCredentials"],
        "bearer": True,
        "tokens": tokens or {"keys": [KEY], "audiences": [API, "billing"]},
        **(
            {"adapter": ADAPTER, "session": {"strategy": "database"}}
            if strategy == "database"
            else {}
        ),
        **extra,
    }


@pytest.fixture(params=["jwt", "database"])
def strategy(request, settings):
    configure(settings, request.param)
    return request.param


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", email="alice@example.com", password="pw")


def signed_in(user):
    client = Client()
    name, value = session_cookie_for(user)
    client.cookies[name] = value
    return client, value


def jwks(client=None):
    response = (client or Client()).get("/auth/.well-known/jwks.json")
    assert response.status_code == 200
    return response.json()


def verifier(document, audience=API, **options):
    return Verifier(issuer=ISSUER, audience=audience, jwks=document, **options)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def parts(token):
    header, payload, _ = token.split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    return (
        json.loads(base64.urlsafe_b64decode(pad(header))),
        json.loads(base64.urlsafe_b64decode(pad(payload))),
    )


# -- minting ----------------------------------------------------------------------------------
def test_a_token_for_the_session_verifies_against_the_jwks(strategy, alice):
    client, _ = signed_in(alice)
    response = client.get("/auth/token", {"audience": API})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 300
    assert body["audience"] == API
    claims = verifier(jwks()).verify(body["access_token"])
    assert claims["sub"] == str(alice.pk)
    assert claims["iss"] == ISSUER
    assert claims["aud"] == API
    assert claims["exp"] - claims["iat"] == 300
    assert isinstance(claims["jti"], str) and len(claims["jti"]) >= 22
    assert isinstance(claims["sid"], str) and len(claims["sid"]) == 22
    header, _ = parts(body["access_token"])
    assert header == {"alg": "ES256", "kid": "key-1", "typ": "at+jwt"}


def test_the_sid_is_stable_for_a_session_and_never_its_token(strategy, alice):
    client, raw = signed_in(alice)
    first = parts(client.get("/auth/token", {"audience": API}).json()["access_token"])[1]
    second = parts(client.get("/auth/token", {"audience": "billing"}).json()["access_token"])[1]
    assert first["sid"] == second["sid"]
    assert first["jti"] != second["jti"]
    assert raw not in json.dumps(first)
    with freeze_time(datetime.now(UTC) + timedelta(seconds=5)):  # another sign-in, later
        other, _ = signed_in(alice)
        third = parts(other.get("/auth/token", {"audience": API}).json()["access_token"])[1]
    assert third["sid"] != first["sid"]


def test_no_session_no_token(strategy):
    response = Client().get("/auth/token", {"audience": API})
    assert response.status_code == 401
    assert response.json() == {"error": "SessionRequired"}
    assert "WWW-Authenticate" not in response


def test_an_unknown_audience_is_refused(strategy, alice):
    client, _ = signed_in(alice)
    for asked in ("https://evil.example", "API", API.upper(), "x" * 5000, ""):
        response = client.get("/auth/token", {"audience": asked})
        assert response.status_code == 400, asked
        assert response.json()["error"] == "InvalidAudience"
    assert client.get("/auth/token").status_code == 400  # two audiences: one must be named


def test_one_audience_needs_no_asking(settings, alice):
    configure(settings, tokens={"keys": [KEY], "audiences": [API]})
    client, _ = signed_in(alice)
    body = client.get("/auth/token").json()
    assert parts(body["access_token"])[1]["aud"] == API


def test_a_bearer_client_gets_one_by_header_and_by_the_app_route(strategy, alice):
    _, raw = signed_in(alice)
    app = Client(headers={"Authorization": f"Bearer {raw}"})
    by_get = app.get("/auth/token", {"audience": API})
    assert by_get.status_code == 200
    by_post = app.post(
        "/auth/app/access-token", {"audience": "billing"}, content_type="application/json"
    )
    assert by_post.status_code == 200
    claims = verifier(jwks(), audience="billing").verify(by_post.json()["access_token"])
    assert claims["sub"] == str(alice.pk)
    refused = Client(headers={"Authorization": "Bearer nonsense"}).post(
        "/auth/app/access-token", {"audience": API}, content_type="application/json"
    )
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"].startswith("Bearer")


def test_the_token_callback_adds_claims_but_cannot_change_webauths(settings, alice):
    seen = {}

    def token(*, token, user, session, audience):
        seen.update(user=user, session=session, audience=audience)
        return {**token, "roles": ["admin"], "exp": token["exp"] + 10**6, "aud": "elsewhere"}

    configure(settings, callbacks={"token": token})
    client, _ = signed_in(alice)
    claims = verifier(jwks()).verify(
        client.get("/auth/token", {"audience": API}).json()["access_token"]
    )
    assert claims["roles"] == ["admin"]
    assert claims["aud"] == API
    assert claims["exp"] - claims["iat"] == 300
    assert seen["user"] == alice
    assert seen["audience"] == API
    assert seen["session"]["user"]["email"] == "alice@example.com"


def test_a_callback_that_returns_no_claims_is_a_500_and_no_token(settings, alice, caplog):
    configure(settings, callbacks={"token": lambda **kw: None})
    client, _ = signed_in(alice)
    response = client.get("/auth/token", {"audience": API})
    assert response.status_code == 500
    assert "access_token" not in response.json()


def test_tokens_off_is_404_everywhere(settings, alice):
    configure(settings)
    settings.WEBAUTH = {**settings.WEBAUTH, "tokens": None}
    client, _ = signed_in(alice)
    for path in (
        "/auth/token",
        "/auth/.well-known/jwks.json",
        "/auth/.well-known/openid-configuration",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.json() == {"error": "UnknownAction"}


def test_other_methods_are_405(strategy):
    assert Client().post("/auth/token").status_code == 405
    assert Client().post("/auth/.well-known/jwks.json").status_code == 405


# -- the JWKS and the metadata ----------------------------------------------------------------
def test_the_jwks_publishes_public_halves_with_cache_headers(settings):
    configure(settings, tokens={"keys": [KEY, OLD.export(private_key=True)], "audiences": [API]})
    response = Client().get("/auth/.well-known/jwks.json")
    assert response["Cache-Control"] == "public, max-age=300"
    keys = response.json()["keys"]
    assert [k["kid"] for k in keys] == ["key-1", "key-0"]
    assert [k["alg"] for k in keys] == ["ES256", "EdDSA"]
    for key in keys:
        assert key["use"] == "sig"
        assert "d" not in key
    assert not any(jwk.JWK(**k).has_private for k in keys)


def test_the_metadata_names_the_issuer_and_the_jwks(strategy):
    document = Client().get("/auth/.well-known/openid-configuration").json()
    assert document["issuer"] == ISSUER
    assert document["jwks_uri"] == "http://testserver/auth/.well-known/jwks.json"
    assert document["id_token_signing_alg_values_supported"] == ["ES256"]


def test_a_configured_issuer_is_the_tokens_iss(settings, alice):
    configure(
        settings, tokens={"keys": [KEY], "audiences": [API], "issuer": "https://id.example.com/"}
    )
    client, _ = signed_in(alice)
    token = client.get("/auth/token").json()["access_token"]
    assert parts(token)[1]["iss"] == "https://id.example.com"
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(token)
    assert refused.value.reason == "issuer"


def test_rotation_old_tokens_verify_until_their_key_is_removed(settings, alice):
    old_private = OLD.export(private_key=True)
    configure(settings, tokens={"keys": [old_private], "audiences": [API]})
    client, _ = signed_in(alice)
    old_token = client.get("/auth/token").json()["access_token"]
    assert parts(old_token)[0]["kid"] == "key-0"
    # The new key first; the old one stays published.
    configure(settings, tokens={"keys": [KEY, json.loads(OLD.export_public())], "audiences": [API]})
    new_token = client.get("/auth/token").json()["access_token"]
    assert parts(new_token)[0]["kid"] == "key-1"
    both = verifier(jwks())
    assert both.verify(old_token)["sub"] == both.verify(new_token)["sub"] == str(alice.pk)
    # The old key removed: its tokens no longer verify.
    configure(settings, tokens={"keys": [KEY], "audiences": [API]})
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(old_token)
    assert refused.value.reason == "unknown_key"


# -- the key set ------------------------------------------------------------------------------
@pytest.mark.parametrize("alg", ["ES256", "ES384", "EdDSA", "RS256", "PS256"])
def test_each_algorithm_signs_and_verifies(settings, alice, alg):
    key = generate(alg).export(private_key=True)
    configure(settings, tokens={"keys": [key], "audiences": [API]})
    client, _ = signed_in(alice)
    token = client.get("/auth/token").json()["access_token"]
    assert parts(token)[0]["alg"] == alg
    assert verifier(jwks()).verify(token)["sub"] == str(alice.pk)


@pytest.mark.parametrize(
    "keys, problem",
    [
        ([], "non-empty list"),
        ("not a list", "non-empty list"),
        ([{"kty": "oct", "k": "c2VjcmV0"}], "shared secret"),
        ([json.loads(OLD.export_public())], "public key"),
        (["not a key"], "neither a JWK"),
        (["{not json"], "could not be read"),
        ([{"key": KEY, "alg": "HS256"}], "HS256"),
        ([{"key": KEY, "alg": "RS256"}], "cannot sign RS256"),
        ([KEY, KEY], "kid"),
    ],
)
def test_bad_keys_are_configuration_errors(settings, keys, problem):
    configure(settings, tokens={"keys": keys, "audiences": [API]})
    with pytest.raises(ImproperlyConfigured) as error:
        get_config()
    assert problem in str(error.value)
    assert KEY not in str(error.value)


def test_a_short_rsa_key_is_refused():
    small = jwk.JWK.generate(kty="RSA", size=1024)
    with pytest.raises(KeyProblem, match="1024 bits"):
        read_key(small)


def test_a_pem_key_is_read_and_its_kid_is_its_thumbprint():
    key = jwk.JWK.generate(kty="EC", crv="P-256")
    read = read_key(key.export_to_pem(private_key=True, password=None).decode())
    assert read.kid == key.thumbprint()
    assert read.alg == "ES256"
    assert read.can_sign


@pytest.mark.parametrize(
    "tokens, key",
    [
        ({"keys": [KEY]}, "tokens.audiences"),
        ({"keys": [KEY], "audiences": []}, "tokens.audiences"),
        ({"keys": [KEY], "audiences": [API], "max_age": 0}, "tokens.max_age"),
        ({"keys": [KEY], "audiences": [API], "max_age": 86401}, "tokens.max_age"),
        ({"keys": [KEY], "audiences": [API], "issuer": "ftp://x"}, "tokens.issuer"),
        ({"keys": [KEY], "audiences": [API], "lifetime": 5}, "lifetime"),
    ],
)
def test_bad_token_options_are_configuration_errors(tokens, key):
    with pytest.raises(ImproperlyConfigured) as error:
        build_config({"secret": SECRET, "tokens": tokens}, {}.get, warn=False)
    assert key in str(error.value)


def test_public_jwks_never_carries_a_private_member():
    keys = read_keys(
        [generate(alg).export(private_key=True) for alg in ("RS256", "ES256", "EdDSA")]
    )
    document = public_jwks(keys)
    private = {"d", "p", "q", "dp", "dq", "qi"}
    assert all(not private & set(k) for k in document["keys"])


# -- the verifier against hostile tokens ------------------------------------------------------
@pytest.fixture
def minted(strategy, alice):
    client, _ = signed_in(alice)
    return client.get("/auth/token", {"audience": API}).json()["access_token"]


def _resign(token, header=None, claims=None, key=None, alg=None):
    old_header, old_claims = parts(token)
    header = {**old_header, **(header or {})}
    claims = {**old_claims, **(claims or {})}
    signer = jws.JWS(json.dumps(claims).encode())
    signer.add_signature(key, alg=alg or header["alg"], protected=json.dumps(header))
    return signer.serialize(compact=True)


def test_hs256_signed_with_the_public_key_is_refused(minted):
    public = jwks()["keys"][0]
    as_secret = jwk.JWK(kty="oct", k=b64(json.dumps(public).encode()))
    forged = _resign(minted, header={"alg": "HS256"}, key=as_secret)
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(forged)
    assert refused.value.reason == "algorithm"


def test_alg_none_is_refused(minted):
    header, claims = parts(minted)
    unsigned = (
        f"{b64(json.dumps({**header, 'alg': 'none'}).encode())}.{b64(json.dumps(claims).encode())}."
    )
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(unsigned)
    assert refused.value.reason in ("malformed", "algorithm")
    with_sig = unsigned + "c2ln"
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(with_sig)
    assert refused.value.reason == "algorithm"


def test_a_token_signed_by_another_key_with_our_kid_is_refused(minted):
    stranger = jwk.JWK.generate(kty="EC", crv="P-256")
    forged = _resign(minted, claims={"sub": "1"}, key=stranger)
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(forged)
    assert refused.value.reason == "signature"


def test_a_changed_claim_breaks_the_signature(minted):
    header, _payload, signature = minted.split(".")
    claims = parts(minted)[1]
    changed = f"{header}.{b64(json.dumps({**claims, 'sub': '999'}).encode())}.{signature}"
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(changed)
    assert refused.value.reason == "signature"


@pytest.mark.parametrize(
    "kid", ["../../etc/passwd", "https://evil.example/jwks.json", "", "k" * 500, 7, None]
)
def test_a_kid_outside_the_set_is_refused(minted, kid):
    _header, payload, signature = minted.split(".")
    claims_header = {**parts(minted)[0], "kid": kid}
    tampered = f"{b64(json.dumps(claims_header).encode())}.{payload}.{signature}"
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(tampered)
    assert refused.value.reason == "unknown_key"


@pytest.mark.parametrize(
    "token",
    ["", "a.b", "a.b.c.d", "x" * 9000, "..", "!!!.###.$$$", 42, None, "eyJhbGciOiJFUzI1NiJ9.e30."],
)
def test_malformed_tokens_are_refused_never_raised_otherwise(strategy, token):
    with pytest.raises(InvalidToken):
        verifier(jwks()).verify(token)


def test_another_audience_is_refused(minted):
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks(), audience="billing").verify(minted)
    assert refused.value.reason == "audience"


def test_an_expired_token_is_refused_after_the_leeway(minted):
    claims = parts(minted)[1]
    check = verifier(jwks(), leeway=30)
    assert check.verify(minted, now=claims["exp"] + 29)["sub"] == claims["sub"]
    with pytest.raises(InvalidToken) as refused:
        check.verify(minted, now=claims["exp"] + 30)
    assert refused.value.reason == "expired"
    with pytest.raises(InvalidToken) as refused:
        check.verify(minted, now=claims["iat"] - 31)
    assert refused.value.reason == "not_yet_valid"


def test_a_token_of_another_type_is_refused(minted, settings):
    key = jwk.JWK(**json.loads(KEY))
    as_id_token = _resign(minted, header={"typ": "JWT"}, key=key)
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(as_id_token)
    assert refused.value.reason == "type"


def test_is_revoked_refuses_last(minted):
    sid = parts(minted)[1]["sid"]
    check = verifier(jwks(), is_revoked=lambda claims: claims["sid"] == sid)
    with pytest.raises(InvalidToken) as refused:
        check.verify(minted)
    assert refused.value.reason == "revoked"


def test_the_verifier_fetches_the_jwks_and_again_for_an_unknown_kid(minted):
    fetched = []
    documents = [{"keys": []}, jwks()]

    def fetch(url):
        fetched.append(url)
        return documents[min(len(fetched) - 1, 1)]

    check = Verifier(
        issuer=ISSUER, audience=API, jwks_url="https://site/jwks", fetch=fetch, refetch_interval=0
    )
    assert check.verify(minted)["aud"] == API  # first set lacks the kid: fetched again
    assert fetched == ["https://site/jwks", "https://site/jwks"]
    check.verify(minted)
    assert len(fetched) == 2  # cached now


def test_unknown_kids_do_not_hammer_the_jwks(minted):
    fetched = []

    def fetch(url):
        fetched.append(url)
        return jwks()

    check = Verifier(issuer=ISSUER, audience=API, jwks_url="https://site/jwks", fetch=fetch)
    _header, payload, signature = minted.split(".")
    for n in range(20):
        header = b64(json.dumps({**parts(minted)[0], "kid": f"k{n}"}).encode())
        made_up = f"{header}.{payload}.{signature}"
        with pytest.raises(InvalidToken):
            check.verify(made_up)
    assert len(fetched) <= 2


def test_an_unreachable_jwks_is_a_refusal_not_a_crash(minted):
    def fetch(url):
        raise OSError("connection refused")

    check = Verifier(issuer=ISSUER, audience=API, jwks_url="https://site/jwks", fetch=fetch)
    with pytest.raises(InvalidToken) as refused:
        check.verify(minted)
    assert refused.value.reason == "jwks_unavailable"


# -- manage.py webauth_tokenkey ------------------------------------------------------------------
@pytest.mark.parametrize("alg", ["ES256", "EdDSA", "RS256"])
def test_the_command_prints_a_key_the_settings_accept(settings, alice, alg):
    from io import StringIO

    from django.core.management import call_command

    out, err = StringIO(), StringIO()
    call_command("webauth_tokenkey", "--alg", alg, stdout=out, stderr=err)
    printed = out.getvalue().strip()
    assert "\n" not in printed  # one line: fits an environment variable
    (key,) = read_keys([printed])
    assert key.alg == alg and key.can_sign
    assert key.kid.startswith(datetime.now(UTC).strftime("%Y-%m-%d-"))
    assert "WEBAUTH_TOKEN_KEY" in err.getvalue() and key.kid in err.getvalue()
    assert printed not in err.getvalue()  # the key itself only on standard output
    # And it signs tokens the JWKS verifies.
    configure(settings, tokens={"keys": [printed], "audiences": [API]})
    client, _ = signed_in(alice)
    token = client.get("/auth/token").json()["access_token"]
    assert verifier(jwks()).verify(token)["sub"] == str(alice.pk)


def test_the_command_takes_a_kid_and_refuses_a_bad_one():
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("webauth_tokenkey", "--kid", "2027-01", stdout=out, stderr=StringIO())
    assert json.loads(out.getvalue())["kid"] == "2027-01"
    for bad in ("", "x" * 101, "a\nb"):
        with pytest.raises(CommandError, match="--kid"):
            call_command("webauth_tokenkey", "--kid", bad, stdout=StringIO(), stderr=StringIO())


# -- hostile requests and headers -----------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        {"audience": 5},
        {"audience": [API]},
        {"audience": {"x": API}},
        {"audience": None, "extra": "x" * 3000},
        {"audience": "https://evil.example"},
    ],
)
def test_the_app_route_refuses_audiences_of_the_wrong_kind(strategy, alice, body):
    _, raw = signed_in(alice)
    app = Client(headers={"Authorization": f"Bearer {raw}"})
    response = app.post("/auth/app/access-token", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "InvalidAudience"


@pytest.mark.parametrize("raw_body", [b"[1, 2]", b'"x"', b"{", b"\xff\xfe", b"null"])
def test_the_app_route_refuses_a_body_that_is_no_object(strategy, alice, raw_body):
    _, raw = signed_in(alice)
    app = Client(headers={"Authorization": f"Bearer {raw}"})
    response = app.post("/auth/app/access-token", raw_body, content_type="application/json")
    assert response.status_code in (400, 401)
    assert response.status_code != 500
    assert "access_token" not in response.content.decode("utf-8", "replace")


def test_two_audiences_in_the_query_take_the_last_and_mint_one(strategy, alice):
    client, _ = signed_in(alice)
    response = client.get(f"/auth/token?audience=https://evil.example&audience={API}")
    assert response.status_code == 200
    assert parts(response.json()["access_token"])[1]["aud"] == API


def test_a_jku_or_x5u_in_the_header_is_never_fetched(minted):
    fetched = []
    header = {**parts(minted)[0], "jku": "https://evil.example/jwks", "x5u": "https://evil/x"}
    _h, payload, signature = minted.split(".")
    tampered = f"{b64(json.dumps(header).encode())}.{payload}.{signature}"
    check = Verifier(
        issuer=ISSUER,
        audience=API,
        jwks_url="https://site/jwks",
        fetch=lambda url: fetched.append(url) or jwks(),
    )
    with pytest.raises(InvalidToken) as refused:
        check.verify(tampered)  # the header changed: its signature no longer holds
    assert refused.value.reason == "signature"
    assert fetched == ["https://site/jwks"]  # only the configured address


def test_a_critical_header_is_refused(minted):
    header = {**parts(minted)[0], "crit": ["exp"]}
    _h, payload, signature = minted.split(".")
    tampered = f"{b64(json.dumps(header).encode())}.{payload}.{signature}"
    with pytest.raises(InvalidToken) as refused:
        verifier(jwks()).verify(tampered)
    assert refused.value.reason == "malformed"
