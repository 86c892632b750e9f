"""Passkeys (Authenticator) in the Django ORM adapter: found and kept unique through
``credential_id_hash`` on every database, with the full credential id compared exactly.

These run on SQLite, PostgreSQL and MariaDB (WEBAUTH_TEST_POSTGRES / _MARIADB); the
MariaDB test database has a case-insensitive collation, where a lookup or a unique
index on ``credential_id`` itself would confuse ids that differ only in case.
"""

import base64
import hashlib
import secrets
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import IntegrityError, connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from webauth.adapters.django import DjangoAdapter
from webauth.models import Authenticator, credential_id_hash
from webauth.types import AdapterAuthenticator

pytestmark = pytest.mark.django_db
adapter = DjangoAdapter()


def long_id(nbytes=1023):
    """A base64url credential id: 1023 bytes (WebAuthn's maximum) make 1364 characters."""
    return base64.urlsafe_b64encode(secrets.token_bytes(nbytes)).rstrip(b"=").decode()


def passkey(user, credential_id, **fields):
    return adapter.create_authenticator(
        AdapterAuthenticator(
            credential_id=credential_id,
            user_id=str(user.pk),
            provider_account_id=credential_id[:255],
            credential_public_key="pQECAyYgASFYIA",
            counter=fields.pop("counter", 0),
            credential_backed_up=False,
            credential_device_type="singleDevice",
            transports="internal",
        )
    )


@pytest.fixture
def user():
    return get_user_model().objects.create_user("pk-owner")


def test_hash_is_the_sha256_hex_of_the_id(user):
    credential_id = long_id()
    passkey(user, credential_id)
    row = Authenticator.objects.get()
    assert row.credential_id == credential_id and len(credential_id) == 1364
    assert row.credential_id_hash == hashlib.sha256(credential_id.encode()).hexdigest()
    assert credential_id_hash(credential_id) == row.credential_id_hash


def test_long_id_is_found_and_updated_in_one_query_each(user, django_assert_num_queries):
    credential_id = long_id()
    passkey(user, credential_id)
    with django_assert_num_queries(1):
        found = adapter.get_authenticator(credential_id)
    assert found.credential_id == credential_id and found.user_id == str(user.pk)
    with django_assert_num_queries(2):
        updated = adapter.update_authenticator_counter(credential_id, 41)
    assert updated.counter == 41 and updated.credential_id == credential_id
    row = Authenticator.objects.get()
    assert row.counter == 41 and row.last_used_at is not None


def test_lookups_use_the_hash_index(user, django_assert_num_queries):
    credential_id = long_id()
    passkey(user, credential_id)
    with django_assert_num_queries(1) as queries:
        adapter.get_authenticator(credential_id)
    where = queries.captured_queries[0]["sql"].split("WHERE", 1)[1]
    assert "credential_id_hash" in where and credential_id not in where


def test_ids_differing_only_in_case_are_different_passkeys(user):
    lower = "abcdefghijklmnop-_0123"
    upper = lower.upper()
    passkey(user, lower, counter=1)
    passkey(user, upper, counter=2)  # no IntegrityError: a different credential
    assert Authenticator.objects.count() == 2
    assert adapter.get_authenticator(lower).counter == 1
    assert adapter.get_authenticator(upper).counter == 2
    assert adapter.get_authenticator("AbcdefghijklmnoP-_0123") is None
    adapter.update_authenticator_counter(upper, 9)
    assert adapter.get_authenticator(lower).counter == 1
    assert adapter.get_authenticator(upper).counter == 9
    with pytest.raises(LookupError):
        adapter.update_authenticator_counter("ABCDEFGHIJKLMNOp-_0123", 5)


def test_trailing_space_and_accents_are_part_of_the_id(user):
    # MariaDB's PAD SPACE and accent-insensitive collations would match these in SQL.
    passkey(user, "cred-é")
    assert adapter.get_authenticator("cred-e") is None
    assert adapter.get_authenticator("cred-é ") is None
    assert adapter.get_authenticator("cred-é").credential_id == "cred-é"


def test_duplicate_id_is_refused_and_the_first_stays(user):
    credential_id = long_id()
    passkey(user, credential_id, counter=3)
    other = get_user_model().objects.create_user("pk-thief")
    with pytest.raises(IntegrityError):
        passkey(other, credential_id, counter=0)
    # The failed insert rolled back only itself: the connection is usable.
    found = adapter.get_authenticator(credential_id)
    assert found.user_id == str(user.pk) and found.counter == 3
    assert Authenticator.objects.count() == 1


def test_duplicate_is_refused_by_the_database_not_only_by_the_adapter(user):
    credential_id = long_id()
    passkey(user, credential_id)
    row = Authenticator.objects.get()
    row.pk = None
    with pytest.raises(IntegrityError):
        row.save(force_insert=True)


def test_lookup_compares_the_full_id_not_only_the_hash(user):
    """Were two ids to share a hash, the row of the other id is not returned."""
    passkey(user, "real-id")
    Authenticator.objects.update(credential_id_hash=credential_id_hash("forged-id"))
    assert adapter.get_authenticator("forged-id") is None
    with pytest.raises(LookupError):
        adapter.update_authenticator_counter("forged-id", 1)
    assert Authenticator.objects.get().counter == 0


def test_unknown_id_is_none_and_update_raises(user):
    assert adapter.get_authenticator(long_id()) is None
    with pytest.raises(LookupError):
        adapter.update_authenticator_counter(long_id(), 1)


def test_orm_save_keeps_the_hash_in_step(user):
    row = Authenticator.objects.create(
        user=user,
        credential_id="first",
        provider_account_id="p",
        credential_public_key="k",
        credential_device_type="singleDevice",
    )
    assert row.credential_id_hash == credential_id_hash("first")
    row.credential_id = "second"
    row.save(update_fields=["credential_id"])
    row.refresh_from_db()
    assert row.credential_id_hash == credential_id_hash("second")
    assert adapter.get_authenticator("second") is not None
    assert adapter.get_authenticator("first") is None


def test_admin_lists_shows_and_finds_passkeys(admin_client, user):
    credential_id = long_id()
    passkey(user, credential_id)
    row = Authenticator.objects.get()
    changelist = reverse("admin:webauth_authenticator_changelist")
    response = admin_client.get(changelist, {"q": credential_id})
    assert response.status_code == 200 and response.context["cl"].result_count == 1
    response = admin_client.get(changelist, {"q": credential_id[:20]})
    assert response.status_code == 200 and response.context["cl"].result_count == 1
    response = admin_client.get(changelist, {"q": "not-a-registered-id"})
    assert response.context["cl"].result_count == 0
    response = admin_client.get(reverse("admin:webauth_authenticator_change", args=[row.pk]))
    assert response.status_code == 200 and credential_id.encode() in response.content


def test_system_checks_with_database_tags_are_clean():
    """``manage.py check --database default``: no warnings on SQLite, PostgreSQL or
    MariaDB (a unique 1400-character varchar was mysql.W003 on MariaDB)."""
    out = StringIO()
    call_command("check", "--database", "default", "--fail-level", "WARNING", stdout=out)
    assert "no issues" in out.getvalue()


# -- the migration that added credential_id_hash ----------------------------------------

BEFORE = [("webauth", "0002_account_session_token_authenticator")]
AFTER = [("webauth", "0003_authenticator_credential_id_hash")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def credential_id_is_unique():
    """Whether the database has a unique index on credential_id alone."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "webauth_authenticator")
    return any(
        c["unique"] and not c["primary_key"] and c["columns"] == ["credential_id"]
        for c in constraints.values()
    )


@pytest.mark.django_db(transaction=True)
def test_migration_removes_the_unique_index_the_old_0002_made():
    # Databases migrated before 0002 lost its unique credential_id have that index;
    # 0003 removes it (where the database allowed it to exist: not MySQL).
    try:
        old_apps = migrate(BEFORE)
        model = old_apps.get_model("webauth", "Authenticator")
        plain = model._meta.get_field("credential_id")
        unique = plain.clone()
        unique._unique = True
        unique.set_attributes_from_name("credential_id")
        unique.model = model
        with connection.schema_editor() as editor:
            editor.alter_field(model, plain, unique)
        assert credential_id_is_unique()
        migrate(AFTER)
        assert not credential_id_is_unique()
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("webauth"))


@pytest.mark.django_db(transaction=True)
def test_migration_fills_the_hash_of_existing_rows_and_reverses():
    ids = [long_id(), "short", "SHORT", *(f"id-{n}" for n in range(1500))]
    try:
        old_apps = migrate(BEFORE)
        old_user = old_apps.get_model(*get_user_model()._meta.label.split(".")).objects.create(
            **{get_user_model().USERNAME_FIELD: "migrated"}
        )
        old_authenticator = old_apps.get_model("webauth", "Authenticator")
        old_authenticator.objects.bulk_create(
            old_authenticator(
                user_id=old_user.pk,
                credential_id=credential_id,
                provider_account_id="p",
                credential_public_key="k",
                credential_device_type="singleDevice",
                counter=n,
            )
            for n, credential_id in enumerate(ids)
        )

        new_apps = migrate(AFTER)
        rows = new_apps.get_model("webauth", "Authenticator").objects.order_by("counter")
        assert [(r.credential_id, r.credential_id_hash) for r in rows] == [
            (credential_id, hashlib.sha256(credential_id.encode()).hexdigest())
            for credential_id in ids
        ]
        # The current model and adapter see the migrated rows (at the latest schema:
        # later migrations add columns the current model reads).
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("webauth"))
        assert adapter.get_authenticator(ids[0]).counter == 0
        assert adapter.get_authenticator(ids[-1]).counter == len(ids) - 1
        with pytest.raises(IntegrityError):
            passkey(get_user_model().objects.get(pk=old_user.pk), ids[1])

        old_apps = migrate(BEFORE)
        old_authenticator = old_apps.get_model("webauth", "Authenticator")
        assert "credential_id_hash" not in {f.name for f in old_authenticator._meta.fields}
        kept = old_authenticator.objects.order_by("counter")
        assert list(kept.values_list("credential_id", flat=True)) == ids
        assert not credential_id_is_unique()  # 0002 has no index on it (MySQL refuses one)
    finally:
        # Back to the latest schema whatever failed, so later tests find it; the rows
        # go first (a failed assertion may have left a duplicate behind).
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM webauth_authenticator")
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("webauth"))
