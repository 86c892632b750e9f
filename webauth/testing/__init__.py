"""Test utilities for projects and adapter authors.

:class:`AdapterSuite` is the adapter contract as a pytest suite.
"""

from .adapter import AdapterSuite

__all__ = ["AdapterSuite"]
