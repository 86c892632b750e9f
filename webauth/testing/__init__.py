"""Test utilities for projects and adapter authors.

:class:`AdapterSuite` is the adapter contract as a pytest suite: Auth.js's 19
methods (:class:`AdapterCoreSuite`) and webauth's extensions
(:class:`AdapterExtensionsSuite`). :class:`AdapterHelpers` holds what their
tests use (``run``, ``new_user``, ``new_session``, ``new_authenticator``).

:class:`webauth.testing.memory.MemoryAdapter` is the whole contract in memory,
for a project's tests; import it from its module (it needs Django set up).
"""

from .adapter import AdapterCoreSuite, AdapterSuite
from .extensions import AdapterExtensionsSuite
from .helpers import AdapterHelpers

__all__ = ["AdapterCoreSuite", "AdapterExtensionsSuite", "AdapterHelpers", "AdapterSuite"]
