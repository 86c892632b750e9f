"""Hostile inputs against every route: a corpus built for issue 10.

Each case asserts the three things an attacker must never get:

- a server error (status 500 or more; a traceback would also be a 500);
- a redirect off the site: every ``Location``, every ``{"url": ...}`` of
  ``X-Auth-Return-Redirect``, every ``callbackUrl`` a page or a redirect carries
  and the callback-url cookie must land on ``testserver``, as a browser would
  resolve them (:func:`landing_host`);
- a state change where the request must fail: no session cookie, no user,
  account or session row, a session that stays alive after a refused sign-out.

The channels that take a URL: the form body, JSON with ``X-Auth-Return-Redirect``,
the query, the callback-url cookie (both names), ``pages.*``, the built-in
pages' hidden fields, the ``redirect`` and ``sign_in`` callbacks and a whole
OpenID Connect sign-in against the test provider.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from html.parser import HTMLParser
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils.encoding import iri_to_uri

from webauth import cookies as ck
from webauth import jwt as jose
from webauth.models import Account, Session
from webauth.providers.oauth import OAuth2
from webauth.test import force_sign_in

from .support.helpers import csrf_pair

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SITE = "testserver"
SESSION = "authjs.session-token"

pytestmark = pytest.mark.django_db

# -- the payloads ---------------------------------------------------------------------

#: URLs that must never take the browser off the site, whatever channel carries them.
REDIRECTS = [
    # protocol-relative and backslash tricks
    "//evil.example",
    "///evil.example",
    "////evil.example/x",
    "/\\evil.example",
    "\\\\evil.example",
    "\\/evil.example",
    "/\\/evil.example",
    "/.//evil.example",
    # scheme without slashes: a browser on an http page reads "https:evil" as https://evil
    "https:evil.example",
    "http:evil.example",
    "https:/evil.example",
    "https:\\\\evil.example",
    "http:/\\evil.example",
    # absolute URLs of another site, and of ours with tricks
    "http://evil.example",
    "https://evil.example/path?x=1#frag",
    "HTTP://EVIL.EXAMPLE",
    "http://evil.example@testserver",
    "http://testserver@evil.example",
    "http://testserver:80@evil.example",
    "http://testserver.evil.example",
    "http://evil.example#@testserver",
    "http://evil.example?@testserver",
    "http://evil.example\\@testserver",
    "http://testserver\\@evil.example",
    "http://testserver%2F@evil.example",
    "http://evil%2Eexample",
    "https://testserver",  # another scheme: another origin
    "http://testserver:8080/",
    "http://[::1]/",
    "http://[evil.example",  # unbalanced bracket: urlsplit raises
    # whitespace and control characters that browsers drop
    "/\t/evil.example",
    "/\n/evil.example",
    "/\r\n/evil.example",
    "\t//evil.example",
    " //evil.example",
    "\x00//evil.example",
    "/%09/evil.example",
    "//evil.example\x00",
    "/\r\nSet-Cookie: planted=1",
    # percent-encoded
    "/%2F%2Fevil.example",
    "%2F%2Fevil.example",
    "/%5Cevil.example",
    "%2f%2fevil.example",
    "http%3A%2F%2Fevil.example",
    "%68ttp://evil.example",
    # other schemes
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "java\tscript:alert(1)",
    " javascript:alert(1)",
    "javascript://testserver/%0Aalert(1)",
    "data:text/html,<script>alert(1)</script>",
    "mailto:a@evil.example",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "ftp://evil.example/",
    "myapp://callback",
    # unicode lookalikes
    "\uff0f\uff0fevil.example",  # fullwidth solidus
    "/\u2215evil.example",  # division slash
    "\u2044\u2044evil.example",  # fraction slash
    "http://evil\u3002example",  # ideographic full stop
    "http://\uff45\uff56\uff49\uff4c.example",  # fullwidth letters
    "http://testserver\u3002evil.example",
    "http://t\u0435stserver/",  # Cyrillic e
    # neither URL nor path
    "evil.example",
    "../../evil.example",
    "?next=//evil.example",
    "#//evil.example",
    "foo",
    " ",
    # very long
    "/" + "a" * 10_000,
    "http://testserver/" + "a" * 50_000,
    "//evil.example/" + "a" * 5_000,
    "http://evil.example/" + "%2F" * 3_000,
]

#: URLs of the site itself: these must still work (the wire behaviour for good input).
GOOD = [
    ("/private/", "http://testserver/private/"),
    ("/p?x=1&y=%2F#top", "http://testserver/p?x=1&y=%2F#top"),
    ("http://testserver/same", "http://testserver/same"),
    ("HTTP://TESTSERVER/same", "HTTP://TESTSERVER/same"),
]


def _id(value: str) -> str:
    return ascii(value[:40]) + (f"+{len(value)}" if len(value) > 40 else "")


# -- what a browser would do with a URL ---------------------------------------------------

_C0_OR_SPACE = "".join(chr(c) for c in range(0x21))
_DROPPED = {9: None, 10: None, 13: None}
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


def landing_host(url: str, base_scheme: str = "http") -> str:
    """The host a browser on ``<base_scheme>://testserver/...`` goes to for *url*.

    Follows the WHATWG URL parser where open redirects hide: leading and trailing
    C0/space stripped, tab and newlines dropped, ``\\`` read as ``/``, any number
    of slashes after a special scheme, ``scheme:host`` when the scheme differs
    from the page's, userinfo, percent-encoding and IDNA mapping in the host. A
    non-http(s) scheme lands nowhere a redirect may go: it returns ``"<scheme>:"``.
    """
    url = url.strip(_C0_OR_SPACE).translate(_DROPPED)
    match = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*):(.*)", url, re.S)
    if match:
        scheme, rest = match.group(1).lower(), match.group(2).replace("\\", "/")
        if scheme not in ("http", "https"):
            return f"{scheme}:"
        if scheme == base_scheme and not rest.startswith("//"):
            return SITE  # "http:foo" on an http page is a relative path
        authority = rest.lstrip("/")
    else:
        rest = url.replace("\\", "/")
        if not rest.startswith("//"):
            return SITE  # a path, a query or a fragment of the current page
        authority = rest.lstrip("/")
    authority = re.split(r"[/?#]", authority, maxsplit=1)[0]
    host = unquote(authority.rpartition("@")[2])
    if ":" in host and not host.endswith("]"):
        host = host.rpartition(":")[0]  # the port
    host = unicodedata.normalize("NFKC", host).translate(_DOTS).lower().rstrip(".")
    return host


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("/x", SITE),
        ("//evil.example/x", "evil.example"),
        ("/\\evil.example", "evil.example"),
        ("/\t/evil.example", "evil.example"),
        ("https:evil.example", "evil.example"),
        ("http:evil.example", SITE),
        ("http://a@evil.example:8000/", "evil.example"),
        ("http://evil%2Eexample", "evil.example"),
        ("http://\uff45vil\u3002example", "evil.example"),
        ("javascript:alert(1)", "javascript:"),
        ("?next=//evil", SITE),
        ("http://testserver/p", SITE),
    ],
)
def test_the_landing_host_checker_itself(url, host):
    assert landing_host(url) == host


class _Inputs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, list[str]] = {}
        self.actions: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "input" and attributes.get("name"):
            self.values.setdefault(attributes["name"], []).append(attributes.get("value") or "")
        if tag == "form" and attributes.get("action"):
            self.actions.append(attributes["action"])
        if tag == "a" and attributes.get("href"):
            self.links.append(attributes["href"])


def page_inputs(response) -> _Inputs:
    parser = _Inputs()
    parser.feed(response.content.decode())
    return parser


def assert_safe(response, *, base_scheme: str = "http", allowed=(SITE,)) -> None:
    """No server error, and every URL the response carries lands on the site."""
    assert response.status_code < 500, (response.status_code, response.content[:300])
    urls = []
    if response.has_header("Location"):
        urls.append(response["Location"])
    if response.get("Content-Type", "").startswith("application/json") and response.content:
        data = json.loads(response.content)
        if isinstance(data, dict) and isinstance(data.get("url"), str):
            urls.append(data["url"])
    for url in list(urls):
        urls.extend(v[-1] for k, v in parse_qs(urlsplit(url).query).items() if k == "callbackUrl")
    if response.get("Content-Type", "").startswith("text/html"):
        inputs = page_inputs(response)
        urls.extend(inputs.values.get("callbackUrl", []))
        urls.extend(inputs.actions)
        # "Continue", "Sign in" and "Sign out" links of the pages, and their callbackUrl.
        urls.extend(inputs.links)
        for link in inputs.links:
            query = parse_qs(urlsplit(link).query)
            urls.extend(query.get("callbackUrl", [])[-1:])
    for name, morsel in response.cookies.items():
        if name.endswith("authjs.callback-url") and morsel.value:
            urls.append(morsel.value)
    for url in urls:
        assert landing_host(url, base_scheme) in allowed, (url[:200], response.status_code)


def sets_session(response) -> bool:
    """Whether the response sets a (non-empty) session cookie."""
    return any(
        SESSION in name and morsel.value and morsel["max-age"] != "0"
        for name, morsel in response.cookies.items()
    )


def deletes_session(response) -> bool:
    return any(
        SESSION in name and morsel["max-age"] == "0" for name, morsel in response.cookies.items()
    )


def rows() -> tuple[int, int, int]:
    return (get_user_model().objects.count(), Account.objects.count(), Session.objects.count())


def wsgi(header: str) -> str:
    """*header* as a WSGI server hands it to Django: its UTF-8 bytes read as latin-1."""
    return header.encode().decode("latin-1")


def cookie_header(client: Client, extra: str = "") -> str:
    """The Cookie header the client would send, plus *extra* raw pairs (any name)."""
    pairs = [f"{m.key}={m.coded_value}" for m in client.cookies.values()]
    if extra:
        pairs.append(extra)
    return wsgi("; ".join(pairs))


# -- the site -------------------------------------------------------------------------------

OAUTH = OAuth2(
    id="oauth",
    name="Some OAuth",
    authorization_endpoint="https://idp.example/authorize",
    token_endpoint="https://idp.example/token",
    userinfo_endpoint="https://idp.example/userinfo",
    client_id="rp",
    client_secret="rp-secret",
)


@pytest.fixture
def site(settings):
    """Credentials and an OAuth provider (no network needed to start it)."""

    def configure(**options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "providers": ["webauth.providers.DjangoCredentials", OAUTH],
            **options,
        }

    configure()
    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse"
    )


def sign_in(client, callback=None, *, json_body=False, query="", **extra):
    token = csrf_pair(client)
    data = {"csrfToken": token, "username": "alice", "password": "correct horse"}
    if callback is not None:
        data["callbackUrl"] = callback
    if json_body:
        return client.post(
            f"/auth/callback/credentials{query}",
            json.dumps(data),
            content_type="application/json",
            headers={"X-Auth-Return-Redirect": "1"},
            **extra,
        )
    return client.post(f"/auth/callback/credentials{query}", data, **extra)


# -- open redirects, channel by channel -----------------------------------------------------


@pytest.mark.parametrize("payload", REDIRECTS, ids=_id)
def test_form_body_callback_url_of_a_sign_in(client, site, alice, payload):
    response = sign_in(client, payload)
    assert_safe(response)
    assert response.status_code == 302 and sets_session(response)


@pytest.mark.parametrize("payload", REDIRECTS, ids=_id)
def test_json_body_with_return_redirect(client, site, alice, payload):
    response = sign_in(client, payload, json_body=True)
    assert_safe(response)
    assert response.status_code == 200 and sets_session(response)


@pytest.mark.parametrize("payload", REDIRECTS, ids=_id)
def test_query_callback_url(client, site, alice, payload):
    # The query is used when the body has none: on the sign-in, and on every route.
    response = client.get("/auth/session", {"callbackUrl": payload})
    assert_safe(response)
    response = client.get("/auth/csrf", {"callbackUrl": payload})
    assert_safe(response)
    from urllib.parse import urlencode

    response = sign_in(client, query="?" + urlencode({"callbackUrl": payload}))
    assert_safe(response)
    assert sets_session(response)


@pytest.mark.parametrize(
    ("payload", "secure"),
    [(p, False) for p in REDIRECTS] + [(p, True) for p in REDIRECTS[::4]],
    ids=lambda v: _id(v) if isinstance(v, str) else ("https" if v else "http"),
)
def test_planted_callback_url_cookie(client, site, alice, payload, secure):
    # A sibling subdomain (or a network attacker on http) plants the cookie under
    # the name the site uses and under the other one.
    token = csrf_pair(client, secure=secure)
    value = ck.encode_value(payload)
    planted = f"authjs.callback-url={value}; __Secure-authjs.callback-url={value}"
    header = cookie_header(client, planted)
    scheme = "https" if secure else "http"
    for path in ("/auth/session", "/auth/signin", "/auth/signout", "/auth/providers"):
        assert_safe(client.get(path, HTTP_COOKIE=header, secure=secure), base_scheme=scheme)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "alice", "password": "correct horse"},
        HTTP_COOKIE=header,
        secure=secure,
    )
    assert_safe(response, base_scheme=scheme)
    assert sets_session(response)
    # A bad cookie is overwritten with the URL actually used.
    name = ("__Secure-" if secure else "") + "authjs.callback-url"
    if response["Location"] != iri_to_uri(payload):
        assert iri_to_uri(response.cookies[name].value) == response["Location"]


@pytest.mark.parametrize("payload", REDIRECTS, ids=_id)
def test_sign_in_and_sign_out_page_fields(client, site, alice, payload):
    for signed_in in (False, True):
        if signed_in:  # the sign-out page has its form, the sign-in page "Continue"
            force_sign_in(client, alice)
        for path in ("/auth/signin", "/auth/signout"):
            response = client.get(path, {"callbackUrl": payload})
            assert response.status_code == 200
            assert_safe(response)
            inputs = page_inputs(response)
            if path == "/auth/signin" or signed_in:
                assert inputs.values["callbackUrl"]  # the field is there, on-site
            else:  # "You are not signed in": a link to sign in, with the callback URL
                [link] = inputs.links
                assert parse_qs(urlsplit(link).query)["callbackUrl"]


@pytest.mark.parametrize("payload", REDIRECTS, ids=_id)
def test_pages_settings_carry_only_the_resolved_callback_url(client, site, alice, payload):
    site(pages={"sign_in": "/login/", "sign_out": "/bye/", "error": "/oops/"})
    response = client.get("/auth/signin", {"callbackUrl": payload, "error": payload})
    assert_safe(response)
    if len(payload) < 5000:  # else the echoed error makes a Location Django refuses
        assert response["Location"].startswith("/login/?callbackUrl=")
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials", {"csrfToken": token, "callbackUrl": payload}
    )
    assert_safe(response)  # a refused sign-in lands on pages.sign_in
    assert not sets_session(response)


@pytest.mark.parametrize("payload", REDIRECTS, ids=_id)
def test_sign_out_always_ends_the_session(client, site, alice, payload):
    # Issue 10, item 5: javascript: or mailto: used to answer error=Configuration
    # and keep the session.
    force_sign_in(client, alice)
    token = csrf_pair(client)
    response = client.post("/auth/signout", {"csrfToken": token, "callbackUrl": payload})
    assert_safe(response)
    assert response.status_code == 302 and deletes_session(response)
    assert not response["Location"].endswith("error=Configuration")


@pytest.mark.parametrize("payload", REDIRECTS, ids=_id)
def test_sign_out_with_return_redirect_json(client, site, alice, payload):
    force_sign_in(client, alice)
    token = csrf_pair(client)
    response = client.post(
        "/auth/signout",
        json.dumps({"csrfToken": token, "callbackUrl": payload}),
        content_type="application/json",
        headers={"X-Auth-Return-Redirect": "1"},
    )
    assert_safe(response)
    assert response.status_code == 200 and deletes_session(response)


@pytest.mark.parametrize(("payload", "expected"), GOOD)
def test_good_callback_urls_are_unchanged(client, site, alice, payload, expected):
    assert sign_in(client, payload)["Location"] == expected
    assert sign_in(client, payload, json_body=True).json() == {"url": expected}
    force_sign_in(client, alice)
    token = csrf_pair(client)
    response = client.post("/auth/signout", {"csrfToken": token, "callbackUrl": payload})
    assert response["Location"] == expected


# What a project's redirect callback may look like: the common "relative URLs are
# fine" rule (an open redirect for "//evil.example" if its answer went out as is),
# one that answers junk, and one that fails.
def _relative_only(*, url, base_url):
    return url if url.startswith("/") else base_url


def _echo_path(*, url, base_url):
    return urlsplit(url).path or "/"


def _junk(*, url, base_url):
    return "javascript:alert(document.cookie)"


def _fails(*, url, base_url):
    raise RuntimeError("the project's bug")


@pytest.mark.parametrize("callback", [_relative_only, _echo_path, _junk], ids=lambda f: f.__name__)
@pytest.mark.parametrize("payload", REDIRECTS[::2], ids=_id)
def test_redirect_callback_answers_never_leave_the_site(client, site, alice, callback, payload):
    site(callbacks={"redirect": callback})
    assert_safe(sign_in(client, payload))
    assert_safe(sign_in(client, payload, json_body=True))
    force_sign_in(client, alice)
    token = csrf_pair(client)
    response = client.post("/auth/signout", {"csrfToken": token, "callbackUrl": payload})
    assert_safe(response)
    assert deletes_session(response)


def test_a_failing_redirect_callback_still_signs_out(client, site, alice):
    site(callbacks={"redirect": _fails})
    force_sign_in(client, alice)
    token = csrf_pair(client)
    response = client.post("/auth/signout", {"csrfToken": token, "callbackUrl": "/x"})
    assert response.status_code == 302 and response["Location"] == "http://testserver"
    assert deletes_session(response)


@pytest.mark.parametrize("payload", REDIRECTS[::3], ids=_id)
def test_sign_in_callback_answer_goes_through_the_same_rules(client, site, alice, payload):
    site(callbacks={"sign_in": lambda **kw: payload})
    response = sign_in(client, "/private/")
    assert_safe(response)


# -- CSRF on every POST route ---------------------------------------------------------------


def _other_token(real: str, client: Client) -> str:
    other = Client()
    return csrf_pair(other)


def _hash_of(real: str, client: Client) -> str:
    return ck.decode_value(client.cookies["authjs.csrf-token"].value).split("|")[1]


CSRF_BODIES = {
    "missing": lambda real, c: None,
    "empty": lambda real, c: "",
    "wrong": lambda real, c: "0" * 64,
    "other browser's token": _other_token,
    "the cookie's hash": _hash_of,
    "the whole cookie": lambda real, c: ck.decode_value(c.cookies["authjs.csrf-token"].value),
    "token|": lambda real, c: real + "|",
    "prefix 63": lambda real, c: real[:63],
    "prefix 32": lambda real, c: real[:32],
    "prefix 1": lambda real, c: real[:1],
    "one more char": lambda real, c: real + "0",
    "upper case": lambda real, c: real.upper(),
    "padded": lambda real, c: f" {real} ",
    "newline": lambda real, c: real + "\n",
    "nul": lambda real, c: real + "\x00",
    "unicode digits": lambda real, c: real.translate(
        {ord(d): chr(0xFF10 + int(d)) for d in "0123456789"}
    ),
}

# (method path, what a success would be: the body besides csrfToken)
POST_ROUTES = {
    "signin/credentials": {},
    "signin/oauth": {},
    "signin": {},
    "callback/credentials": {"username": "alice", "password": "correct horse"},
    "signout": {},
    "session": {"data": {"name": "Mallory"}},
}


def _post(client, route, body, *, as_json=False, **extra):
    if as_json:  # as next-auth/react sends it
        return client.post(
            f"/auth/{route}",
            json.dumps(body),
            content_type="application/json",
            headers={"X-Auth-Return-Redirect": "1"},
            **extra,
        )
    return client.post(f"/auth/{route}", body, **extra)


def _assert_refused(client, route, response, before, session_value):
    assert_safe(response)
    assert not sets_session(response) and not deletes_session(response)
    assert rows() == before
    if route == "session":
        assert response.status_code == 400 and response.content == b"null"
    else:
        url = response["Location"] if response.status_code == 302 else response.json()["url"]
        # A browser's sign-out goes back to the sign-out page (JSON clients: Auth.js's URL).
        page = "signout" if route == "signout" and response.status_code == 302 else "signin"
        assert url == f"http://testserver/auth/{page}?error=MissingCSRF"
    # The session is untouched: still there, still the same user.
    assert client.cookies[SESSION].value == session_value
    assert client.get("/auth/session").json()["user"]["email"] == "alice@example.com"


@pytest.mark.parametrize("as_json", [False, True], ids=["form", "json"])
@pytest.mark.parametrize("variant", list(CSRF_BODIES))
@pytest.mark.parametrize("route", list(POST_ROUTES))
def test_csrf_variants_are_refused(client, site, alice, route, variant, as_json):
    session_value = force_sign_in(client, alice)
    real = csrf_pair(client)
    body = dict(POST_ROUTES[route])
    token = CSRF_BODIES[variant](real, client)
    if token is not None:
        body["csrfToken"] = token
    if not as_json and "data" in body:
        body["data"] = json.dumps(body["data"])
    before = rows()
    response = _post(client, route, body, as_json=as_json)
    _assert_refused(client, route, response, before, session_value)


@pytest.mark.parametrize("route", list(POST_ROUTES))
def test_csrf_control_the_real_token_works(client, site, alice, route):
    # The refusals above are CSRF's doing: the same requests with the token pass.
    force_sign_in(client, alice)
    body = {**POST_ROUTES[route], "csrfToken": csrf_pair(client)}
    response = _post(client, route, body, as_json=True)
    assert response.status_code < 500
    url = response.get("Location") or response.json().get("url") or ""
    assert "MissingCSRF" not in url
    if route == "session":
        assert response.json()["user"]["email"] == "alice@example.com"


CSRF_COOKIES = {
    "no cookie": lambda real, cookie: "",
    "swapped with another browser's": lambda real, cookie: (
        "authjs.csrf-token=" + Client().get("/auth/csrf").cookies["authjs.csrf-token"].coded_value
    ),
    "token without hash": lambda real, cookie: f"authjs.csrf-token={real}",
    "token with an empty hash": lambda real, cookie: f"authjs.csrf-token={real}%7C",
    "hash of another secret": lambda real, cookie: (
        f"authjs.csrf-token={real}%7C"
        + hashlib.sha256((real + "another-secret").encode()).hexdigest()
    ),
    "truncated hash": lambda real, cookie: f"authjs.csrf-token={cookie[:-1]}",
    "wrong name: __Host- over http": lambda real, cookie: f"__Host-authjs.csrf-token={cookie}",
    "wrong name: next-auth": lambda real, cookie: f"next-auth.csrf-token={cookie}",
    "wrong name: case": lambda real, cookie: f"AUTHJS.CSRF-TOKEN={cookie}",
    "duplicate, forged last": lambda real, cookie: (
        f"authjs.csrf-token={cookie}; " + f"authjs.csrf-token={'0' * 64}%7C{'0' * 64}"
    ),
    "oversized": lambda real, cookie: f"authjs.csrf-token={real}%7C{'a' * 8000}",
    "percent junk": lambda real, cookie: "authjs.csrf-token=%E0%A4%A%7C%ZZ",
}


@pytest.mark.parametrize("variant", list(CSRF_COOKIES))
@pytest.mark.parametrize("route", list(POST_ROUTES))
def test_csrf_cookie_variants_are_refused(client, site, alice, route, variant):
    session_value = force_sign_in(client, alice)
    real = csrf_pair(client)
    cookie = client.cookies["authjs.csrf-token"].coded_value
    others = "; ".join(
        f"{m.key}={m.coded_value}" for m in client.cookies.values() if "csrf" not in m.key
    )
    header = "; ".join(p for p in (others, CSRF_COOKIES[variant](real, cookie)) if p)
    body = {**POST_ROUTES[route], "csrfToken": real}
    before = rows()
    response = _post(client, route, body, as_json=True, HTTP_COOKIE=header)
    _assert_refused(client, route, response, before, session_value)


@pytest.mark.parametrize("route", list(POST_ROUTES))
def test_csrf_token_in_the_query_does_not_count(client, site, alice, route):
    session_value = force_sign_in(client, alice)
    real = csrf_pair(client)
    before = rows()
    response = _post(client, f"{route}?csrfToken={real}", dict(POST_ROUTES[route]), as_json=True)
    _assert_refused(client, route, response, before, session_value)


# -- cookies: tampered, oversized, stray, chunked, duplicated ----------------------------------


def _valid_jwt(alice, **claims):
    token = {"sub": str(alice.pk), "email": alice.email, **claims}
    return jose.encode(token=token, secret=SECRET, salt=SESSION)


SESSION_VALUES = {
    "flipped char": lambda a: (lambda t: t[:-5] + ("A" if t[-5] != "A" else "B") + t[-4:])(
        _valid_jwt(a)
    ),
    "truncated": lambda a: _valid_jwt(a)[:-10],
    "another secret": lambda a: jose.encode(
        token={"sub": str(a.pk)}, secret="another-secret-" + "y" * 30, salt=SESSION
    ),
    "another salt": lambda a: jose.encode(
        token={"sub": str(a.pk)}, secret=SECRET, salt="__Secure-" + SESSION
    ),
    "unsigned JWS": lambda a: "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.",
    "five dots": lambda a: "a.b.c.d.e.f",
    "empty segments": lambda a: "....",
    "percent junk": lambda a: "%E0%A4%A",
    "huge": lambda a: "x" * 200_000,
    "huge JWE-shaped": lambda a: (
        "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2Q0JDLUhTNTEyIn0.." + "A" * 50_000 + ".B.C"
    ),
    "database token of nobody": lambda a: "00000000-0000-0000-0000-000000000000",
}


@pytest.mark.parametrize("strategy", ["jwt", "database"])
@pytest.mark.parametrize("variant", list(SESSION_VALUES))
def test_tampered_session_cookies(client, site, alice, variant, strategy):
    site(session={"strategy": strategy}, adapter="webauth.adapters.django.DjangoAdapter")
    value = SESSION_VALUES[variant](alice)
    header = f"{SESSION}={ck.encode_value(value)}"
    before = rows()
    for path in ("/auth/session", "/whoami/", "/private/"):
        response = client.get(path, HTTP_COOKIE=header)
        assert_safe(response)
        assert not sets_session(response)
    assert client.get("/auth/session", HTTP_COOKIE=header).content == b"null"
    assert client.get("/whoami/", HTTP_COOKIE=header).json()["authenticated"] is False
    token = csrf_pair(client)
    header = cookie_header(client, f"{SESSION}={ck.encode_value(value)}")
    response = client.post("/auth/signout", {"csrfToken": token}, HTTP_COOKIE=header)
    assert_safe(response)
    assert response.status_code == 302 and deletes_session(response)
    assert rows() == before


STRAY_SUFFIXES = ["@", "\u00b2", "\uff11", "\u0663", "x", "", "-1", "01", "0x", " 0", "9" * 4400]


@pytest.mark.parametrize("chunked", [False, True], ids=["plain", "chunked"])
@pytest.mark.parametrize("suffix", STRAY_SUFFIXES, ids=_id)
def test_stray_session_cookie_names_are_ignored(client, site, alice, suffix, chunked):
    # Issue 10, item 1: "authjs.session-token.@" or ".²" broke every page, sign-in
    # and sign-out for as long as the cookie lived.
    jwt = _valid_jwt(alice, name="A" * (9000 if chunked else 1))
    if chunked:
        parts = [jwt[i : i + ck.CHUNK_SIZE] for i in range(0, len(jwt), ck.CHUNK_SIZE)]
        assert len(parts) > 1
        session = "; ".join(f"{SESSION}.{i}={p}" for i, p in reversed(list(enumerate(parts))))
    else:
        session = f"{SESSION}={jwt}"
    token = csrf_pair(client)
    header = cookie_header(client, f"{session}; {SESSION}.{suffix}=junk")
    assert client.get("/auth/session", HTTP_COOKIE=header).json()["user"]["email"] == alice.email
    assert client.get("/whoami/", HTTP_COOKIE=header).json()["authenticated"] is True
    assert client.get("/private/", HTTP_COOKIE=header).status_code == 200
    response = sign_in(client, "/private/", HTTP_COOKIE=header)
    assert response["Location"] == "http://testserver/private/" and sets_session(response)
    response = client.post("/auth/signout", {"csrfToken": token}, HTTP_COOKIE=header)
    assert response["Location"] == "http://testserver" and deletes_session(response)
    assert not any(suffix and name.endswith("." + suffix) for name in response.cookies)


def test_a_stray_name_alone_is_no_session(client, site):
    response = client.get(
        "/auth/session", HTTP_COOKIE=wsgi(f"{SESSION}.@=junk; {SESSION}.\u00b2=x")
    )
    assert response.status_code == 200 and response.content == b"null"
    assert not any(SESSION in name for name in response.cookies)


def test_chunks_out_of_order_and_numeric(client, site, alice):
    jwt = _valid_jwt(alice, name="A" * 40_000)  # 11 chunks: ".10" sorts after ".9"
    parts = [jwt[i : i + ck.CHUNK_SIZE] for i in range(0, len(jwt), ck.CHUNK_SIZE)]
    assert len(parts) > 10
    order = sorted(range(len(parts)), key=str)  # 0, 1, 10, 2, ...: text order
    header = "; ".join(f"{SESSION}.{i}={parts[i]}" for i in order)
    assert client.get("/auth/session", HTTP_COOKIE=header).json()["user"]["email"] == alice.email


@pytest.mark.parametrize(
    ("extra", "valid"),
    [
        (f"{SESSION}.1=planted", False),  # replaces the real .1 (the last of a name wins)
        (f"{SESSION}.4=planted", False),  # one chunk too many
        (f"{SESSION}.{ck.MAX_CHUNKS}=planted", False),  # beyond the cap
        (f"{SESSION}.01=planted", True),  # no chunk: int() would make it a second .1
        (f"{SESSION}.\uff11=planted", True),  # no chunk: int() would make it a second .1
    ],
)
def test_planted_chunks(client, site, alice, extra, valid):
    jwt = _valid_jwt(alice, name="A" * 9000)
    parts = [jwt[i : i + ck.CHUNK_SIZE] for i in range(0, len(jwt), ck.CHUNK_SIZE)]
    assert len(parts) == 4
    header = wsgi("; ".join([*(f"{SESSION}.{i}={p}" for i, p in enumerate(parts)), extra]))
    for path in ("/auth/session", "/whoami/", "/private/"):
        response = client.get(path, HTTP_COOKIE=header)
        assert_safe(response)
    response = client.get("/whoami/", HTTP_COOKIE=header)
    assert response.json()["authenticated"] is valid


def test_many_stray_chunks_cost_a_bounded_response(client, site, alice):
    # 200 planted chunk cookies made 202 Set-Cookie headers on one response.
    strays = "; ".join(f"{SESSION}.{i}=x" for i in range(200))
    response = client.get("/auth/session", HTTP_COOKIE=strays)
    assert response.status_code == 200 and response.content == b"null"
    assert len(response.cookies) <= 2 + ck.MAX_CHUNKS + 1
    token = csrf_pair(client)
    header = cookie_header(client, f"{SESSION}={_valid_jwt(alice)}; {strays}")
    for response in (
        client.post("/auth/signout", {"csrfToken": token}, HTTP_COOKIE=header),
        sign_in(client, "/x", HTTP_COOKIE=header),
        client.get("/auth/session", HTTP_COOKIE=header),
    ):
        assert_safe(response)
        assert len(response.cookies) <= 2 + ck.MAX_CHUNKS + 1


@pytest.mark.parametrize(
    "header",
    [
        f"{SESSION}=junk; {SESSION}=junk2",
        "=; ;;; a; ==; a=b=c",
        "authjs.session-token",
        f"{SESSION}=\u00e9\u00e8\u00ff",  # latin-1 bytes of a WSGI header
        f'{SESSION}="quoted\\"value"',
        "a=" + "b" * 100_000,
        "; ".join(f"c{i}=v" for i in range(3000)),
        "authjs.csrf-token=" + "%7C" * 3000,
        "authjs.pkce.code_verifier=x; authjs.state=y; authjs.nonce=z",
    ],
    ids=lambda h: _id(h),
)
def test_malformed_cookie_headers(client, site, header):
    for path in ("/auth/session", "/auth/csrf", "/auth/signin", "/whoami/", "/private/"):
        response = client.get(path, HTTP_COOKIE=header)
        assert_safe(response)
        assert not sets_session(response)


@pytest.mark.parametrize(
    "cookies",
    [
        {},
        {"authjs.state": "junk", "authjs.pkce.code_verifier": "junk", "authjs.nonce": "junk"},
        {"authjs.pkce.code_verifier": "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2Q0JDLUhTNTEyIn0..a.b.c"},
        {"authjs.state": "x" * 100_000},
    ],
)
@pytest.mark.parametrize(
    "query",
    ["", "?code=abc", "?code=abc&state=x", "?error=access_denied&error_description=%0A[auth]"],
)
def test_oauth_callback_with_hostile_check_cookies(client, site, cookies, query):
    before = rows()
    header = "; ".join(f"{k}={v}" for k, v in cookies.items())
    for method in ("get", "post"):
        response = getattr(client, method)(f"/auth/callback/oauth{query}", HTTP_COOKIE=header)
        assert_safe(response)
        assert response.status_code == 302 and not sets_session(response)
    assert rows() == before


# -- malformed bodies -------------------------------------------------------------------------

BODIES = {
    "bad JSON": ("application/json", b"{"),
    "JSON array": ("application/json", b"[]"),
    "JSON string": ("application/json", b'"csrfToken"'),
    "JSON null": ("application/json", b"null"),
    "JSON deep": ("application/json", b"[" * 100_000 + b"]" * 100_000),
    "JSON non-UTF-8": ("application/json", b'{"csrfToken": "\xff\xfe"}'),
    "JSON with BOM": ("application/json", b'\xef\xbb\xbf{"csrfToken": "x"}'),
    "JSON huge number": ("application/json", b'{"csrfToken": 1' + b"0" * 5000 + b"}"),
    "JSON arrays for strings": (
        "application/json",
        b'{"csrfToken": ["x"], "username": ["alice"], "password": {"a": 1}, '
        b'"callbackUrl": ["//e"]}',
    ),
    "form non-UTF-8": ("application/x-www-form-urlencoded", b"csrfToken=%ff&username=\xff\xfe"),
    "form too many fields": (
        "application/x-www-form-urlencoded",
        b"&".join(b"f%d=1" % i for i in range(1500)),
    ),
    "form huge": ("application/x-www-form-urlencoded", b"username=" + b"a" * 3_000_000),
    "form NUL": ("application/x-www-form-urlencoded", b"username=al%00ice&password=%00"),
    "text/plain form": ("text/plain", b"csrfToken=x&username=alice&password=correct+horse"),
    "no content type": ("", b"csrfToken=x"),
    "multipart broken": ("multipart/form-data; boundary=zz", b"--zz\r\nContent-Disposition: x"),
    "multipart no boundary": ("multipart/form-data", b"a"),
    "bad charset": ("application/x-www-form-urlencoded; charset=nope", b"username=alice"),
    "xml": ("application/xml", b"<csrfToken>x</csrfToken>"),
}


@pytest.mark.parametrize("body", list(BODIES))
@pytest.mark.parametrize("route", list(POST_ROUTES))
def test_malformed_bodies(client, site, alice, route, body):
    session_value = force_sign_in(client, alice)
    csrf_pair(client)
    content_type, data = BODIES[body]
    before = rows()
    response = client.generic("POST", f"/auth/{route}", data, content_type=content_type)
    assert_safe(response)
    assert not sets_session(response) and not deletes_session(response)
    assert rows() == before
    assert client.cookies[SESSION].value == session_value


@pytest.mark.parametrize(
    "fields",
    [
        {"username": "alice", "password": ["correct horse"]},
        {"username": ["alice"], "password": "correct horse"},
        {"username": {"$ne": None}, "password": {"$ne": None}},
        {"username": None, "password": None},
        {"username": 1, "password": 2},
        # (not the right password: MariaDB's unicode_ci collation ignores a NUL,
        # so "alice\x00" is alice there, as "ALICE" is)
        {"username": "alice\x00", "password": "wrong horse"},
        {"username": "a" * 1_000_000, "password": "correct horse"},
        {"username": "alice", "password": "correct horse" + "\x00"},
    ],
    ids=lambda f: _id(repr(f)),
)
def test_credentials_with_hostile_fields(client, site, alice, fields):
    token = csrf_pair(client)
    before = rows()
    response = client.post(
        "/auth/callback/credentials",
        json.dumps({"csrfToken": token, **fields}),
        content_type="application/json",
    )
    assert_safe(response)
    assert not sets_session(response)
    assert rows() == before


# -- foreign hosts ----------------------------------------------------------------------------

ROUTES = [
    ("get", "/auth/session"),
    ("get", "/auth/csrf"),
    ("get", "/auth/providers"),
    ("get", "/auth/signin"),
    ("get", "/auth/signout"),
    # (error=Configuration would be a 500 page: Auth.js gives that page status 500)
    ("get", "/auth/error?error=Verification"),
    ("get", "/auth/callback/oauth?code=x"),
    ("post", "/auth/signin/oauth"),
    ("post", "/auth/callback/credentials"),
    ("post", "/auth/signout"),
    ("post", "/auth/session"),
    ("get", "/private/"),
]

HOSTS = [
    "evil.example",
    "testserver.evil.example",
    "evil.example:80",
    "testserver@evil.example",
    "testserver:80@evil.example",
    "evil.example#testserver",
    "testserver/evil.example",
    "testserver\\evil.example",
    "[::1]:80",
    "\u0442estserver",
    "testserver\x00",
]


@pytest.mark.parametrize("host", HOSTS, ids=_id)
@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_foreign_host_headers(client, site, alice, method, path, host):
    force_sign_in(client, alice)
    token = csrf_pair(client)
    before = rows()
    response = getattr(client, method)(
        path, {"csrfToken": token, "callbackUrl": "/x"} if method == "post" else {}, HTTP_HOST=host
    )
    assert_safe(response)
    assert not sets_session(response) and not deletes_session(response)
    assert rows() == before


@pytest.mark.parametrize("use_forwarded", [False, True])
@pytest.mark.parametrize("forwarded", ["evil.example", "testserver, evil.example"])
@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_x_forwarded_host(client, site, alice, settings, method, path, forwarded, use_forwarded):
    settings.USE_X_FORWARDED_HOST = use_forwarded
    force_sign_in(client, alice)
    token = csrf_pair(client)
    data = {"csrfToken": token, "callbackUrl": "/x"} if method == "post" else {}
    response = getattr(client, method)(
        path, data, HTTP_X_FORWARDED_HOST=forwarded, HTTP_X_FORWARDED_PROTO="https"
    )
    assert_safe(response, allowed=(SITE, "idp.example") if path.endswith("/oauth") else (SITE,))


def test_auth_url_pins_the_origin_against_any_host(client, site, alice):
    site(url="http://testserver/auth", trust_host=False)
    response = sign_in(client, "https://app.example.com/x", HTTP_HOST="app.example.com")
    assert response["Location"] == "http://testserver"


# -- the whole OpenID Connect flow, against the test provider -------------------------------------


@pytest.fixture
def idp(live_server):
    from django.core.cache import cache

    from .support.oidc_helpers import start_idp

    cache.clear()
    return start_idp(live_server)


@pytest.fixture
def rp(settings, idp):
    from webauth.providers.oauth import OIDC

    from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET

    settings.WEBAUTH = {
        "secret": SECRET,
        "providers": [
            OIDC(
                id="example",
                name="Example IdP",
                issuer=idp.issuer,
                client_id=CLIENT_ID,
                client_secret=CLIENT_SECRET,
                checks=("pkce", "nonce"),
            )
        ],
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "payload",
    [
        "//evil.example",
        "/\\evil.example",
        "https:evil.example",
        "javascript:alert(1)",
        "http://testserver@evil.example",
        "/\t/evil.example",
        "http://evil.example",
    ],
    ids=_id,
)
def test_oidc_sign_in_lands_on_the_site(client, idp, rp, payload):
    from .support.oidc_helpers import authorize, begin, callback

    url = begin(client, callback_url=payload)
    assert landing_host(url) == urlsplit(idp.url).hostname  # the provider, then back
    response = callback(client, authorize(idp, url))
    assert_safe(response)
    assert response.status_code == 302 and sets_session(response)


@pytest.mark.django_db(transaction=True)
def test_oidc_callback_with_a_planted_callback_url_cookie(client, idp, rp):
    from .support.oidc_helpers import authorize, begin, callback

    location = authorize(idp, begin(client, callback_url="/after/"))
    client.cookies["authjs.callback-url"] = ck.encode_value("javascript:alert(1)")
    response = callback(client, location)
    assert response["Location"] == "http://testserver"
    assert sets_session(response)


# -- the same under ASGI ------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["@", "\u00b2", "\uff11", "01"], ids=_id)
def test_stray_session_cookie_names_under_asgi(site, alice, suffix):
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    browser = Client()
    token = csrf_pair(browser)
    jwt = _valid_jwt(alice)
    header = cookie_header(
        browser,
        f"{SESSION}={jwt}; {SESSION}.{suffix}=junk; authjs.callback-url=javascript%3Aalert(1)",
    )
    client = AsyncClient()
    get, post = async_to_sync(client.get), async_to_sync(client.post)
    response = get("/whoami-async/", headers={"Cookie": header})
    assert response.status_code == 200 and response.json()["authenticated"] is True
    response = get("/auth/session", headers={"Cookie": header})
    assert_safe(response)
    assert response.json()["user"]["email"] == alice.email
    response = post("/auth/signout", {"csrfToken": token}, headers={"Cookie": header})
    assert_safe(response)
    assert response["Location"] == "http://testserver" and deletes_session(response)


# -- email sign-in (issue 11) -------------------------------------------------------------------

EMAIL_PENDING = "authjs.email-pending"


@pytest.fixture
def email_site(settings):
    """Email sign-in beside credentials, on DjangoAdapter with JWT sessions."""
    from webauth.providers import Email

    def configure(**options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "providers": ["webauth.providers.DjangoCredentials", Email(**options)],
            "rate_limits": False,  # a case may ask for many emails
        }

    configure()
    return configure


def _grants() -> int:
    from webauth.models import VerificationToken

    return VerificationToken.objects.count()


def _ask(client, email="alice@example.com", **fields):
    return client.post(
        "/auth/signin/email", {"csrfToken": csrf_pair(client), "email": email, **fields}
    )


def _mailed():
    from django.core import mail

    body = mail.outbox[-1].body
    link = re.findall(r"http://testserver/auth/callback/email\?\S+", body)[0]
    code = re.findall(r"\b([0-9A-Z]{4}-[0-9A-Z]{4})\b", body)[0]
    return link, code


def _path(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


@pytest.mark.parametrize("payload", REDIRECTS, ids=_id)
def test_email_callback_url_never_leaves_the_site(client, email_site, alice, payload):
    response = _ask(client, callbackUrl=payload)
    assert_safe(response)
    link, code = _mailed()
    sent = parse_qs(urlsplit(link).query)["callbackUrl"][-1]
    assert landing_host(sent) == SITE, sent[:200]
    page = client.get(_path(link))
    assert page.status_code == 200
    assert_safe(page)  # the confirmation form's callbackUrl and action
    fields = page_inputs(page).values
    response = client.post(
        "/auth/callback/email", {name: values[-1] for name, values in fields.items()}
    )
    assert_safe(response)
    assert response.status_code == 302 and sets_session(response)
    # The code of a second email lands on the site too.
    _ask(client, callbackUrl=payload)
    _, code = _mailed()
    response = client.post("/auth/callback/email", {"csrfToken": csrf_pair(client), "code": code})
    assert_safe(response)
    assert sets_session(response)


@pytest.mark.parametrize("payload", REDIRECTS[::2], ids=_id)
def test_email_link_with_a_hostile_callback_url(client, email_site, alice, payload):
    # Someone rewrites the link's callbackUrl: the confirmation page keeps the one
    # the browser asked with; a one-click link resolves it as any query's.
    _ask(client, callbackUrl="/after/")
    link, _ = _mailed()
    parts = urlsplit(link)
    params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    from urllib.parse import urlencode

    tampered = f"{parts.path}?{urlencode({**params, 'callbackUrl': payload})}"
    page = client.get(tampered)
    assert_safe(page)
    assert page_inputs(page).values["callbackUrl"] == ["http://testserver/after/"]
    email_site(confirm_link=False)
    _ask(client)
    link, _ = _mailed()
    params = {k: v[-1] for k, v in parse_qs(urlsplit(link).query).items()}
    response = Client().get(f"/auth/callback/email?{urlencode({**params, 'callbackUrl': payload})}")
    assert_safe(response)
    assert sets_session(response)


@pytest.mark.parametrize("variant", list(CSRF_BODIES))
def test_email_routes_refuse_csrf_variants(client, email_site, alice, variant):
    from django.core import mail

    real = csrf_pair(client)
    _ask(client)
    link, code = _mailed()
    token = parse_qs(urlsplit(link).query)["token"][-1]
    sent = len(mail.outbox)
    for route, body in (
        ("signin/email", {"email": "alice@example.com"}),
        ("callback/email", {"token": token, "email": "alice@example.com"}),
        ("callback/email", {"code": code}),
    ):
        forged = CSRF_BODIES[variant](real, client)
        if forged is not None:
            body = {**body, "csrfToken": forged}
        for as_json in (False, True):
            response = _post(client, route, body, as_json=as_json)
            assert_safe(response)
            assert not sets_session(response)
            url = response["Location"] if response.status_code == 302 else response.json()["url"]
            assert url == "http://testserver/auth/signin?error=MissingCSRF"
    assert len(mail.outbox) == sent and _grants() == 1


LINK_QUERIES = [
    "",
    "?token=",
    "?token=x",
    "?email=alice%40example.com",
    "?token=" + "a" * 100_000 + "&email=alice%40example.com",
    "?token=%00&email=%00",
    "?token=%ff%fe&email=%ff",
    "?token=x&token=y&email=alice%40example.com&email=bob%40example.com",
    "?token[]=x&email[]=alice%40example.com",
    "?token=x&email=" + "a" * 10_000,
    "?token=x&email=alice%40example.com%0d%0aSet-Cookie:%20planted=1",
    "?token=x&email=alice%40example.com&callbackUrl=javascript:alert(1)",
    "?token=x&email=alice%40example.com&callbackUrl=%2F%2Fevil.example",
]


@pytest.mark.parametrize("one_click", [False, True], ids=["confirm", "one-click"])
@pytest.mark.parametrize("query_string", LINK_QUERIES, ids=_id)
def test_email_link_with_hostile_parameters(client, email_site, alice, query_string, one_click):
    email_site(confirm_link=not one_click)
    _ask(client)
    for browser in (client, Client()):
        for method in ("get", "head"):
            response = getattr(browser, method)(f"/auth/callback/email{query_string}")
            assert_safe(response)
            assert not sets_session(response)
    assert _grants() == 1


PENDING_VALUES = {
    "junk": lambda client: "junk",
    "huge": lambda client: "x" * 50_000,
    "percent junk": lambda client: "%E0%A4%A",
    "another secret": lambda client: jose.encode(
        token=_with_real_binding(_ALICE, client),
        secret="another-secret-" + "y" * 30,
        salt=EMAIL_PENDING,
    ),
    "another salt": lambda client: jose.encode(
        token=_with_real_binding(_ALICE, client), secret=SECRET, salt=SESSION
    ),
    "expired": lambda client: jose.encode(
        token=_with_real_binding(_ALICE, client),
        secret=SECRET,
        salt=EMAIL_PENDING,
        max_age=-60,
    ),
}

# Made with the real secret (no attacker can), yet odd: none may break a route.
# (payload, whether it still names this browser's sign-in for alice); the
# binding "real" stands for the one the browser's own cookie holds.
_ALICE = {"provider": "email", "identifier": "alice@example.com", "binding": "real"}
ODD_PAYLOADS = [
    ({**_ALICE, "provider": ["email"]}, False),
    ({**_ALICE, "identifier": None}, False),
    ({**_ALICE, "identifier": ""}, False),
    ({**_ALICE, "identifier": {"$ne": None}}, False),
    ({**_ALICE, "identifier": "nobody@example.com"}, False),
    ({**_ALICE, "provider": "other"}, False),
    ({**_ALICE, "attempts": "many"}, True),
    ({**_ALICE, "attempts": 10**30}, True),
    ({**_ALICE, "attempts": -(10**30)}, True),
    ({**_ALICE, "callbackUrl": 42}, True),
    ({**_ALICE, "callbackUrl": "//evil.example"}, True),
    ({**_ALICE, "callbackUrl": "javascript:x"}, True),
    # The grant's binding: only the real one redeems.
    ({"provider": "email", "identifier": "alice@example.com"}, False),
    ({**_ALICE, "binding": None}, False),
    ({**_ALICE, "binding": ""}, False),
    ({**_ALICE, "binding": ["real"]}, False),
    ({**_ALICE, "binding": "x" * 43}, False),
]


def _with_real_binding(payload, client):
    """*payload* with the binding of the grant *client* asked for in place of "real"."""
    mine = jose.decode(token=client.cookies[EMAIL_PENDING].value, secret=SECRET, salt=EMAIL_PENDING)
    if payload.get("binding") == "real":
        return {**payload, "binding": mine["binding"]}
    return payload


@pytest.mark.parametrize(
    ("make", "may_redeem"),
    [(f, False) for f in PENDING_VALUES.values()]
    + [
        (
            (
                lambda client, p=p: jose.encode(
                    token=_with_real_binding(p, client), secret=SECRET, salt=EMAIL_PENDING
                )
            ),
            ok,
        )
        for p, ok in ODD_PAYLOADS
    ],
    ids=[*PENDING_VALUES, *(f"odd {i}" for i in range(len(ODD_PAYLOADS)))],
)
def test_email_with_hostile_pending_cookies(client, email_site, alice, make, may_redeem):
    _ask(client)
    link, code = _mailed()
    client.cookies[EMAIL_PENDING] = make(client)
    token = csrf_pair(client)
    responses = [
        client.get("/auth/verify-request?provider=email&type=email"),
        client.get(_path(link)),
        client.post("/auth/callback/email", {"csrfToken": token, "code": code}),
        client.post(
            "/auth/callback/email",
            {
                "csrfToken": token,
                "token": parse_qs(urlsplit(link).query)["token"][-1],
                "email": "alice@example.com",
            },
        ),
    ]
    for response in responses:
        assert_safe(response)
    redeemed = [r for r in responses if sets_session(r)]
    assert len(redeemed) == (1 if may_redeem else 0)
    assert _grants() == (0 if may_redeem else 1)


@pytest.mark.parametrize(
    "code",
    [
        "",
        " ",
        "A" * 100_000,
        "\x00" * 8,
        "ＡＢＣＤ－ＥＦＧＨ",
        "\u202eABCD-EFGH",
        "ABCD-EFG\U0001f600",
        ["ABCD-EFGH"],
        {"$ne": None},
        None,
        12345678,
    ],
    ids=lambda c: _id(repr(c)),
)
def test_email_codes_with_hostile_values(client, email_site, alice, code):
    _ask(client)
    response = client.post(
        "/auth/callback/email",
        json.dumps({"csrfToken": csrf_pair(client), "code": code}),
        content_type="application/json",
    )
    assert_safe(response)
    assert response.status_code == 400 and not sets_session(response)
    assert _grants() == 1


# -- passkeys: the options route and the callback -------------------------------------------------

CHALLENGE = "authjs.challenge"


@pytest.fixture
def passkey_site(settings):
    """A Passkey provider beside credentials, on DjangoAdapter with JWT sessions."""
    from webauth.providers import Passkey

    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "jwt"},
        "experimental": {"enable_webauthn": True},
        "providers": ["webauth.providers.DjangoCredentials", Passkey()],
        "rate_limits": False,  # a case may ask for many options
    }


@pytest.fixture
def passkey(client, passkey_site):
    """A registered passkey (its user is new@example.com) and the authenticator holding it."""
    from .support.authenticator import SoftAuthenticator

    authenticator = SoftAuthenticator()
    options = client.get("/auth/webauthn-options/passkey?action=register&email=new@example.com")
    data = authenticator.create(options.json()["options"], origin="http://testserver")
    response = client.post(
        "/auth/callback/passkey", {"action": "register", "data": json.dumps(data)}
    )
    assert response.status_code == 302
    client.cookies.clear()
    return authenticator


def _assertion(client, authenticator):
    options = client.get("/auth/webauthn-options/passkey?action=authenticate").json()["options"]
    return json.dumps(authenticator.get(options, origin="http://testserver"))


@pytest.mark.parametrize("payload", REDIRECTS, ids=_id)
@pytest.mark.parametrize("as_json", [False, True])
def test_passkey_callback_url_never_leaves_the_site(client, passkey, payload, as_json):
    body = {"action": "authenticate", "data": _assertion(client, passkey), "callbackUrl": payload}
    headers = {"X-Auth-Return-Redirect": "1"} if as_json else {}
    response = client.post("/auth/callback/passkey", body, headers=headers)
    assert_safe(response)
    assert sets_session(response)  # a good passkey signs in; only the landing is changed


@pytest.mark.parametrize(
    "query",
    [
        {"action": ["register", "authenticate"]},
        {"action": "register\x00"},
        {"action": "a" * 100_000},
        {"email": "a" * 100_000, "action": "register"},
        {"email": "\u202enew@example.com", "action": "register"},
        {"email": "x@y", "action": "register"},
        {"email": ["a@example.com", "b@example.com"]},
        {"callbackUrl": "//evil.example"},
        {"email": "' OR 1=1 --", "action": "register"},
    ],
    ids=lambda q: _id(repr(q)),
)
def test_passkey_options_with_hostile_queries(client, passkey_site, query):
    response = client.get("/auth/webauthn-options/passkey", query)
    assert_safe(response)
    assert response.status_code in (200, 400)
    assert rows() == (0, 0, 0)


@pytest.mark.parametrize(
    "cookie",
    [
        "junk",
        "x" * 50_000,
        "%E0%A4%A",
        lambda: jose.encode(
            token={"binding": "b" * 43, "provider": "passkey"},
            secret="other-" + "y" * 30,
            salt=CHALLENGE,
        ),
        lambda: jose.encode(
            token={"binding": "b" * 43, "provider": "passkey"}, secret=SECRET, salt=SESSION
        ),
        lambda: jose.encode(
            token={"binding": ["b" * 43], "provider": "passkey"}, secret=SECRET, salt=CHALLENGE
        ),
        lambda: jose.encode(
            token={"binding": "b" * 43, "provider": "webauthn"}, secret=SECRET, salt=CHALLENGE
        ),
        lambda: jose.encode(
            token={"binding": "", "provider": "passkey"}, secret=SECRET, salt=CHALLENGE
        ),
    ],
    ids=lambda c: _id(c if isinstance(c, str) else "jwe"),
)
def test_passkey_callback_with_hostile_challenge_cookies(client, passkey, cookie):
    data = _assertion(client, passkey)
    client.cookies[CHALLENGE] = cookie() if callable(cookie) else cookie
    response = client.post(
        "/auth/callback/passkey",
        {"action": "authenticate", "data": data},
        headers={"X-Auth-Return-Redirect": "1"},
    )
    assert_safe(response)
    assert response.status_code == 400 and not sets_session(response)
    # Options asked with the cookie still work (a bad cookie is no cookie).
    assert client.get("/auth/webauthn-options/passkey").status_code == 200


@pytest.mark.parametrize("host", HOSTS, ids=_id)
@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/auth/webauthn-options/passkey"), ("post", "/auth/callback/passkey")],
)
def test_passkey_routes_with_foreign_hosts(client, passkey_site, method, path, host):
    data = {"action": "authenticate", "data": "{}", "callbackUrl": "/x"} if method == "post" else {}
    response = getattr(client, method)(path, data, HTTP_HOST=host)
    assert_safe(response)
    assert not sets_session(response)
    assert rows() == (0, 0, 0)
