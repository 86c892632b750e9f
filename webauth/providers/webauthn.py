"""The WebAuthn providers: sign in with a passkey (experimental, as in Auth.js).

Example::

    from webauth.providers import Passkey

    WEBAUTH = {
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "experimental": {"enable_webauthn": True},
        "providers": [Passkey()],
    }

:class:`Passkey` is what most sites want: a discoverable credential (the
browser offers it without a username, and in autofill) that signs in only after
the authenticator verified the person (fingerprint, face, PIN).
:class:`WebAuthn` is the general form it is built on (Auth.js's ``WebAuthn``
provider); its defaults are Auth.js's, except that sign-in requires user
verification there too unless ``require_user_verification=False``.

The relying party (the site the passkeys belong to) is ``relying_party``'s
``id``, ``name`` and ``origins``, each taken from the request when not given:
the host name, the host, and the site's origin (``AUTH_URL``'s when set). A
passkey works on every origin whose host is the RP id or a subdomain of it, so
a site on several subdomains sets ``id`` to the shared parent domain and lists
the origins (docs/passkeys.md). A system check (``webauth.E012``) refuses an id
that is not a registrable suffix of each origin's host. An Android app's
origin (``android:apk-key-hash:<hash>``, what Credential Manager puts in a
native app's client data) may be listed beside the web origins; it has no host
to check.

This module holds configuration and small pure hooks; the ceremonies live in
:mod:`webauth.flows.webauthn`, which uses py_webauthn for every options
generation and verification.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, ClassVar, Final
from urllib.parse import urlsplit

from django.core.checks import CheckMessage, Error, Warning
from django.utils import formats, timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ..utils import call, did_you_mean, resolve
from ._aaguids import AAGUID_NAMES
from .base import Provider

__all__ = [
    "REQUIREMENTS",
    "Passkey",
    "RelyingParty",
    "WebAuthn",
    "device_name",
    "distinct_name",
    "is_android_origin",
    "is_registrable_suffix",
]

#: Values of ``user_verification`` and ``resident_key`` (WebAuthn's enumerations).
REQUIREMENTS: Final = frozenset({"required", "preferred", "discouraged"})

#: Seconds a ceremony may take (Auth.js: 300 000 ms for both kinds of options).
DEFAULT_TIMEOUT: Final = 300
_MAX_TIMEOUT = 60 * 60

_RP_KEYS = frozenset({"id", "name", "origin", "origins"})

#: A native Android app's origin: the SHA-256 of its signing certificate,
#: base64url without padding (Android's Credential Manager).
ANDROID_ORIGIN: Final = re.compile(r"android:apk-key-hash:[A-Za-z0-9_-]{43}")


def is_android_origin(origin: str) -> bool:
    """Whether *origin* is a native Android app's (``android:apk-key-hash:...``)."""
    return ANDROID_ORIGIN.fullmatch(origin) is not None


@dataclass(frozen=True, slots=True)
class RelyingParty:
    """The site as WebAuthn knows it: the RP id (a domain), its name, and the origins allowed."""

    id: str
    name: str
    origins: tuple[str, ...]

    @property
    def expected(self) -> dict[str, Any]:
        """py_webauthn's ``expected_rp_id`` and ``expected_origin`` for this relying party."""
        return {"expected_rp_id": self.id, "expected_origin": list(self.origins)}


def _origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL without path, query or credentials."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def is_registrable_suffix(rp_id: str, host: str) -> bool:
    """Whether a browser on *host* accepts *rp_id* as the relying party's id.

    The rule browsers apply (WebAuthn's "registrable domain suffix"), simplified
    without the public suffix list: *rp_id* is *host* itself, or *host* ends
    with ``"." + rp_id`` and *rp_id* has at least one dot (so ``com`` never
    passes, ``example.com`` does for ``app.example.com``). ``localhost`` is its
    own. An IP address is only ever its own id (browsers refuse them anyway).
    """
    rp_id, host = rp_id.lower().rstrip("."), host.lower().rstrip(".")
    if not rp_id or not host:
        return False
    if rp_id == host:
        return True
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    else:
        return False
    return "." in rp_id and host.endswith("." + rp_id)


# (substring of the User-Agent, name), the first match wins: Edge, Opera and
# Samsung Internet also say "Chrome", Chrome also says "Safari".
_BROWSERS: tuple[tuple[str, str], ...] = (
    ("Edg/", "Edge"),
    ("EdgiOS/", "Edge"),
    ("EdgA/", "Edge"),
    ("OPR/", "Opera"),
    ("SamsungBrowser/", "Samsung Internet"),
    ("Firefox/", "Firefox"),
    ("FxiOS/", "Firefox"),
    ("CriOS/", "Chrome"),
    ("Chromium/", "Chromium"),
    ("Chrome/", "Chrome"),
    ("Safari/", "Safari"),
)
_SYSTEMS: tuple[tuple[str, str], ...] = (
    ("iPhone", "iPhone"),
    ("iPad", "iPad"),
    ("Android", "Android"),
    ("CrOS", "ChromeOS"),
    ("Windows", "Windows"),
    ("Macintosh", "macOS"),
    ("Mac OS X", "macOS"),
    ("Linux", "Linux"),
)


def device_name(user_agent: str | None) -> str:
    """A short name for the browser of *user_agent*: ``"Chrome on Linux"``; ``""`` if unknown."""
    if not user_agent:
        return ""
    ua = user_agent[:512]
    browser = next((name for mark, name in _BROWSERS if mark in ua), "")
    system = next((name for mark, name in _SYSTEMS if mark in ua), "")
    if browser and system:
        # Stored as the passkey's name, in the language of the person who made it.
        return gettext("%(browser)s on %(system)s") % {"browser": browser, "system": system}
    return browser or system


#: The longest name a passkey or a security key keeps (their columns' length).
MAX_NAME_LENGTH: Final = 100


def _same(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def distinct_name(name: str, taken: Iterable[str | None], added: date | None = None) -> str:
    """*name* (a default name: ``"Chrome on Linux"``), told apart from the names in *taken*.

    The names a user already has, compared without regard to case or spacing:
    a name that none of them has is kept; otherwise the date it is added goes
    after it, in the active language's short format (``"Chrome on Linux
    (12/01/2026)"``), and, if that is taken too, a number (``"Chrome on Linux
    (12/01/2026, 2)"``). *added* is today by default. At most 100 characters:
    the name is cut, never the date or the number. Shared by passkeys
    (``WebAuthn.passkey_name``, at registration) and security keys
    (``webauth.mfa.keys``); a name the person typed is theirs, and kept as it is.
    """
    seen = {_same(t) for t in taken if t}
    if _same(name) not in seen:
        return name[:MAX_NAME_LENGTH]
    day = formats.date_format(added or timezone.localdate(), "SHORT_DATE_FORMAT")
    number = 1
    while True:  # ends: each number is new, and only so many names are taken
        room = MAX_NAME_LENGTH - len(_dated("", day, number))
        candidate = _dated(name[:room].rstrip(), day, number)
        if _same(candidate) not in seen:
            return candidate
        number += 1


def _dated(name: str, day: str, number: int) -> str:
    if number == 1:
        # Translators: a default name told apart by the day it was added:
        # "Chrome on Linux (12/01/2026)".
        return gettext("%(name)s (%(date)s)") % {"name": name, "date": day}
    return gettext("%(name)s (%(date)s, %(number)s)") % {
        "name": name,
        "date": day,
        "number": number,
    }


class WebAuthn(Provider):
    """Sign-in with WebAuthn credentials (Auth.js's ``WebAuthn`` provider).

    Options:

    ``relying_party``
        ``{"id": ..., "name": ..., "origins": [...]}`` (Auth.js's
        ``relayingParty``; ``origin`` may be given instead of ``origins``). Each
        is taken from the request when absent: the host name, the host, the
        site's origin. ``origins`` may also list Android apps
        (``"android:apk-key-hash:<hash>"``) beside at least one web origin.
    ``timeout``
        Seconds the browser gives the person, and the challenge lives (default 300).
    ``user_verification``
        What the browser asks the authenticator for: ``"required"``,
        ``"preferred"`` (default) or ``"discouraged"``.
    ``resident_key``
        Whether registration asks for a discoverable credential (a passkey the
        browser can offer without a username): ``"required"``, ``"preferred"``
        (default) or ``"discouraged"``.
    ``require_user_verification``
        Whether the server refuses a response whose authenticator did not
        verify the person (default ``True``, as py_webauthn's and Auth.js's
        verification default). Passwordless sign-in needs it.
    ``enable_conditional_ui``
        Whether the sign-in page offers this provider's passkeys in the
        username field's autofill (default ``True``; one provider at most).
    ``form_fields``
        The sign-in form's fields (default: ``email``, with
        ``autocomplete="username webauthn"``).
    ``passkey_name``
        ``fn(aaguid, user_agent) -> str``: the name a new passkey gets (default:
        the provider's name for a well-known AAGUID, else the browser's,
        "Chrome on Linux").
    """

    type = "webauthn"
    docs_page = "docs/passkeys.md"
    default_id = "webauthn"
    default_name = "WebAuthn"
    #: Auth.js's default field: the address, in autofill's ``webauthn`` slot.
    default_form_fields: ClassVar[Mapping[str, Mapping[str, object]]] = {
        "email": {
            "label": _("Email"),
            "type": "email",
            "required": True,
            "autocomplete": "username webauthn",
        }
    }
    default_user_verification: ClassVar[str] = "preferred"
    default_resident_key: ClassVar[str] = "preferred"

    def __init__(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        relying_party: Mapping[str, Any] | None = None,
        timeout: int = DEFAULT_TIMEOUT,
        user_verification: str | None = None,
        resident_key: str | None = None,
        require_user_verification: bool = True,
        enable_conditional_ui: bool = True,
        form_fields: Mapping[str, Mapping[str, object]] | None = None,
        passkey_name: Callable[[str, str], str] | str | None = None,
        **options: object,
    ) -> None:
        super().__init__(id=id, name=name, **options)
        self.relying_party: Mapping[str, Any] = dict(relying_party or {})
        self.timeout = timeout
        self.user_verification = user_verification or self.default_user_verification
        self.resident_key = resident_key or self.default_resident_key
        self.require_user_verification = require_user_verification
        self.enable_conditional_ui = enable_conditional_ui
        self.form_fields: Mapping[str, Mapping[str, object]] = (
            form_fields if form_fields is not None else self.default_form_fields
        )
        self._passkey_name = passkey_name

    # -- configuration ------------------------------------------------------------------
    def _configured_origins(self) -> tuple[str, ...]:
        rp = self.relying_party
        value = rp.get("origins", rp.get("origin"))
        if value is None:
            return ()
        values = [value] if isinstance(value, str) else list(value)
        return tuple(_origin_of(v) or v for v in values)

    def relying_party_for(self, origin: str) -> RelyingParty:
        """The relying party for a request whose site origin is *origin*.

        Configured values win; the rest comes from *origin* (Auth.js: id = the
        request's host name, name = its host, origin = its origin).
        """
        parts = urlsplit(origin)
        rp = self.relying_party
        rp_id = rp.get("id") or (parts.hostname or "")
        name = rp.get("name") or parts.netloc or rp_id
        origins = self._configured_origins() or (origin,)
        return RelyingParty(id=str(rp_id).lower(), name=str(name), origins=origins)

    @property
    def timeout_ms(self) -> int:
        """``timeout`` in milliseconds, as the browser's options carry it."""
        return int(self.timeout) * 1000

    @property
    def conditional_ui_field(self) -> str | None:
        """The form field whose ``autocomplete`` has the ``webauthn`` token, if any."""
        for field, attrs in self.form_fields.items():
            tokens = str(attrs.get("autocomplete", "")).split()
            if "webauthn" in tokens:
                return field
        return None

    def passkey_name(
        self, aaguid: str | None, user_agent: str | None, taken: Iterable[str | None] = ()
    ) -> str:
        """The name a new passkey gets: the ``passkey_name`` hook, else AAGUID or browser,
        told apart from the names of the user's passkeys in *taken* (:func:`distinct_name`;
        a passkey without a name shows as "Passkey")."""
        shown = [t or str(_("Passkey")) for t in taken]
        if self._passkey_name is not None:
            named = call(resolve(self._passkey_name), aaguid or "", user_agent or "")
            if isinstance(named, str) and named.strip():
                return distinct_name(named.strip()[:MAX_NAME_LENGTH], shown)
        known = AAGUID_NAMES.get((aaguid or "").lower())
        return distinct_name(known or device_name(user_agent) or str(_("Passkey")), shown)

    def validate(self) -> list[str]:
        problems = super().validate()
        label = f"webauthn provider {self.id!r}"
        for option in ("user_verification", "resident_key"):
            value = getattr(self, option)
            if value not in REQUIREMENTS:
                problems.append(
                    f"{label}: {option} must be 'required', 'preferred' or 'discouraged', "
                    f"not {value!r}"
                )
        timeout = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int) or not timeout > 0:
            problems.append(f"{label}: timeout must be a positive number of seconds")
        elif timeout > _MAX_TIMEOUT:
            problems.append(f"{label}: timeout must be at most {_MAX_TIMEOUT} seconds")
        for option in ("require_user_verification", "enable_conditional_ui"):
            if not isinstance(getattr(self, option), bool):
                problems.append(f"{label}: {option} must be True or False")
        if not isinstance(self.relying_party, Mapping):
            problems.append(f"{label}: relying_party must be a dict")
            return problems
        unknown = sorted(set(self.relying_party) - _RP_KEYS, key=str)
        if unknown:
            guesses = [
                f"did you mean {guess!r} for {key!r}?"
                for key in unknown
                if isinstance(key, str) and (guess := did_you_mean(key, _RP_KEYS)) is not None
            ]
            problems.append(
                f"{label}: relying_party has unknown keys {unknown} (use id, name, origins"
                + ("; " + " ".join(guesses) if guesses else "")
                + ")"
            )
        rp_id = self.relying_party.get("id")
        if rp_id is not None and (not isinstance(rp_id, str) or not rp_id or "/" in rp_id):
            problems.append(f"{label}: relying_party id must be a domain such as 'example.com'")
        value = self.relying_party.get("origins", self.relying_party.get("origin"))
        if value is not None:
            values = [value] if isinstance(value, str) else value
            if not isinstance(values, list | tuple) or not values:
                problems.append(f"{label}: relying_party origins must be a list of origins")
            else:
                web = bad = 0
                for item in values:
                    if isinstance(item, str) and _origin_of(item) is not None:
                        web += 1
                    elif not isinstance(item, str) or not is_android_origin(item):
                        bad += 1
                        problems.append(
                            f"{label}: relying_party origin {item!r} is not an origin "
                            "such as 'https://example.com' or an Android app's "
                            "'android:apk-key-hash:<43 characters of base64url>'"
                        )
                if web == 0 and bad == 0:
                    # The built-in pages and every browser sign in from a web origin.
                    problems.append(
                        f"{label}: relying_party origins list only Android apps; add the "
                        "site's own origin (e.g. 'https://example.com') too"
                    )
        if self._passkey_name is not None:
            try:
                fn = resolve(self._passkey_name)
            except ImportError as exc:
                problems.append(f"{label}: could not import passkey_name ({exc})")
            else:
                if not callable(fn):
                    problems.append(f"{label}: passkey_name must be callable")
        return problems

    def system_checks(self) -> list[CheckMessage]:
        """The RP id against each configured origin (E012), and insecure origins (W010)."""
        messages: list[CheckMessage] = []
        rp_id = self.relying_party.get("id")
        origins = self._configured_origins()
        for origin in origins:
            if is_android_origin(origin):
                continue  # an app: no host; Digital Asset Links ties it to the RP id
            host = urlsplit(origin).hostname or ""
            if isinstance(rp_id, str) and rp_id and not is_registrable_suffix(rp_id, host):
                messages.append(
                    Error(
                        f"The webauthn provider {self.id!r} has the relying party id "
                        f"{rp_id!r}, which browsers refuse on {origin}: it must be the "
                        "origin's host or a parent domain of it (not a public suffix).",
                        hint="Set relying_party['id'] to the host, or to the domain that "
                        "all the origins share (e.g. 'example.com' for "
                        "'https://app.example.com').",
                        id="webauth.E012",
                    )
                )
            if (
                origin.startswith("http://")
                and host != "localhost"
                and not host.endswith(".localhost")
            ):
                messages.append(
                    Warning(
                        f"The webauthn provider {self.id!r} allows the origin {origin}: "
                        "browsers offer WebAuthn only on https:// (and http://localhost).",
                        hint="Serve the site over HTTPS and list its https:// origin.",
                        id="webauth.W010",
                    )
                )
        return messages


class Passkey(WebAuthn):
    """Passwordless sign-in with passkeys: WebAuthn with a discoverable credential and UV.

    Auth.js's ``Passkey`` provider: ``user_verification="required"`` and
    ``resident_key="required"``; every other option is :class:`WebAuthn`'s.
    """

    default_id = "passkey"
    default_name = "Passkey"
    default_user_verification = "required"
    default_resident_key = "required"
