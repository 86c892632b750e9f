"""``path("", include("webauth.well_known_urls"))``: the JWKS at the site's root.

Serves ``GET /.well-known/jwks.json`` (URL name ``webauth_jwks``), the same keys
as ``<base_path>/.well-known/jwks.json``, for verifiers configured with the
conventional address (docs/tokens.md). ``404`` while ``WEBAUTH["tokens"]`` is off.
"""

from django.urls import path

from .actions.token import jwks_view

urlpatterns = [path(".well-known/jwks.json", jwks_view, name="webauth_jwks")]
