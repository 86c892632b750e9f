"""Providers: the ways a user can sign in.

Configure them in ``settings.WEBAUTH["providers"]`` as instances, classes or
dotted paths::

    from webauth.providers import DjangoCredentials

    WEBAUTH = {"providers": [DjangoCredentials()]}
"""

from .base import Provider
from .credentials import Credentials, DjangoCredentials
from .email import Email
from .webauthn import Passkey, WebAuthn

__all__ = ["Credentials", "DjangoCredentials", "Email", "Passkey", "Provider", "WebAuthn"]
