"""The client's address: REMOTE_ADDR unless trusted_proxies says X-Forwarded-For is ours."""

import ipaddress

import pytest
from django.core.exceptions import ImproperlyConfigured

from webauth.client_ip import TrustedProxies, client_bucket, client_ip, parse_ip
from webauth.conf import build_config

SECRET = "test-secret-0123456789abcdef0123456789abcdef"


def proxies(value):
    return build_config(
        {"secret": SECRET, "trusted_proxies": value}, lambda _: None
    ).trusted_proxies


def ip(meta, value=None):
    found = client_ip(meta, proxies(value))
    return str(found) if found is not None else None


# -- no proxy: the header is anybody's ---------------------------------------------------


def test_remote_addr_by_default():
    assert ip({"REMOTE_ADDR": "203.0.113.7"}) == "203.0.113.7"


def test_a_spoofed_header_is_ignored_without_trusted_proxies():
    meta = {"REMOTE_ADDR": "203.0.113.7", "HTTP_X_FORWARDED_FOR": "198.51.100.1"}
    assert ip(meta) == "203.0.113.7"


def test_a_spoofed_header_from_a_peer_outside_the_trusted_networks_is_ignored():
    meta = {"REMOTE_ADDR": "203.0.113.7", "HTTP_X_FORWARDED_FOR": "198.51.100.1"}
    assert ip(meta, ["10.0.0.0/8"]) == "203.0.113.7"


def test_no_usable_remote_addr():
    assert ip({}) is None
    assert ip({"REMOTE_ADDR": "not-an-address"}) is None
    assert client_bucket(None) == "unknown"


def test_trusted_networks_and_no_usable_peer_read_no_header():
    # Without a peer address nobody can say the header came from our proxy.
    meta = {"HTTP_X_FORWARDED_FOR": "198.51.100.1"}
    assert ip(meta, ["10.0.0.0/8"]) is None
    assert ip({**meta, "REMOTE_ADDR": "junk"}, ["10.0.0.0/8"]) is None
    assert ip({**meta, "REMOTE_ADDR": "10.1.2.3"}, ["10.0.0.0/8"]) == "198.51.100.1"


# -- a hop count ---------------------------------------------------------------------------


def test_one_proxy_the_client_is_the_last_entry_and_what_it_wrote_is_not_read():
    # The client sent "X-Forwarded-For: 1.1.1.1"; nginx appended the address it saw.
    meta = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "1.1.1.1, 198.51.100.9"}
    assert ip(meta, 1) == "198.51.100.9"


def test_two_proxies():
    meta = {
        "REMOTE_ADDR": "10.0.0.2",
        "HTTP_X_FORWARDED_FOR": "1.1.1.1, 198.51.100.9, 10.0.0.1",
    }
    assert ip(meta, 2) == "198.51.100.9"


def test_as_many_entries_as_proxies_the_first_is_the_client():
    # The client wrote nothing: the first proxy's entry is the client's address.
    meta = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "198.51.100.9, 10.0.0.1"}
    assert ip(meta, 2) == "198.51.100.9"


def test_fewer_entries_than_proxies_falls_back_to_remote_addr():
    meta = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "198.51.100.9"}
    assert ip(meta, 2) == "10.0.0.2"
    assert ip({"REMOTE_ADDR": "10.0.0.2"}, 1) == "10.0.0.2"


def test_garbage_where_the_proxy_wrote_falls_back_to_remote_addr():
    meta = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "1.1.1.1, <script>"}
    assert ip(meta, 1) == "10.0.0.2"


# -- trusted networks ------------------------------------------------------------------------


def test_networks_walk_right_to_left_past_our_own_proxies():
    meta = {
        "REMOTE_ADDR": "10.0.0.2",
        "HTTP_X_FORWARDED_FOR": "1.1.1.1, 198.51.100.9, 10.0.0.1",
    }
    assert ip(meta, ["10.0.0.0/8"]) == "198.51.100.9"


def test_networks_every_hop_ours_gives_the_leftmost():
    meta = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "10.0.0.5, 10.0.0.1"}
    assert ip(meta, ["10.0.0.0/8"]) == "10.0.0.5"


def test_networks_garbage_before_an_untrusted_entry_falls_back():
    meta = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "1.1.1.1, nonsense"}
    assert ip(meta, ["10.0.0.0/8"]) == "10.0.0.2"


def test_networks_without_a_header():
    assert ip({"REMOTE_ADDR": "10.0.0.2"}, ["10.0.0.0/8"]) == "10.0.0.2"


def test_networks_and_count_together():
    meta = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "1.1.1.1, 198.51.100.9"}
    both = {"networks": ["10.0.0.0/8"], "count": 1}
    assert ip(meta, both) == "198.51.100.9"
    outside = {**meta, "REMOTE_ADDR": "203.0.113.7"}
    assert ip(outside, both) == "203.0.113.7"


def test_several_headers_joined_by_django():
    meta = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "1.1.1.1,198.51.100.9"}
    assert ip(meta, 1) == "198.51.100.9"


# -- address forms and buckets ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("198.51.100.9", "198.51.100.9"),
        (" 198.51.100.9 ", "198.51.100.9"),
        ("198.51.100.9:5678", "198.51.100.9"),
        ("2001:db8::1", "2001:db8::1"),
        ("[2001:db8::1]", "2001:db8::1"),
        ("[2001:db8::1]:443", "2001:db8::1"),
        ("::ffff:198.51.100.9", "198.51.100.9"),
        ("unknown", None),
        ("", None),
        ("1.2.3.4.5", None),
    ],
)
def test_parse_ip(text, expected):
    found = parse_ip(text)
    assert (str(found) if found is not None else None) == expected


def test_ipv6_clients_share_a_bucket_per_64():
    a = client_bucket(parse_ip("2001:db8:1:2:aaaa::1"))
    b = client_bucket(parse_ip("2001:db8:1:2:ffff:ffff:ffff:ffff"))
    c = client_bucket(parse_ip("2001:db8:1:3::1"))
    assert a == b == "2001:db8:1:2::/64"
    assert c != a


def test_ipv4_clients_are_bucketed_by_address():
    assert client_bucket(parse_ip("198.51.100.9")) == "198.51.100.9"
    assert client_bucket(parse_ip("198.51.100.10")) == "198.51.100.10"


# -- the setting -----------------------------------------------------------------------------


def test_setting_forms():
    assert proxies(None) == TrustedProxies()
    assert proxies(0) == TrustedProxies()
    assert proxies([]) == TrustedProxies()
    assert proxies(2) == TrustedProxies(count=2)
    assert proxies(["10.0.0.0/8", "2001:db8::/32", "192.0.2.1"]) == TrustedProxies(
        networks=(
            ipaddress.ip_network("10.0.0.0/8"),
            ipaddress.ip_network("2001:db8::/32"),
            ipaddress.ip_network("192.0.2.1/32"),
        )
    )
    assert proxies({"networks": ["10.0.0.0/8"], "count": 1}).count == 1
    # A network written with its host bits set (an address of it) is that network.
    assert proxies(["10.1.2.3/8"]).networks == (ipaddress.ip_network("10.0.0.0/8"),)


@pytest.mark.parametrize(
    "value, message",
    [
        (True, "must not be True"),
        (-1, "count must be a whole number"),
        ("10.0.0.0/8", "must be a list, not a string"),
        (["10.0.0.0/33"], "not a CIDR"),
        (["nonsense"], "not a CIDR"),
        ([10], "networks must be strings"),
        ({"networks": "10.0.0.0/8"}, "must be a list of CIDRs"),
        ({"hops": 1}, "unknown key"),
        ({"count": "1"}, "count must be a whole number"),
    ],
)
def test_setting_errors(value, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        proxies(value)
