"""Storage adapters: the contract (:mod:`webauth.adapters.base`), the typed façade
flows and helpers call (:mod:`webauth.adapters.storage`) and the Django ORM
adapter (:mod:`webauth.adapters.django`)."""

from __future__ import annotations

import warnings

from .base import ADAPTER_METHODS, Adapter, missing_methods
from .storage import Storage

__all__ = ["ADAPTER_METHODS", "Adapter", "Storage", "missing_methods"]


def __getattr__(name: str) -> type[Storage]:
    # AdapterCaller was the façade's name before it was typed: a deprecated alias.
    if name == "AdapterCaller":
        warnings.warn(
            "webauth.adapters.AdapterCaller is deprecated; use webauth.adapters.Storage",
            DeprecationWarning,
            stacklevel=2,
        )
        return Storage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
