"""The adapter conformance suite (webauth.testing) against our own adapters."""

import pytest
from django.conf import settings

from webauth.adapters.django import DjangoAdapter
from webauth.testing import AdapterSuite
from webauth.testing.memory import MemoryAdapter

pytestmark = pytest.mark.django_db


class TestDjangoAdapter(AdapterSuite):
    # Django's auth.User has no image or email-verified column; the adapter
    # documents that it drops them. webauth.User stores both.
    # (tests/test_models_user.py runs this module under AUTH_USER_MODEL = "webauth.User".)
    stores_image = settings.AUTH_USER_MODEL == "webauth.User"
    stores_email_verified = settings.AUTH_USER_MODEL == "webauth.User"

    @pytest.fixture
    def adapter(self):
        return DjangoAdapter()


class TestAsyncMemoryAdapter(AdapterSuite):
    @pytest.fixture
    def adapter(self):
        return MemoryAdapter()
