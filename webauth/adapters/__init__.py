"""Storage adapters: the contract (:mod:`webauth.adapters.base`) and the Django ORM
adapter (:mod:`webauth.adapters.django`)."""

from .base import ADAPTER_METHODS, Adapter, AdapterCaller, missing_methods

__all__ = ["ADAPTER_METHODS", "Adapter", "AdapterCaller", "missing_methods"]
