"""Test utilities for projects and adapter authors.

:class:`AdapterSuite` is the adapter contract as a pytest suite: Auth.js's 19
methods (:class:`AdapterCoreSuite`) and webauth's extensions
(:class:`AdapterExtensionsSuite`).
"""

from .adapter import AdapterCoreSuite, AdapterSuite
from .extensions import AdapterExtensionsSuite

__all__ = ["AdapterCoreSuite", "AdapterExtensionsSuite", "AdapterSuite"]
