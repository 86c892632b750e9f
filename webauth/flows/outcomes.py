"""What a sign-in comes to: the outcomes a flow's sign-in returns, and the steps between.

A flow's first half proves who this is and describes it as an :class:`Attempt`.
:func:`webauth.flows.signin.complete` then returns one of three outcomes, and
one renderer per kind of client (:mod:`webauth.flows.render`: a browser, an
app) turns it into its answer:

- :class:`Completed`: signed in as :attr:`Completed.signed_in`, with a new
  session;
- :class:`Elsewhere`: the ``sign_in`` callback sent the sign-in to a URL
  instead;
- :class:`NeedsStep`: the person is known, but another :class:`Step` must be
  passed before a session is made (a second factor, new terms to accept...).
  The step answers the client itself and, once passed, finishes the sign-in
  with :func:`webauth.flows.signin.conclude`.

A refused sign-in is an :class:`~webauth.errors.AuthError` raised, which each
client's error renderer answers (the Auth.js routes' error redirects, an app's
``{"error": ...}``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..sessions import SessionResult
    from ..state import AuthState

__all__ = ["Attempt", "Completed", "Elsewhere", "NeedsStep", "Outcome", "SignedIn", "Step"]


@dataclass(slots=True)
class SignedIn:
    """Who signed in, as :meth:`Attempt.store` recorded it.

    ``user`` is what callbacks and events receive (an ``AdapterUser``, or the
    object ``authorize`` returned); ``user_dict`` its ``id``, ``name``, ``email``
    and ``image`` (the session token's defaults); ``account`` the account in
    Auth.js's field names.
    """

    user: object
    user_dict: Mapping[str, object]
    account: Mapping[str, object] | None
    profile: object = None
    is_new_user: bool = False
    #: Whether the sign-in only linked a new way in to the user the request was
    #: signed in as (the new session keeps that session's sign-in time).
    linked_to_session: bool = False
    #: How the person proved who they are (the attempt's ``amr``), for the steps.
    amr: tuple[str, ...] = ()


class Attempt(ABC):
    """A sign-in whose first half has succeeded: the provider proved who this is."""

    #: The provider's id (the ``sender`` of the signals).
    provider_id: str
    #: Where the user goes once signed in.
    callback_url: str
    #: How the person proved who they are, as the session's ``amr`` names it
    #: (docs/mfa.md): ``pwd``, ``email``, ``fed``, ``passkey`` (with ``mfa``:
    #: a passkey is two factors), and after a second factor ``otp`` or
    #: ``recovery_code`` with ``mfa``.
    amr: tuple[str, ...] = ()

    @abstractmethod
    def sign_in_params(self) -> dict[str, object]:
        """The ``sign_in`` callback's arguments: ``user``, ``account``, and ``profile``,
        ``credentials`` or ``email`` as the provider has them."""

    @abstractmethod
    def store(self, state: AuthState) -> SignedIn:
        """Record the sign-in (find or create the user, link the account)."""


@dataclass(frozen=True, slots=True)
class Completed:
    """Signed in: who (as :meth:`Attempt.store` recorded it), and the new session."""

    signed_in: SignedIn
    session: SessionResult


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """The ``sign_in`` callback answered a URL: a browser goes there; no session is made."""

    url: str


@dataclass(frozen=True, slots=True)
class NeedsStep:
    """The person is known, but *step* must be passed before a session is made.

    ``signed_in`` is who signed in and ``attempt`` how; nothing of the session
    exists yet (no cookie, no ``sign_in`` event).
    """

    step: Step
    signed_in: SignedIn
    attempt: Attempt


#: What :func:`webauth.flows.signin.complete` returns.
Outcome = Completed | Elsewhere | NeedsStep


class Step(Protocol):
    """A step a sign-in may have to pass between proving who this is and its session.

    Registered in :data:`webauth.flows.steps.STEPS`; asked in order after every
    sign-in's :meth:`Attempt.store`, whatever the flow. A step answers the
    client itself (its page, or what an app must send next), keeps what it
    needs to finish later, and once passed calls
    :func:`webauth.flows.signin.conclude` with the ``signed_in`` and the
    ``attempt`` it was given.
    """

    #: Its name (what an app's answer calls it).
    name: str

    def needed(self, state: AuthState, signed_in: SignedIn) -> bool:
        """Whether *signed_in* must pass this step now."""
        ...

    def browser_answer(self, state: AuthState, pending: NeedsStep) -> HttpResponse:
        """A browser's answer: usually a redirect to the step's page."""
        ...

    def app_answer(self, state: AuthState, pending: NeedsStep) -> dict[str, object]:
        """An app's JSON answer (``POST /auth/app/...``): what it must do next."""
        ...
