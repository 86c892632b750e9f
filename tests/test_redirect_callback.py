"""The redirect callback: where a callbackUrl may send the browser after signing in or out."""

import pytest

from webauth.callbacks import default_redirect, run_redirect
from webauth.conf import build_config
from webauth.errors import InvalidCallbackUrl

BASE = "https://site.example"


def config(**callbacks):
    raw = {"secret": "s" * 32, "providers": [], "callbacks": callbacks}
    return build_config(raw, lambda name: None)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/", BASE + "/"),
        ("/after?x=1#f", BASE + "/after?x=1#f"),
        ("//evil.example/x", BASE + "//evil.example/x"),  # joined to the origin: still ours
        (BASE, BASE),
        (BASE + "/page", BASE + "/page"),
        ("HTTPS://SITE.EXAMPLE/page", "HTTPS://SITE.EXAMPLE/page"),  # origins ignore case
    ],
)
def test_relative_and_same_origin_urls_are_kept(url, expected):
    assert default_redirect(url=url, base_url=BASE) == expected


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/",
        "http://site.example/",  # another scheme is another origin
        "https://site.example:8443/",  # another port too
        "https://site.example.evil.example/",
        "https://site.example@evil.example/",
        "https://evil.example/https://site.example",
    ],
)
def test_other_origins_go_to_the_site(url):
    assert default_redirect(url=url, base_url=BASE) == BASE


def test_the_site_origin_may_be_written_in_capitals():
    assert default_redirect(url="https://site.example/a", base_url="https://SITE.example") == (
        "https://site.example/a"
    )


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "mailto:a@site.example", "site.example/page", "", "http:///path", "?x"],
)
def test_urls_without_scheme_and_host_are_invalid(url):
    with pytest.raises(InvalidCallbackUrl):
        default_redirect(url=url, base_url=BASE)


def test_without_a_callback_the_default_applies():
    assert run_redirect(config(), url="https://evil.example/", base_url=BASE) == BASE
    assert run_redirect(config(), url="/a", base_url=BASE) == BASE + "/a"


def test_a_configured_callback_decides():
    seen = []

    def redirect(*, url, base_url):
        seen.append((url, base_url))
        return "https://partner.example/"

    assert run_redirect(config(redirect=redirect), url="/a", base_url=BASE) == (
        "https://partner.example/"
    )
    assert seen == [("/a", BASE)]


@pytest.mark.parametrize("returned", [None, 42, b"/a", ["/a"]])
def test_a_callback_that_returns_no_string_is_refused(returned):
    def redirect(*, url, base_url):
        return returned

    with pytest.raises(InvalidCallbackUrl):
        run_redirect(config(redirect=redirect), url="/a", base_url=BASE)
