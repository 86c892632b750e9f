"""The per-request state (webauth/state.py): the origin, the body, the caches on the hot path."""

import pytest
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest

from webauth.callbacks import default_redirect
from webauth.cookies import decode_value
from webauth.errors import InvalidCallbackUrl
from webauth.state import forget_validated_hosts, validated_host

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_host_cache():
    forget_validated_hosts()
    yield
    forget_validated_hosts()


def test_a_disallowed_host_is_refused_every_time(client):
    assert client.get("/auth/session", HTTP_HOST="example.com").status_code == 200
    for _ in range(2):
        assert client.get("/auth/session", HTTP_HOST="evil.example").status_code == 400
    assert client.get("/auth/session", HTTP_HOST="example.com").status_code == 200


def test_changing_allowed_hosts_forgets_the_hosts_seen(rf, settings):
    # Through the test client CommonMiddleware would refuse the host itself, so
    # this asks webauth's own check directly.
    assert validated_host(rf.get("/", HTTP_HOST="app.example.com")) == "app.example.com"
    settings.ALLOWED_HOSTS = ["testserver"]  # sends setting_changed
    with pytest.raises(DisallowedHost):
        validated_host(rf.get("/", HTTP_HOST="app.example.com"))


def test_host_headers_are_validated_once(rf, monkeypatch):
    calls = []
    get_host = HttpRequest.get_host

    def counting(request: HttpRequest) -> str:
        calls.append(request.META.get("HTTP_HOST"))
        return get_host(request)

    monkeypatch.setattr(HttpRequest, "get_host", counting)
    for _ in range(3):
        assert validated_host(rf.get("/", HTTP_HOST="example.com")) == "example.com"
    assert validated_host(rf.get("/", HTTP_HOST="app.example.com")) == "app.example.com"
    assert calls == ["example.com", "app.example.com"]


def test_the_forwarded_host_is_part_of_what_is_remembered(client, settings):
    settings.USE_X_FORWARDED_HOST = True
    plain = client.get("/auth/session", HTTP_HOST="example.com")
    forwarded = client.get(
        "/auth/session", HTTP_HOST="example.com", HTTP_X_FORWARDED_HOST="app.example.com"
    )
    assert plain.cookies["authjs.callback-url"].value == "http://example.com"
    assert forwarded.cookies["authjs.callback-url"].value == "http://app.example.com"


@pytest.mark.parametrize("length", [10, 2000])
def test_default_redirect_is_the_same_for_short_and_long_urls(length):
    base = "https://example.com"
    path = "/" + "a" * length
    assert default_redirect(url=path, base_url=base) == base + path
    assert default_redirect(url=base + path, base_url=base) == base + path
    assert default_redirect(url="https://evil.example" + path, base_url=base) == base
    with pytest.raises(InvalidCallbackUrl):
        default_redirect(url="javascript:" + path, base_url=base)


@pytest.mark.parametrize("length", [10, 2000])
def test_cookie_values_decode_the_same_for_short_and_long_values(length):
    text = "é/" * length
    encoded = "%C3%A9%2F" * length
    assert decode_value(encoded) == text
    assert decode_value("%FF" + encoded) == "%FF" + encoded  # invalid UTF-8: left as is


def test_remember_short_caches_only_short_values():
    from webauth.utils import remember_short

    calls = []

    @remember_short(5)
    def upper(value, suffix=""):
        calls.append(value)
        return value.upper() + suffix

    assert [upper("abc"), upper("abc"), upper("abcdefgh"), upper("abcdefgh")] == [
        "ABC",
        "ABC",
        "ABCDEFGH",
        "ABCDEFGH",
    ]
    assert calls == ["abc", "abcdefgh", "abcdefgh"]
    assert upper("abc", "!") == "ABC!"


# -- the POST body ----------------------------------------------------------------------------


def test_form_body_is_read_as_request_post_reads_it(rf):
    from webauth.state import parse_body

    body = "a=1&b=%C3%A9&a=2&empty=&plus=x+y"
    request = rf.post("/", body, content_type="application/x-www-form-urlencoded")
    assert parse_body(request) == {"a": "2", "b": "é", "empty": "", "plus": "x y"}
    # Django's own parsing of the same body still works afterwards.
    assert request.POST.getlist("a") == ["1", "2"] and request.POST["b"] == "é"


def test_form_body_that_is_not_utf8_is_read_as_latin1(rf):
    from webauth.state import parse_body

    request = rf.post("/", b"name=caf\xe9", content_type="application/x-www-form-urlencoded")
    assert parse_body(request) == {"name": "café"} == {k: request.POST[k] for k in request.POST}


def test_too_many_form_fields_are_refused_as_django_refuses_them(rf, settings):
    from django.core.exceptions import TooManyFieldsSent

    from webauth.state import parse_body

    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 3
    request = rf.post("/", "a=1&b=2&c=3&d=4", content_type="application/x-www-form-urlencoded")
    with pytest.raises(TooManyFieldsSent):
        parse_body(request)


@pytest.mark.parametrize(
    "content_type, body",
    [
        ("multipart/form-data", b'{"data": null}'),  # no boundary (found by schemathesis)
        ("multipart/form-data; boundary=zz", b"--zz\r\nContent-Disposition: x"),
    ],
)
def test_a_multipart_body_django_cannot_parse_is_no_body(rf, content_type, body):
    from webauth.state import parse_body

    request = rf.generic("POST", "/", body, content_type=content_type)
    assert parse_body(request) == {}
    assert not request.POST  # Django's own reading of it afterwards: empty, no error


def test_a_multipart_body_without_boundary_is_a_missing_csrf_token(client):
    # Read as no body, as malformed JSON is: the CSRF token is missing, which the
    # sign-in page explains; before, the parse error itself was error=Configuration.
    response = client.generic(
        "POST", "/auth/callback/credentials", b"a", content_type="multipart/form-data"
    )
    assert response.status_code == 302
    assert response["Location"].endswith("/auth/signin?error=MissingCSRF")


def test_too_many_form_fields_on_a_route_is_no_server_error(client, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 3
    response = client.post(
        "/auth/callback/credentials",
        "a=1&b=2&c=3&d=4",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 302
    assert response["Location"].endswith("/auth/error?error=Configuration")


def test_is_awaitable_agrees_with_inspect():
    import asyncio
    import inspect
    import types

    from webauth.utils import is_awaitable

    async def coroutine_function():
        return 1

    @types.coroutine
    def generator_coroutine():
        yield

    def plain_generator():
        yield

    class Awaitable:
        def __await__(self):
            return iter(())

    loop = asyncio.new_event_loop()
    coroutine = coroutine_function()
    values = [
        None,
        1,
        "x",
        {"a": 1},
        coroutine,
        generator_coroutine(),
        plain_generator(),
        Awaitable(),
        loop.create_future(),
    ]
    try:
        for value in values:
            assert is_awaitable(value) is inspect.isawaitable(value), value
    finally:
        coroutine.close()
        loop.close()
