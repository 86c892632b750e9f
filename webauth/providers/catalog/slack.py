"""Sign in with Slack (OpenID Connect, "Sign in with Slack").

Slack checks a nonce rather than PKCE. Slack requires an ``https`` redirect
URI, even in development.

Environment: ``AUTH_SLACK_ID``, ``AUTH_SLACK_SECRET``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["Slack"]


class Slack(OIDC):
    """Slack. Claims: ``sub``, ``name``, ``email``, ``picture``, ``https://slack.com/team_id``."""

    default_id = "slack"
    default_name = "Slack"
    issuer = "https://slack.com"
    checks = ("nonce",)
    style = {"logo": "webauth/providers/slack.svg", "bg": "#611f69", "text": "#fff"}
