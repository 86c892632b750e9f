"""flows/accounts.py: the account-linking rules' storage, on any adapter."""

import pytest
from asgiref.sync import async_to_sync

from webauth.adapters.storage import Storage
from webauth.errors import AdapterError, TokenRefreshError
from webauth.flows.accounts import create_and_link
from webauth.logger import AuthLogger
from webauth.testing.memory import MemoryAdapter
from webauth.types import AdapterAccount, AdapterUser


class WithoutTheCombinedMethod(MemoryAdapter):
    """An adapter with only the spec's methods for a new user and account."""

    create_user_and_link_account = None
    refuse_links = False

    async def link_account(self, account):
        if self.refuse_links:
            raise RuntimeError("the account store is down")
        return await super().link_account(account)


def new_records():
    user = AdapterUser(id="", email="new@example.com", name="New")
    account = AdapterAccount(user_id="", type="oauth", provider="corp", provider_account_id="1")
    return user, account


def test_without_the_combined_method_user_then_account():
    adapter = WithoutTheCombinedMethod()
    created, linked = create_and_link(Storage(adapter, AuthLogger()), *new_records())
    assert linked.user_id == created.id and list(adapter.users) == [created.id]


def test_a_failed_link_deletes_the_user_it_just_made():
    adapter = WithoutTheCombinedMethod()
    adapter.refuse_links = True
    with pytest.raises(AdapterError):
        create_and_link(Storage(adapter, AuthLogger()), *new_records())
    assert adapter.users == {} and adapter.accounts == {}


def test_the_combined_method_is_used_when_there():
    adapter = MemoryAdapter()
    created, linked = create_and_link(Storage(adapter, AuthLogger()), *new_records())
    assert async_to_sync(adapter.get_user_by_account)("corp", "1").id == created.id
    assert linked.user_id == created.id


def test_webauth_errors_keep_their_own_type():
    # Defined in errors.py like every other error, so .type is the class name.
    assert TokenRefreshError.type == "TokenRefreshError"
