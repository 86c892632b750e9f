"""``GET /auth/providers``."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from ..conf import Config
from ..responses import encoded_json_response, json_bytes

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["providers"]


def providers(state: AuthState, provider_id: str | None) -> HttpResponse:
    """Every provider's id, name, type and absolute sign-in and callback URLs."""
    return encoded_json_response(_body(state.config, state.base_url))


@lru_cache(maxsize=32)
def _body(config: Config, base_url: str) -> bytes:
    # The answer depends only on the configuration (providers are never changed
    # once configured) and the site's address: it is encoded once per pair. The
    # key holds the config, so a rebuilt configuration gets its own entries.
    return json_bytes({p.id: p.to_json(base_url) for p in config.providers})
