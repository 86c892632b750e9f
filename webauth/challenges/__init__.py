"""A bot challenge (Cloudflare Turnstile, hCaptcha, reCAPTCHA) before sign-ins and emails.

Off unless ``WEBAUTH["challenge"]`` names a service (docs/configuration.md#challenge)::

    WEBAUTH = {
        "challenge": {
            "service": "turnstile",  # or "hcaptcha", "recaptcha", a Challenge subclass's path
            "site_key": "...",
            "secret_key": "...",
            "on": ["signin", "signup", "reset", "email"],  # the default: all four
            "when": "abuse",  # or "always" (the default)
        },
    }

The pieces:

- :class:`Challenge` (:mod:`.base`): a service's verify request, form field and
  widget; :class:`Turnstile`, :class:`HCaptcha` and :class:`ReCaptcha`
  (:mod:`.services`) are the built-in ones.
- :func:`require` (:mod:`.gate`): the check a flow makes first, raising
  :class:`~webauth.errors.ChallengeFailed`; :func:`is_required` and
  :func:`page_context` tell a page whether to show the widget.

Password sign-in (``POST /auth/callback/<credentials id>``, ``webauth.sign_in``
and ``POST /auth/app/signin/<credentials id>``) and email sign-in
(``POST /auth/signin/<email id>`` and its app route) call :func:`require`;
sign-up and password reset do too.
"""

from .base import Challenge, token_problem
from .gate import describe, is_required, page_context, require
from .services import HCaptcha, ReCaptcha, Turnstile

__all__ = [
    "Challenge",
    "HCaptcha",
    "ReCaptcha",
    "Turnstile",
    "describe",
    "is_required",
    "page_context",
    "require",
    "token_problem",
]
