"""The email provider: sign in with a link, or a one-time code, sent by email.

Example::

    from webauth.providers import Email

    WEBAUTH = {
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "providers": [Email(from_email="Example <no-reply@example.com>", max_age=15 * 60)],
    }

Messages go out through Django's email framework (``EMAIL_BACKEND``: SMTP, the
console, Anymail...), from the templates ``webauth/email/verification_subject.txt``,
``verification_message.txt`` and ``verification_message.html``; a project
overrides them, or replaces delivery with ``send_verification_request``.

One sign-in request makes one *grant*: a link token and a short code, both
stored only as hashes. This module makes and reads them; the flow
(:mod:`webauth.flows.email`) decides who may redeem them.

The secrets, and why they are what they are:

* The **link token** is 32 random bytes as 64 hex characters (256 bits), as
  Auth.js makes it. A guess is hopeless; no attempt counting is needed.
* The **code** is 8 characters, typed by a person. ``"alphanumeric"`` draws them
  from Crockford's base 32 alphabet (digits and capitals without I, L, O, U:
  nothing two characters can be mistaken for), 40 bits; ``"digits"`` draws 8
  digits, 26.6 bits. What makes a code short enough to type safe enough to use:
  it works only for the request that asked for it (the flow stores it bound to
  a random value that only that browser's encrypted cookie, or that app, holds:
  ``webauth.flows.email.grant_hash``), and a grant dies after
  ``code_max_attempts`` (5) wrong codes, counted across resends. An attacker
  who starts a sign-in for someone else's address, and so holds a grant's
  binding, guesses an alphanumeric code with probability 5 / 2**40 (about 1 in
  220 billion) per grant, and the ``email_send`` limit caps the grants.
* Both are stored hashed with the secret (``secret=`` or the site's, a list
  comma-joined), bound as above; Auth.js's plain ``sha256hex(value + secret)``
  for the one-click link of ``confirm_link=False``: a copy of the database
  holds nothing anyone can redeem.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Final
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Info, Warning
from django.template.loader import render_to_string
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import mail
from ..identity import MAX_EMAIL_LENGTH, canonical_email
from ..utils import call, resolve
from .base import Provider

__all__ = [
    "CODE_ALPHABETS",
    "CODE_LENGTH",
    "DEFAULT_MAX_AGE",
    "MAX_EMAIL_LENGTH",
    "Email",
    "hash_secret",
    "normalize_email",
    "send_verification_email",
]

#: Seconds a link and its code stay valid unless ``max_age`` says otherwise:
#: Auth.js's 24 hours (the example project uses 15 minutes; docs/email.md).
DEFAULT_MAX_AGE: Final = 24 * 60 * 60

#: The characters of a code, by the ``code`` option.
CODE_ALPHABETS: Final[Mapping[str, str]] = {
    # Crockford's base 32: no I, L, O or U, which a reader confuses with 1, 1, 0 and V.
    "alphanumeric": "0123456789ABCDEFGHJKMNPQRSTVWXYZ",
    "digits": "0123456789",
}
#: Characters in a code (40 bits alphanumeric, 26.6 bits in digits).
CODE_LENGTH: Final = 8

# What a person may type for a code character that is not in the alphabet:
# Crockford's own reading of the look-alikes.
_LOOKALIKES = str.maketrans({"O": "0", "I": "1", "L": "1"})
# Separators a person (or a mail client's copy) leaves inside a code.
_SEPARATORS = str.maketrans("", "", " -\t\u00a0\u2010\u2011\u2012\u2013\u2014\u2212")

#: An address is refused as this when a custom ``normalize_identifier`` gives nothing.
_INVALID = _("Enter a valid email address.")

#: webauth's canonical form of an address (:func:`webauth.identity.canonical_email`),
#: under the name this module has always exported it by.
normalize_email = canonical_email

#: The default subject's fallback when no template gives one (in English; the
#: sent subject is this text in the active language).
DEFAULT_SUBJECT = "Sign in to {host}"


def hash_secret(secret: str | Sequence[str] | None, site_secret: Sequence[str]) -> str:
    """The secret tokens and codes are hashed with: the provider's, else the site's.

    A list is comma-joined, as Auth.js joins ``AUTH_SECRET``'s list for this hash.
    """
    chosen = secret if secret else site_secret
    return chosen if isinstance(chosen, str) else ",".join(chosen)


def send_verification_email(
    *,
    identifier: str,
    url: str,
    token: str,
    code: str | None,
    expires: datetime,
    provider: Email,
    theme: Any = None,
    request: Any = None,
    **kwargs: object,
) -> None:
    """The default delivery: one email with the link and the code, through Django.

    Subject, text and HTML come from the ``webauth/email/verification_*``
    templates (context: ``url``, ``code`` as shown to the person (``ABCD-EFGH``)
    or ``None``, ``host``,
    ``expires``, ``minutes``, ``identifier``, ``theme``). Sent with
    ``fail_silently=False``: a failure reaches the flow, which tells the user.
    """
    host = urlsplit(url).netloc
    seconds = (expires - datetime.now(UTC)).total_seconds()
    context = {
        "url": url,
        "code": code,
        "host": host,
        "expires": expires,
        "minutes": max(1, math.ceil(seconds / 60)),
        "identifier": identifier,
        "theme": asdict(theme) if is_dataclass(theme) and not isinstance(theme, type) else theme,
        "provider": provider,
    }
    if provider.subject:
        # Not str.format: a brace in a project's subject must not break sign-in.
        subject = provider.subject.replace("{host}", host)
    else:
        subject = render_to_string("webauth/email/verification_subject.txt", context, request)
    # A header holds one line (Django refuses a newline in a subject).
    subject = " ".join(subject.split()) or gettext("Sign in to %(host)s") % {"host": host}
    message = mail.message("verification", context, provider.sender, identifier, request, subject)
    message.send(fail_silently=False)


class Email(Provider):
    """Sign-in by email: a link, and a one-time code, in one message.

    Options (Auth.js's, in snake_case, and webauth's own):

    ``from_email``
        The sender; ``settings.DEFAULT_FROM_EMAIL`` when unset.
    ``max_age``
        Seconds the link and the code stay valid (default 86400, Auth.js's).
    ``send_verification_request``
        ``fn(*, identifier, url, token, code, expires, provider, theme, request)``
        replaces delivery entirely (sync or ``async def``, or a dotted path).
        ``code`` is the code as shown (``ABCD-EFGH``), ``None`` without codes.
    ``generate_verification_token``
        ``fn() -> str``: the link token (default 256 random bits as hex).
        Anything else must be as unguessable: at least 128 random bits.
    ``normalize_identifier``
        ``fn(email) -> str``: the address to mail (default: the address as
        typed); raise ``ValueError`` to refuse it (its message is shown on
        the form). What it returns is stored and compared in webauth's
        canonical form (:func:`webauth.identity.canonical_email`).
    ``secret``
        The secret tokens and codes are hashed with (default: the site's).
    ``confirm_link``
        ``True`` (default): opening the link shows a page with one button, and
        only the browser that asked can sign in with it, so mail scanners that
        open links cannot use or burn them. ``False``: Auth.js's one-click link,
        any browser, at the first GET (a scanner that opens links signs itself
        in and leaves the person a used link).
    ``code``
        ``"alphanumeric"`` (default), ``"digits"`` or ``None`` (links only).
    ``code_max_attempts``
        Wrong codes a grant survives (default 5), across resends.
    ``subject``
        The subject line; ``{host}`` is replaced by the site's host. Default:
        the ``verification_subject.txt`` template ("Sign in to <host>").
    """

    type = "email"
    docs_page = "docs/email.md"
    default_id = "email"
    default_name = "Email"
    #: The sign-in form's field, as a credentials provider declares its fields.
    form_fields: ClassVar[Mapping[str, Mapping[str, object]]] = {
        "email": {
            "label": _("Email"),
            "type": "email",
            "autocomplete": "email",
            "placeholder": "email@example.com",
            "required": True,
        }
    }

    def __init__(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        from_email: str | None = None,
        max_age: int = DEFAULT_MAX_AGE,
        send_verification_request: Callable[..., Any] | str | None = None,
        generate_verification_token: Callable[[], str] | str | None = None,
        normalize_identifier: Callable[[str], str] | str | None = None,
        secret: str | Sequence[str] | None = None,
        confirm_link: bool = True,
        code: str | None = "alphanumeric",
        code_max_attempts: int = 5,
        subject: str | None = None,
        **options: object,
    ) -> None:
        super().__init__(id=id, name=name, **options)
        self.from_email = from_email
        self.max_age = max_age
        self._send = send_verification_request
        self._generate = generate_verification_token
        self._normalize = normalize_identifier
        self.secret = secret
        self.confirm_link = confirm_link
        self.code = code
        self.code_max_attempts = code_max_attempts
        self.subject = subject

    # -- configuration ----------------------------------------------------------
    @property
    def sender(self) -> str:
        """The ``From`` address: ``from_email``, else ``settings.DEFAULT_FROM_EMAIL``."""
        return self.from_email or settings.DEFAULT_FROM_EMAIL

    @property
    def send_function(self) -> Callable[..., Any]:
        """The delivery function: ``send_verification_request``, else Django's email."""
        return resolve(self._send) if self._send is not None else send_verification_email

    def validate(self) -> list[str]:
        problems = super().validate()
        max_age = self.max_age
        if isinstance(max_age, bool) or not isinstance(max_age, int) or max_age <= 0:
            problems.append(
                f"email provider {self.id!r}: max_age must be a positive number of "
                f"seconds, not {max_age!r}"
            )
        if self.code is not None and self.code not in CODE_ALPHABETS:
            problems.append(
                f"email provider {self.id!r}: code must be 'alphanumeric', 'digits' or None, "
                f"not {self.code!r}"
            )
        attempts = self.code_max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            problems.append(
                f"email provider {self.id!r}: code_max_attempts must be a whole number >= 1"
            )
        if not isinstance(self.confirm_link, bool):
            problems.append(f"email provider {self.id!r}: confirm_link must be True or False")
        for option, value in (
            ("send_verification_request", self._send),
            ("generate_verification_token", self._generate),
            ("normalize_identifier", self._normalize),
        ):
            if value is None:
                continue
            try:
                fn = resolve(value)
            except ImportError as exc:
                problems.append(
                    f"email provider {self.id!r}: could not import {option}={value!r} ({exc})"
                )
                continue
            if not callable(fn):
                problems.append(f"email provider {self.id!r}: {option} must be callable")
        return problems

    def system_checks(self) -> list[CheckMessage]:
        """Warnings for a sender or a backend that cannot reach anyone, and the opt-out."""
        messages: list[CheckMessage] = []
        if (
            not self.from_email
            and settings.DEFAULT_FROM_EMAIL == "webmaster@localhost"
            and not settings.DEBUG
        ):
            messages.append(
                Warning(
                    f"The email provider {self.id!r} sends from Django's default "
                    "'webmaster@localhost', which mail servers reject or file as spam.",
                    hint=f"Give {type(self).__name__}(from_email=...) or set DEFAULT_FROM_EMAIL.",
                    id="webauth.W008",
                )
            )
        backend = getattr(settings, "EMAIL_BACKEND", "")
        if self._send is None and not settings.DEBUG and backend in _LOCAL_BACKENDS:
            messages.append(
                Warning(
                    f"The email provider {self.id!r} sends through {backend}, which "
                    "delivers nothing, while DEBUG is off.",
                    hint="Set EMAIL_BACKEND to SMTP or a delivery service (Anymail), or "
                    "pass send_verification_request=...",
                    id="webauth.W009",
                )
            )
        if self.confirm_link is False:
            messages.append(
                Info(
                    f"The email provider {self.id!r} has confirm_link=False: the first "
                    "GET of a link signs in whoever sends it, so a mail scanner that "
                    "opens links uses them up (and gets the session).",
                    hint="Leave confirm_link=True unless your users' mail is never scanned "
                    "(docs/email.md).",
                    id="webauth.I002",
                )
            )
        return messages

    # -- addresses ----------------------------------------------------------------
    def normalize(self, email: Any) -> str:
        """*email* as the grant's identifier; ``ValueError`` with a message for the form.

        Always the canonical form (:func:`webauth.identity.canonical_email`): a
        project's ``normalize_identifier`` may refuse an address or rewrite it
        (drop a ``+tag``, say), and what it returns is brought to that form too,
        so that every lookup compares one spelling of each mailbox.
        """
        if self._normalize is None:
            return canonical_email(email)
        if not isinstance(email, str):
            raise ValueError(_("Enter your email address."))
        result = call(resolve(self._normalize), email)
        if not isinstance(result, str) or not result:
            raise ValueError(_INVALID)
        return canonical_email(result)

    # -- secrets ------------------------------------------------------------------
    def new_token(self) -> str:
        """A link token: ``generate_verification_token()``, else 256 random bits as hex."""
        if self._generate is not None:
            token = call(resolve(self._generate))
            if not isinstance(token, str) or not token:
                raise TypeError("generate_verification_token() must return a non-empty string")
            return token
        return secrets.token_hex(32)

    def new_code(self) -> str | None:
        """A one-time code in its canonical form (no separator), or ``None`` without codes."""
        if self.code is None:
            return None
        alphabet = CODE_ALPHABETS[self.code]
        return "".join(secrets.choice(alphabet) for _ in range(CODE_LENGTH))

    def clean_code(self, typed: Any) -> str | None:
        """What a person typed, as the canonical code; ``None`` if it cannot be one.

        Case does not matter; spaces and hyphens are dropped; in alphanumeric
        codes O reads as 0 and I and L as 1 (Crockford's rule), so a code read
        aloud or retyped from a phone still works.
        """
        if self.code is None or not isinstance(typed, str) or len(typed) > 64:
            return None
        text = unicodedata.normalize("NFKC", typed).upper().translate(_SEPARATORS)
        if self.code == "alphanumeric":
            text = text.translate(_LOOKALIKES)
        alphabet = CODE_ALPHABETS[self.code]
        if len(text) != CODE_LENGTH or any(c not in alphabet for c in text):
            return None
        return text

    @staticmethod
    def display_code(code: str) -> str:
        """A code as a person reads it: ``ABCD-EFGH``."""
        half = len(code) // 2
        return f"{code[:half]}-{code[half:]}"

    def hash_value(self, value: str, site_secret: Sequence[str]) -> str:
        """``sha256hex(value + secret)``: how a token or a code is stored (Auth.js's hash)."""
        secret = hash_secret(self.secret, site_secret)
        return hashlib.sha256((value + secret).encode("utf-8", "surrogatepass")).hexdigest()


#: Backends that deliver to nobody: fine while developing, a silent failure in production.
_LOCAL_BACKENDS = frozenset(
    {
        "django.core.mail.backends.console.EmailBackend",
        "django.core.mail.backends.locmem.EmailBackend",
        "django.core.mail.backends.dummy.EmailBackend",
        "django.core.mail.backends.filebased.EmailBackend",
    }
)
