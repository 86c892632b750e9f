"""An OpenID provider's own second factor (its ID token's ``amr``), accepted per provider.

With ``mfa_amr`` set, a sign-in whose verified ID token says the provider asked
for a second factor counts as two factors: webauth does not ask again, and the
session says ``mfa``. Without it, or with another ``amr``, webauth asks.
Against the real OpenID provider of the tests (django-oauth-toolkit).
"""

from __future__ import annotations

import pyotp
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from webauth import jwt as jose
from webauth.conf import get_config
from webauth.mfa import factors
from webauth.providers.oauth import OIDC

from .support import idp as test_idp
from .support.helpers import session_cookie
from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, start_idp
from .support.oidc_helpers import sign_in as oidc_sign_in

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider_site(settings, live_server):
    idp = start_idp(live_server)

    def configure(**options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "providers": [
                OIDC(
                    id="example",
                    issuer=idp.issuer,
                    client_id=CLIENT_ID,
                    client_secret=CLIENT_SECRET,
                    checks=("pkce", "nonce"),
                    **options,
                )
            ],
            "mfa": {"enabled": True},
        }

    yield idp, configure
    test_idp.AMR_CLAIMS.clear()


def with_a_key(idp) -> None:
    """A first sign-in makes the relying party's user; then it adds a TOTP key."""
    assert session_cookie(oidc_sign_in(Client(), idp))
    user = get_user_model().objects.get(email="ida@idp.example")
    config = get_config()
    enrolment = factors.begin_totp(config, user.pk, account=user.email, issuer="Example")
    assert factors.confirm_totp(
        config, user.pk, enrolment.factor.id, pyotp.TOTP(enrolment.key).now()
    )


@pytest.mark.parametrize(
    ("accepted", "said", "asked"),
    [
        (["mfa"], ["pwd", "mfa"], False),
        (["mfa", "hwk"], ["hwk"], False),
        (["mfa"], ["pwd"], True),
        ([], ["pwd", "mfa"], True),  # the provider's word is not taken unless configured
    ],
)
def test_the_providers_second_factor_counts_when_configured(provider_site, accepted, said, asked):
    idp, configure = provider_site
    configure(mfa_amr=accepted)
    with_a_key(idp)
    test_idp.AMR_CLAIMS["ida"] = said
    response = oidc_sign_in(Client(), idp)
    if asked:
        assert response["Location"].endswith("/auth/mfa") and session_cookie(response) is None
        return
    token = session_cookie(response)
    assert token
    claims = jose.decode(token=token, secret=SECRET, salt=SESSION)
    assert claims["amr"] == ["fed", "mfa"] and "webauth_mfa_time" in claims
