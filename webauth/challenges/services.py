"""The built-in challenge services: Cloudflare Turnstile, hCaptcha, reCAPTCHA v2.

Each is :class:`~webauth.challenges.base.Challenge` with its service's endpoint,
field and widget, as each documents them:

=============  ============================  ===============================================
service        field                         verify endpoint
=============  ============================  ===============================================
Turnstile      ``cf-turnstile-response``     ``https://challenges.cloudflare.com/turnstile/v0/siteverify``
hCaptcha       ``h-captcha-response``        ``https://api.hcaptcha.com/siteverify``
reCAPTCHA v2   ``g-recaptcha-response``      ``https://www.google.com/recaptcha/api/siteverify``
=============  ============================  ===============================================

All three take ``secret``, ``response`` and ``remoteip`` form-encoded and answer
``{"success": bool, "hostname": str, "error-codes": [...], ...}``; a token is
single-use (``timeout-or-duplicate``, hCaptcha's ``already-seen-response``) and
short-lived (Turnstile 5 minutes, reCAPTCHA 2).
"""

from __future__ import annotations

from typing import ClassVar

from .base import Challenge

__all__ = ["HCaptcha", "ReCaptcha", "Turnstile"]


class Turnstile(Challenge):
    """Cloudflare Turnstile (a managed, non-interactive or invisible widget).

    Cloudflare's test keys: site key ``1x00000000000000000000AA`` with secret
    ``1x0000000000000000000000000000000AA`` (always passes) or
    ``2x0000000000000000000000000000000AA`` (always fails).
    """

    name = "turnstile"
    field = "cf-turnstile-response"
    default_verify_url = "https://challenges.cloudflare.com/turnstile/v0/siteverify"
    script_url = "https://challenges.cloudflare.com/turnstile/v0/api.js"
    widget_class = "cf-turnstile"
    widget_themes: ClassVar[frozenset[str]] = frozenset({"auto", "light", "dark"})
    # Cloudflare: "Maximum length: 2048 characters".
    max_token_length = 2048


class HCaptcha(Challenge):
    """hCaptcha. Its verify request also names the site key, so that a token
    solved for another site key is refused (``sitekey-secret-mismatch``).

    hCaptcha's test keys: site key ``10000000-ffff-ffff-ffff-000000000001`` with
    secret ``0x0000000000000000000000000000000000000000``.
    """

    name = "hcaptcha"
    field = "h-captcha-response"
    default_verify_url = "https://api.hcaptcha.com/siteverify"
    script_url = "https://js.hcaptcha.com/1/api.js"
    widget_class = "h-captcha"

    def verify_params(self, token: str, remote_ip: str | None) -> dict[str, str]:
        return {**super().verify_params(token, remote_ip), "sitekey": self.site_key}


class ReCaptcha(Challenge):
    """Google reCAPTCHA v2, the "I'm not a robot" checkbox.

    Google's test keys: site key ``6LeIxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI``
    with secret ``6LeIxAcTAAAAAGG-vFI1TnRWxMZNFuojJ4WifJWe`` (always passes).
    """

    name = "recaptcha"
    field = "g-recaptcha-response"
    default_verify_url = "https://www.google.com/recaptcha/api/siteverify"
    script_url = "https://www.google.com/recaptcha/api.js"
    widget_class = "g-recaptcha"
