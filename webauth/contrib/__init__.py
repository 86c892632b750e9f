"""Integrations with other frameworks, each imported only by a project that uses it.

* :mod:`webauth.contrib.rest_framework`: Django REST framework's authentication
  and permission classes for webauth sessions (cookie and bearer).
* :mod:`webauth.contrib.ninja`: django-ninja's auth class for webauth sessions.

Neither framework is a dependency of webauth: install the one you use.
"""
