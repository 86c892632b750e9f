"""Test utilities for projects and adapter authors.

:class:`AdapterSuite` is the adapter contract (Auth.js's 19 methods) as a pytest
suite; :class:`AdapterExtensionsSuite` covers webauth's extensions to it.
"""

from .adapter import AdapterSuite
from .extensions import AdapterExtensionsSuite

__all__ = ["AdapterExtensionsSuite", "AdapterSuite"]
