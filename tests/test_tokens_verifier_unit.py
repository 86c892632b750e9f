"""The Python verifier alone (:mod:`webauth.tokens.verifier`), as another service
uses it: each check at its edge (sizes, clock skew, the JWKS refetch timing, the
feed's paging), each refusal's ``reason``, and the JWKS fetched over real HTTP
from a local server. No Django and no site: tokens are signed here.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from jwcrypto import jwk, jws

from webauth.tokens import verifier as module
from webauth.tokens.keys import generate, public_jwks, read_key
from webauth.tokens.verifier import (
    MAX_JWKS_BYTES,
    MAX_TOKEN_LENGTH,
    InvalidToken,
    RevocationFeed,
    Verifier,
    verify,
)

ISSUER = "https://site.example/auth"
API = "https://api.example"
NOW = 1_700_000_000  # in the past: a token signed for it has expired by the clock
KEYS = {alg: generate(alg, kid=f"kid-{alg}") for alg in ("ES256", "EdDSA", "RS256")}
JWKS = public_jwks([read_key(k) for k in KEYS.values()])


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {"iss": ISSUER, "aud": API, "sub": "7", "iat": NOW, "exp": NOW + 300}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not ...}


def sign(payload: object = None, *, key: jwk.JWK | None = None, **header: object) -> str:
    key = key or KEYS["ES256"]
    protected = {"alg": key.get("alg"), "typ": "at+jwt", "kid": key.get("kid")} | header
    body = (
        payload
        if isinstance(payload, bytes)
        else json.dumps(claims() if payload is None else payload)
    )
    token = jws.JWS(body if isinstance(body, bytes) else body.encode())
    token.add_signature(key, alg=protected["alg"], protected=json.dumps(protected))
    return token.serialize(compact=True)


def unsigned(header: object) -> str:
    """A token with *header* and a junk signature: for checks made before the signature."""
    return f"{b64(json.dumps(header).encode())}.{b64(b'{}')}.{b64(b'sig')}"


def verifier(**options: object) -> Verifier:
    options.setdefault("jwks", JWKS)
    return Verifier(issuer=ISSUER, audience=API, **options)  # type: ignore[arg-type]


def reason(check, token: str, **kwargs: object) -> str:
    with pytest.raises(InvalidToken) as caught:
        check.verify(token, **kwargs)
    return caught.value.reason


# -- InvalidToken ---------------------------------------------------------------------------
def test_an_invalid_token_says_its_reason_and_message():
    assert str(InvalidToken("expired")) == "expired"
    error = InvalidToken("expired", "the token has expired")
    assert (error.reason, str(error)) == ("expired", "the token has expired")


# -- the token's shape ----------------------------------------------------------------------
@pytest.mark.parametrize("alg", ["ES256", "EdDSA", "RS256"])
def test_each_algorithm_verifies_with_now_given(alg):
    token = sign(key=KEYS[alg])
    assert verifier().verify(token, now=NOW)["sub"] == "7"


def test_now_defaults_to_the_clock():
    token = sign(claims(iat=int(time.time()), exp=int(time.time()) + 60))
    assert verifier().verify(token)["iss"] == ISSUER
    assert reason(verifier(), sign()) == "expired"


def test_a_token_at_the_length_limit_is_read_and_one_longer_is_not():
    check = verifier()
    token = sign(claims(pad="x" * 5000))
    assert check.verify(token, now=NOW)["pad"] == "x" * 5000
    # Padded to the limit with signature characters: read (and refused for its
    # signature), where one character more is refused before anything is read.
    exact = token + "A" * (MAX_TOKEN_LENGTH - len(token))
    assert len(exact) == MAX_TOKEN_LENGTH == 8192
    assert reason(check, exact, now=NOW) == "signature"
    assert reason(check, exact + "A", now=NOW) == "malformed"


@pytest.mark.parametrize(
    "token",
    [
        "",
        None,
        7,
        "a.b",
        "a.b.c.d",
        ".b.c",
        "a..c",
        "a.b.",
        "!!!.b.c",
        b64(b"[1]") + ".b.c",
        b64(b"\xff\xfe") + ".b.c",
        b64(b"not json") + ".b.c",
        b64(b'"text"') + ".b.c",
    ],
)
def test_a_token_of_the_wrong_shape_is_malformed(token):
    assert reason(verifier(), token) == "malformed"


def test_a_good_header_with_other_parts_than_payload_and_signature_is_malformed():
    header = b64(json.dumps({"alg": "ES256", "typ": "at+jwt", "kid": "kid-ES256"}).encode())
    for token in (f"{header}.{b64(b'{}')}", f"{header}.a.b.c", f"{header}..b", f"{header}.a."):
        with pytest.raises(InvalidToken) as caught:
            verifier().verify(token)
        assert (caught.value.reason, str(caught.value)) == (
            "malformed",
            "the token is not a compact JWS",
        ), token


def test_the_header_checks_come_in_order_with_their_reasons():
    check = verifier()
    good = {"alg": "ES256", "typ": "at+jwt", "kid": "kid-ES256"}
    assert reason(check, unsigned(good | {"alg": "none"})) == "algorithm"
    assert reason(check, unsigned(good | {"alg": "HS256"})) == "algorithm"
    assert reason(check, unsigned(good | {"alg": 5})) == "algorithm"
    assert reason(check, unsigned(good | {"alg": ["ES256"]})) == "algorithm"  # unhashable
    assert reason(check, unsigned({k: v for k, v in good.items() if k != "alg"})) == "algorithm"
    assert reason(check, unsigned(good | {"typ": "JWT"})) == "type"
    assert reason(check, unsigned(good | {"typ": 1})) == "type"
    assert reason(check, unsigned({k: v for k, v in good.items() if k != "typ"})) == "type"
    assert reason(check, unsigned(good | {"crit": ["exp"]})) == "malformed"
    assert reason(check, unsigned(good | {"crit": []})) == "malformed"
    assert reason(check, unsigned(good | {"kid": 3})) == "unknown_key"
    assert reason(check, unsigned(good | {"kid": ""})) == "unknown_key"
    assert reason(check, unsigned(good | {"kid": "other"})) == "unknown_key"
    assert reason(check, unsigned(good)) == "signature"


def test_an_algorithm_message_shows_at_most_twenty_characters():
    with pytest.raises(InvalidToken) as caught:
        verifier().verify(unsigned({"alg": "A" * 50, "typ": "at+jwt", "kid": "k"}))
    assert str(caught.value) == f"the algorithm {'A' * 20!r} is not accepted"


@pytest.mark.parametrize("typ", ["at+jwt", "AT+JWT", "application/at+jwt", "Application/AT+JWT"])
def test_both_access_token_types_are_accepted_in_any_case(typ):
    assert verifier().verify(sign(typ=typ), now=NOW)["sub"] == "7"


def test_the_kid_messages_tell_a_bad_kid_from_an_unknown_one():
    good = {"alg": "ES256", "typ": "at+jwt"}
    with pytest.raises(InvalidToken, match="no usable kid"):
        verifier().verify(unsigned(good | {"kid": ""}))
    with pytest.raises(InvalidToken, match="no key of the JWKS has the token's kid"):
        verifier().verify(unsigned(good | {"kid": "nope"}))


def test_a_kid_of_two_hundred_characters_is_looked_up_and_a_longer_one_is_not():
    for length, works in ((200, True), (201, False)):
        key = generate("ES256", kid="k" * length)
        check = verifier(jwks=public_jwks([read_key(key)]))
        token = sign(key=key)
        if works:
            assert check.verify(token, now=NOW)["sub"] == "7"
        else:
            with pytest.raises(InvalidToken, match="no usable kid"):
                check.verify(token, now=NOW)


def test_only_the_chosen_algorithms_verify():
    check = verifier(algorithms=["EdDSA"])
    assert check.verify(sign(key=KEYS["EdDSA"]), now=NOW)
    assert reason(check, sign(key=KEYS["ES256"]), now=NOW) == "algorithm"
    assert check.algorithms == frozenset({"EdDSA"})
    with pytest.raises(ValueError, match=r"algorithms not verified here: \['HS256'\]"):
        verifier(algorithms=["HS256", "ES256"])


def test_a_token_whose_alg_is_not_its_keys_is_refused():
    rsa = KEYS["RS256"]
    document = public_jwks([read_key(rsa.export(private_key=True), alg="PS256")])
    token = sign(key=rsa)  # RS256, with the kid the JWKS publishes for PS256
    with pytest.raises(InvalidToken) as caught:
        verifier(jwks=document).verify(token, now=NOW)
    assert (caught.value.reason, str(caught.value)) == (
        "algorithm",
        "the token's alg is not its key's",
    )


def test_a_payload_that_is_no_json_object_is_refused():
    assert reason(verifier(), sign(b"not json"), now=NOW) == "claims"
    assert reason(verifier(), sign(b"\xff\xfe"), now=NOW) == "claims"
    assert reason(verifier(), sign([1, 2]), now=NOW) == "claims"


def test_a_bad_signature_is_a_signature_refusal():
    header, payload, _ = sign().split(".")
    _, _, other = sign(claims(sub="8")).split(".")
    assert reason(verifier(), f"{header}.{payload}.{other}", now=NOW) == "signature"


# -- the claims -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"iss": "https://other"}, "issuer"),
        ({"iss": ...}, "issuer"),
        ({"aud": "https://other"}, "audience"),
        ({"aud": ["https://other"]}, "audience"),
        ({"aud": {API: 1}}, "audience"),
        ({"aud": API[:-1]}, "audience"),
        ({"aud": ...}, "audience"),
        ({"exp": ...}, "claims"),
        ({"exp": "soon"}, "claims"),
        ({"exp": True}, "claims"),
        ({"iat": ...}, "claims"),
        ({"iat": None}, "claims"),
        ({"nbf": "later"}, "claims"),
        ({"sub": ...}, "claims"),
        ({"sub": ""}, "claims"),
        ({"sub": 7}, "claims"),
    ],
)
def test_each_claim_is_checked(changes, expected):
    assert reason(verifier(), sign(claims(**changes)), now=NOW) == expected


@pytest.mark.parametrize("aud", [API, [API], ["https://other", API]])
def test_the_audience_may_be_a_string_or_a_list_holding_it(aud):
    assert verifier().verify(sign(claims(aud=aud)), now=NOW)["aud"] == aud


def test_expiry_and_issue_time_hold_to_the_leeway_exactly():
    token = sign(claims(exp=NOW, iat=NOW - 100))
    check = verifier(leeway=10)
    assert check.verify(token, now=NOW + 9.5)
    assert reason(check, token, now=NOW + 10) == "expired"
    early = sign(claims(iat=NOW + 10, exp=NOW + 300))
    assert check.verify(early, now=NOW)
    assert reason(check, early, now=NOW - 0.5) == "not_yet_valid"
    later = sign(claims(nbf=NOW + 10.0))
    assert check.verify(later, now=NOW)
    assert reason(check, later, now=NOW - 0.5) == "not_yet_valid"


def test_the_default_leeway_is_thirty_seconds():
    token = sign(claims(exp=NOW))
    assert verifier().leeway == 30
    assert verifier().verify(token, now=NOW + 29)
    assert reason(verifier(), token, now=NOW + 30) == "expired"


def test_float_times_are_read():
    assert verifier().verify(sign(claims(iat=NOW + 0.5, exp=NOW + 60.5)), now=NOW)


def test_is_revoked_is_asked_last_with_the_claims():
    seen = []

    def is_revoked(found):
        seen.append(found)
        return found["sid"] == "gone"

    check = verifier(is_revoked=is_revoked)
    assert check.verify(sign(claims(sid="live")), now=NOW)["sid"] == "live"
    assert reason(check, sign(claims(sid="gone")), now=NOW) == "revoked"
    assert reason(check, sign(claims(sid="gone", aud="x")), now=NOW) == "audience"
    assert [c["sid"] for c in seen] == ["live", "gone"]


# -- the JWKS -------------------------------------------------------------------------------
def test_a_verifier_needs_issuer_audience_and_one_key_source():
    with pytest.raises(ValueError, match="needs the issuer and the audience"):
        Verifier(issuer="", audience=API, jwks=JWKS)
    with pytest.raises(ValueError, match="needs the issuer and the audience"):
        Verifier(issuer=ISSUER, audience="", jwks=JWKS)
    with pytest.raises(ValueError, match="give jwks_url or jwks, one of them"):
        Verifier(issuer=ISSUER, audience=API)
    with pytest.raises(ValueError, match="give jwks_url or jwks, one of them"):
        Verifier(issuer=ISSUER, audience=API, jwks=JWKS, jwks_url="https://x")


def test_the_defaults_are_as_documented():
    check = Verifier(issuer=ISSUER, audience=API, jwks_url="https://x")
    assert (check.cache_seconds, check.refetch_interval, check.timeout, check.leeway) == (
        300,
        30,
        5,
        30,
    )
    assert check.algorithms == frozenset({"ES256", "ES384", "EdDSA", "RS256", "PS256"})
    assert (check.issuer, check.audience, check.jwks_url) == (ISSUER, API, "https://x")
    assert check.is_revoked is None


def test_a_jwks_keeps_only_signing_keys_that_fit_their_alg():
    es = read_key(KEYS["ES256"]).public()
    ed = read_key(KEYS["EdDSA"]).public()
    p384 = read_key(generate("ES384", kid="p384")).public()
    document = {
        "keys": [
            "not a mapping",
            es | {"kid": "no-alg", "alg": None},
            es | {"kid": 5},
            es | {"kid": "alg-list", "alg": ["ES256"]},
            read_key(KEYS["RS256"]).public() | {"kid": "rsa-as-es", "alg": "ES256", "crv": "P-256"},
            read_key(KEYS["RS256"]).public() | {"kid": "rsa-crv", "crv": "P-256"},
            es | {"kid": "hs", "alg": "HS256"},
            es | {"kid": "enc", "use": "enc"},
            {k: v for k, v in es.items() if k != "use"} | {"kid": "no-use"},
            es | {"kid": "as-ed", "alg": "EdDSA"},
            ed | {"kid": "ed-as-es", "alg": "ES256"},
            p384 | {"kid": "p384-as-256", "alg": "ES256"},
            es | {"kid": "broken", "x": "A"},
            es,
            ed | {"kid": es["kid"]},  # a repeated kid: the first one stands
            {"kty": "oct", "k": "c2VjcmV0", "kid": "oct", "alg": "ES256"},
            # No crv, as an RSA algorithm wants: only its kty keeps a shared secret out.
            {"kty": "oct", "k": "c2VjcmV0", "kid": "oct-as-rs", "alg": "RS256"},
        ]
    }
    kept = module._usable_keys(document)
    assert sorted(kept) == ["kid-ES256", "no-use"]
    assert kept["kid-ES256"][1] == "ES256"
    assert kept["kid-ES256"][0].thumbprint() == KEYS["ES256"].thumbprint()
    for bad in (None, [], {"keys": {}}, {"keys": "x"}, {}):
        with pytest.raises(ValueError, match="has no 'keys' list"):
            module._usable_keys(bad)


def test_a_private_key_published_by_mistake_is_kept_as_its_public_half():
    entry = dict(KEYS["ES256"].export(private_key=True, as_dict=True))
    key = module._public_key(entry)
    assert key is not None and not key.has_private
    assert key.thumbprint() == KEYS["ES256"].thumbprint()
    public = module._public_key(read_key(KEYS["ES256"]).public())
    assert public is not None and not public.has_private
    assert module._public_key({"kty": "EC"}) is None


def test_one_reader_per_thread():
    first = module._reader()
    assert module._reader() is first
    other: list[object] = []
    thread = threading.Thread(target=lambda: other.append(module._reader()))
    thread.start()
    thread.join()
    assert other[0] is not first


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(module.time, "monotonic", clock)
    return clock


def fetcher(*documents: object):
    asked: list[str] = []

    def fetch(url: str) -> object:
        asked.append(url)
        answer = documents[min(len(asked), len(documents)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return fetch, asked


def test_a_given_jwks_is_never_fetched_even_for_an_unknown_kid(clock):
    fetch, asked = fetcher(JWKS)
    check = verifier(fetch=fetch)
    assert reason(check, unsigned({"alg": "ES256", "typ": "at+jwt", "kid": "x"})) == "unknown_key"
    clock.now += 10**9
    assert check.verify(sign(), now=NOW)
    assert asked == []


def test_the_jwks_is_cached_for_cache_seconds_to_the_second(clock):
    fetch, asked = fetcher(JWKS)
    check = verifier(jwks=None, jwks_url="https://site/jwks", fetch=fetch, cache_seconds=100)
    token = sign()
    check.verify(token, now=NOW)
    assert asked == ["https://site/jwks"]
    clock.now += 99.5
    check.verify(token, now=NOW)
    assert len(asked) == 1
    clock.now += 0.5  # exactly cache_seconds since the fetch
    check.verify(token, now=NOW)
    assert len(asked) == 2


def test_an_unknown_kid_refetches_once_per_refetch_interval(clock):
    rotated = public_jwks([read_key(k) for k in (*KEYS.values(), generate("ES256", kid="new"))])
    fetch, asked = fetcher(JWKS, rotated)
    check = verifier(
        jwks=None, jwks_url="https://site/jwks", fetch=fetch, refetch_interval=20, cache_seconds=100
    )
    check.verify(sign(), now=NOW)
    clock.now += 19.5
    assert reason(check, unsigned({"alg": "ES256", "typ": "at+jwt", "kid": "new"})) == "unknown_key"
    assert len(asked) == 1  # too soon after the last fetch
    clock.now += 0.5  # exactly refetch_interval
    assert reason(check, unsigned({"alg": "ES256", "typ": "at+jwt", "kid": "new"})) == "signature"
    assert len(asked) == 2


def test_a_failed_fetch_keeps_the_keys_and_is_retried_after_refetch_interval(clock):
    fetch, asked = fetcher(JWKS, OSError("down"), {"keys": []})
    check = verifier(
        jwks=None, jwks_url="https://site/jwks", fetch=fetch, refetch_interval=20, cache_seconds=100
    )
    token = sign()
    check.verify(token, now=NOW)
    clock.now += 100
    assert check.verify(token, now=NOW)  # the fetch failed: the keys we had stand
    assert len(asked) == 2
    clock.now += 19.5
    assert check.verify(token, now=NOW)
    assert len(asked) == 2
    clock.now += 0.5  # a retry is due refetch_interval after the failure
    assert reason(check, token, now=NOW) == "unknown_key"  # the new, empty set
    assert len(asked) == 3


@pytest.mark.parametrize("failure", [OSError("down"), {"keys": "none"}, "garbage"])
def test_a_first_fetch_that_fails_is_jwks_unavailable(clock, failure):
    fetch, _ = fetcher(failure)
    check = verifier(jwks=None, jwks_url="https://site/jwks", fetch=fetch)
    with pytest.raises(InvalidToken) as caught:
        check.verify(sign(), now=NOW)
    assert (caught.value.reason, str(caught.value)) == (
        "jwks_unavailable",
        "the JWKS could not be fetched",
    )
    assert caught.value.__suppress_context__


class Server:
    """A local HTTP server answering each path with a body and a status."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        answers = self.answers

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body, headers = answers.get(self.path, (404, b"", {}))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    running = Server()
    yield running
    running.close()


def test_the_jwks_is_fetched_over_http_up_to_its_size_limit(server):
    body = json.dumps(JWKS).encode()
    exact = body[:-1] + b" " * (MAX_JWKS_BYTES - len(body)) + b"}"
    assert len(exact) == MAX_JWKS_BYTES
    server.answers["/jwks"] = (200, exact, {"Content-Type": "application/json"})
    server.answers["/big"] = (200, exact[:-1] + b"  }", {})
    server.answers["/down"] = (503, b"{}", {})
    server.answers["/moved"] = (302, b"", {"Location": "/jwks"})
    assert module._fetch_json(f"{server.url}/jwks", 5) == JWKS
    with pytest.raises(ValueError, match="too large"):
        module._fetch_json(f"{server.url}/big", 5)
    with pytest.raises(Exception, match="503"):
        module._fetch_json(f"{server.url}/down", 5)
    with pytest.raises(ValueError):  # a redirect is not followed: its empty body is no JSON
        module._fetch_json(f"{server.url}/moved", 5)
    check = Verifier(issuer=ISSUER, audience=API, jwks_url=f"{server.url}/jwks", timeout=2)
    assert check.verify(sign(), now=NOW)["sub"] == "7"
    # A compressed answer is read decompressed.
    server.answers["/gzip"] = (200, gzip.compress(body), {"Content-Encoding": "gzip"})
    assert module._fetch_json(f"{server.url}/gzip", 5) == JWKS
    assert MAX_JWKS_BYTES == 256 * 1024


def test_the_feed_is_fetched_over_http(server):
    server.answers["/feed"] = (200, json.dumps(page(("s1", time.time()), until=5)).encode(), {})
    feed = RevocationFeed(f"{server.url}/feed", timeout=2)
    assert feed({"sid": "s1"}) is True
    assert not feed.failing


def test_verify_keeps_one_verifier_per_url_issuer_and_audience(server, monkeypatch):
    monkeypatch.setattr(module, "_verifiers", {})
    server.answers["/jwks"] = (200, json.dumps(JWKS).encode(), {})
    url = f"{server.url}/jwks"
    token = sign(claims(iat=int(time.time()), exp=int(time.time()) + 60))
    assert verify(token, issuer=ISSUER, audience=API, jwks_url=url, leeway=5)["sub"] == "7"
    first = module._verifiers[(url, ISSUER, API)]
    assert first.leeway == 5
    assert verify(token, issuer=ISSUER, audience=API, jwks_url=url, leeway=99)["sub"] == "7"
    assert module._verifiers[(url, ISSUER, API)] is first and first.leeway == 5
    with pytest.raises(InvalidToken) as caught:
        verify(token, issuer=ISSUER, audience="https://other", jwks_url=url)
    assert caught.value.reason == "audience"
    assert len(module._verifiers) == 2


# -- the revocation feed --------------------------------------------------------------------
def page(*entries: tuple[str, float], until: int = 100, after: str | None = None) -> dict:
    document: dict[str, object] = {
        "ended": [{"sid": s, "at": a} for s, a in entries],
        "until": until,
    }
    if after is not None:
        document["next"] = after
    return document


def test_the_feed_reads_every_page_then_goes_on_from_until():
    now = time.time()
    fetch, asked = fetcher(
        page(("a", now), after="c 1/2"),
        page(("b", now), until=120),
        page(until=130),
    )
    feed = RevocationFeed("https://site/feed", fetch=fetch)
    feed.poll()
    assert asked == ["https://site/feed", "https://site/feed?after=c%201%2F2"]
    assert feed._ended.keys() == {"a", "b"}
    feed.poll()
    assert asked[-1] == "https://site/feed?since=120"
    assert not feed.failing
    assert (feed.interval, feed.remember, feed.timeout, feed.fail_closed) == (
        10,
        24 * 3600 + 60,
        5,
        False,
    )


def test_a_new_feed_is_not_failing():
    assert RevocationFeed("https://site/feed").failing is False


def test_a_feed_poll_reads_at_most_max_pages():
    now = time.time()
    fetch, asked = fetcher(page(("a", now), after="more"))
    feed = RevocationFeed("https://site/feed", fetch=fetch)
    feed.poll()
    assert len(asked) == RevocationFeed.MAX_PAGES == 20
    assert feed._since is None  # no page ended: the next poll starts where this one did


def test_the_feed_forgets_at_remember_exactly(monkeypatch):
    monkeypatch.setattr(module.time, "time", lambda: 10_000.0)
    fetch, _ = fetcher(page(("edge", 9_900.0), ("old", 9_899.5), ("new", 9_999.0)))
    feed = RevocationFeed("https://site/feed", fetch=fetch, remember=100)
    feed.poll()
    assert sorted(feed._ended) == ["edge", "new"]


def test_the_feed_is_asked_once_its_interval_has_passed_to_the_second(clock):
    fetch, asked = fetcher(page(("a", time.time())))
    feed = RevocationFeed("https://site/feed", fetch=fetch, interval=10)
    assert feed({"sid": "a"}) is True
    clock.now += 9.5
    feed({"sid": "a"})
    assert len(asked) == 1
    clock.now += 0.5
    feed({"sid": "a"})
    assert len(asked) == 2


def test_a_verification_never_waits_for_another_ones_poll(clock):
    fetch, asked = fetcher(page(("a", time.time())))
    feed = RevocationFeed("https://site/feed", fetch=fetch, interval=0)
    feed._lock.acquire()
    try:
        assert feed({"sid": "a"}) is False  # another thread is polling: go on with what is known
    finally:
        feed._lock.release()
    assert asked == []
    assert feed({"sid": "a"}) is True
    assert not feed._lock.locked()


def test_the_feed_lock_is_released_when_a_fetch_raises_something_odd(clock):
    def fetch(url):
        raise KeyboardInterrupt  # not caught by the poll

    feed = RevocationFeed("https://site/feed", fetch=fetch, interval=0)
    with pytest.raises(KeyboardInterrupt):
        feed({"sid": "a"})
    assert not feed._lock.locked()


def test_a_failing_feed_refuses_only_when_fail_closed():
    fetch, _ = fetcher(OSError("down"))
    lenient = RevocationFeed("https://site/feed", fetch=fetch, interval=0)
    assert lenient({"sid": "a"}) is False and lenient.failing
    strict = RevocationFeed("https://site/feed", fetch=fetch, interval=0, fail_closed=True)
    assert strict({"sid": "a"}) is True
    recovered, _ = fetcher(OSError("down"), page())
    feed = RevocationFeed("https://site/feed", fetch=recovered, interval=0, fail_closed=True)
    assert feed({"sid": "a"}) is True
    assert feed({"sid": "a"}) is False and not feed.failing


def test_only_a_string_sid_is_looked_up():
    fetch, _ = fetcher(page(("5", time.time())))
    feed = RevocationFeed("https://site/feed", fetch=fetch, interval=0)
    assert feed({"sid": 5}) is False
    assert feed({"sid": ["5"]}) is False  # unhashable: not looked up
    assert feed({"sid": "5"}) is True


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"ended": []},
        {"until": 1.5, "ended": []},
        {"until": False, "ended": []},
        {"until": 1, "ended": {}},
        {"until": 1, "ended": [], "next": 5},
        {"until": 1, "ended": [], "next": "x" * 64},
        {"until": 1, "ended": [], "next": "é"},
    ],
)
def test_a_feed_answer_of_the_wrong_shape_is_refused(document):
    with pytest.raises(ValueError):
        module._feed_entries(document)


def test_a_feed_cursor_is_at_most_sixty_three_ascii_characters():
    assert module._feed_entries({"until": 1, "ended": [], "next": "x" * 63})[2] == "x" * 63
    assert module._feed_entries({"until": 1, "ended": [], "next": None})[2] is None


def test_feed_entries_keep_string_sids_with_number_times():
    entries, until, after = module._feed_entries(
        {
            "until": 9,
            "ended": [
                {"sid": "a", "at": 1},
                {"sid": "b", "at": 2.5},
                {"sid": "c", "at": True},
                {"sid": "d", "at": "3"},
                {"sid": 4, "at": 4},
                ["e", 5],
            ],
        }
    )
    assert (entries, until, after) == ([("a", 1.0), ("b", 2.5)], 9, None)
    assert isinstance(entries[0][1], float)
