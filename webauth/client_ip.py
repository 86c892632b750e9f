"""The client's address, as far as it can be trusted, and the bucket a rate limit counts it in.

``REMOTE_ADDR`` is the peer that opened the connection. Behind a reverse proxy
that is the proxy, and the client's address is in ``X-Forwarded-For``, a header
that anyone can also write. Whether the header is believed is the project's
decision, made once in ``WEBAUTH["trusted_proxies"]`` (:class:`TrustedProxies`):

* nothing (the default): the header is ignored, the client is ``REMOTE_ADDR``;
* a hop count ``n``: exactly ``n`` proxies of yours stand in front of Django,
  each appending the address it received the request from; the client is the
  ``n``-th entry from the right. Entries to its left were written by the client
  and are never read;
* networks (CIDRs): the header is believed only when ``REMOTE_ADDR`` is in one
  of them; the client is then the rightmost entry that is not in them (each of
  your proxies appended the peer it saw, so walking right to left through your
  own proxies ends at the first address you do not own);
* both: the networks decide whether the header is believed, the count which
  entry is the client.

A header that cannot be right (too few entries, an entry that is not an IP
address) is ignored in favour of ``REMOTE_ADDR``: a misconfiguration then puts
clients in one bucket, which is noticed, rather than letting them choose one.

IPv6 clients are bucketed by their /64: one subscriber usually holds a whole
/64 and could otherwise rotate through 2**64 addresses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .logger import get_logger

__all__ = [
    "IPV6_PREFIX",
    "TrustedProxies",
    "client_bucket",
    "client_bucket_of",
    "client_ip",
    "networks_from",
    "parse_ip",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: IPv6 clients share a bucket per this prefix length.
IPV6_PREFIX = 64


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    """``WEBAUTH["trusted_proxies"]``: which ``X-Forwarded-For`` entries are believed."""

    networks: tuple[IPNetwork, ...] = ()
    count: int = 0

    @property
    def enabled(self) -> bool:
        """Whether ``X-Forwarded-For`` is ever read."""
        return bool(self.networks) or self.count > 0

    def trusts(self, address: IPAddress) -> bool:
        """Whether *address* is one of the configured proxy networks."""
        return any(address in network for network in self.networks)


def parse_ip(value: str) -> IPAddress | None:
    """An address from ``REMOTE_ADDR`` or one ``X-Forwarded-For`` entry; ``None`` if it is not one.

    Accepts the forms proxies write: ``1.2.3.4``, ``1.2.3.4:5678``, ``::1``,
    ``[::1]`` and ``[::1]:443``; an IPv4-mapped IPv6 address is its IPv4 address.
    """
    text = value.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # IPv4 with a port (an IPv6 address has at least two colons)
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _forwarded_entries(meta: Mapping[str, Any]) -> list[str]:
    # Several X-Forwarded-For headers arrive joined by commas, in order.
    header = meta.get("HTTP_X_FORWARDED_FOR") or ""
    return [entry.strip() for entry in str(header).split(",") if entry.strip()]


def client_ip(meta: Mapping[str, Any], proxies: TrustedProxies) -> IPAddress | None:
    """The client's address for a request's ``META``; ``None`` if ``REMOTE_ADDR`` is unusable."""
    peer = parse_ip(str(meta.get("REMOTE_ADDR") or ""))
    if not proxies.enabled:
        return peer
    if proxies.networks and (peer is None or not proxies.trusts(peer)):
        return peer  # a header from a peer that is not our proxy: written by anyone
    entries = _forwarded_entries(meta)
    if proxies.count:
        if len(entries) < proxies.count:
            return peer
        chosen = parse_ip(entries[-proxies.count])
        return chosen if chosen is not None else peer
    for entry in reversed(entries):
        address = parse_ip(entry)
        if address is None:
            return peer  # garbage where one of our proxies should have written an address
        if not proxies.trusts(address):
            return address
    # Every hop is ours: the leftmost is the closest we know to the client.
    return parse_ip(entries[0]) if entries else peer


def client_bucket(address: IPAddress | None) -> str:
    """The string a per-IP rate limit counts *address* under (IPv6 by its /64)."""
    if address is None:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        network = ipaddress.IPv6Network((address, IPV6_PREFIX), strict=False)
        return str(network)
    return str(address)


def client_bucket_of(meta: Mapping[str, Any], proxies: TrustedProxies) -> str:
    """The bucket of the client of a request with *meta*: :func:`client_ip`, then
    :func:`client_bucket`.

    A peer on a private network that forwards for others while
    ``trusted_proxies`` is unset is pointed out, once per process: the mistake
    that makes per-address limits one site-wide bucket.
    """
    address = client_ip(meta, proxies)
    if (
        not _warned_about_proxy
        and "HTTP_X_FORWARDED_FOR" in meta
        and not proxies.enabled
        and address is not None
        and (address.is_private or address.is_loopback)
    ):
        _warn_about_proxy(str(address))
    return client_bucket(address)


_warned_about_proxy = False
# The rate limits' logger: the warning is about them.
_log = get_logger("ratelimit")


def _warn_about_proxy(peer: str) -> None:
    # The header is never believed without the setting; this only says so.
    global _warned_about_proxy
    _warned_about_proxy = True
    _log.warning(
        "webauth: requests from %s carry X-Forwarded-For but WEBAUTH['trusted_proxies'] "
        "is not set, so rate limits count every client behind that proxy as one "
        "(docs/rate-limits.md#the-clients-address)",
        peer,
    )


def networks_from(values: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDR strings (or single addresses) as networks; raises ``ValueError`` on a bad one."""
    return tuple(ipaddress.ip_network(str(v).strip(), strict=False) for v in values)
