"""``GET /auth/providers``."""

from __future__ import annotations

from django.http import HttpResponse

from ..context import AuthContext
from ..responses import json_response

__all__ = ["providers"]


def providers(ctx: AuthContext) -> HttpResponse:
    """Every provider's id, name, type and absolute sign-in and callback URLs."""
    return json_response({p.id: p.to_json(ctx.base_url) for p in ctx.config.providers})
