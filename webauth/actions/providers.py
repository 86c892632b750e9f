"""``GET /auth/providers``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..responses import json_response

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["providers"]


def providers(state: AuthState, provider_id: str | None) -> HttpResponse:
    """Every provider's id, name, type and absolute sign-in and callback URLs."""
    base_url = state.base_url
    return json_response({p.id: p.to_json(base_url) for p in state.config.providers})
