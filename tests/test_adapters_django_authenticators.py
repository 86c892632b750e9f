"""Passkeys (Authenticator) in the Django ORM adapter: found and kept unique through
``credential_id_hash`` on every database, with the full credential id compared exactly.

These run on SQLite, PostgreSQL and MariaDB (WEBAUTH_TEST_POSTGRES / _MARIADB); the
MariaDB test database has a case-insensitive collation, where a lookup or a unique
index on ``credential_id`` itself would confuse ids that differ only in case.
"""

import base64
import hashlib
import secrets
from datetime import timedelta
from functools import partial
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import IntegrityError, connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from django.utils import timezone

from webauth.adapters.django import DjangoAdapter
from webauth.errors import LastSignInMethod
from webauth.models import (
    Authenticator,
    WebAuthnChallenge,
    WebAuthnUserHandle,
    credential_id_hash,
    token_hash,
)
from webauth.testing.extensions import race
from webauth.types import AdapterAuthenticator
from webauth.types import WebAuthnChallenge as ChallengeRecord

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


# -- passkey storage of issue 12 ------------------------------------------------------------


def challenge(ceremony="authenticate", binding="binding", minutes=5):
    record = ChallengeRecord(
        challenge=secrets.token_urlsafe(32),
        ceremony=ceremony,
        binding=binding,
        user_data={"email": "n@example.com"} if ceremony == "register" else None,
        expires=timezone.now() + timedelta(minutes=minutes),
    )
    adapter.create_webauthn_challenge(record)
    return record


def test_challenge_and_binding_are_stored_hashed():
    record = challenge("register", binding="browser-binding")
    row = WebAuthnChallenge.objects.get()
    assert row.challenge_hash == token_hash(record.challenge)
    assert row.binding_hash == token_hash("browser-binding")
    assert (row.ceremony, row.user_data) == ("register", {"email": "n@example.com"})
    stored = " ".join(str(v) for v in WebAuthnChallenge.objects.values_list().get())
    assert record.challenge not in stored and "browser-binding" not in stored


def test_an_unknown_ceremony_is_not_stored():
    with pytest.raises(ValueError, match="ceremony"):
        challenge("login")
    assert not WebAuthnChallenge.objects.exists()


def test_using_a_challenge_is_a_lookup_and_a_delete(django_assert_num_queries):
    record = challenge()
    with django_assert_num_queries(2) as queries:
        assert adapter.use_webauthn_challenge(record.challenge, "authenticate", "binding")
    assert "challenge_hash" in queries.captured_queries[0]["sql"]
    assert queries.captured_queries[1]["sql"].lstrip().upper().startswith("DELETE")
    # Refused uses cost the lookup only and delete nothing.
    other = challenge()
    with django_assert_num_queries(1):
        assert adapter.use_webauthn_challenge(other.challenge, "authenticate", "wrong") is None
    assert WebAuthnChallenge.objects.count() == 1


def test_challenge_uses_with_odd_arguments_are_refused():
    record = challenge()
    assert adapter.use_webauthn_challenge(None, "authenticate", "binding") is None
    assert adapter.use_webauthn_challenge(record.challenge, "authenticate", None) is None
    assert adapter.use_webauthn_challenge(record.challenge, None, "binding") is None
    assert adapter.use_webauthn_challenge(record.challenge, "authenticate", "binding")


def test_counter_update_is_one_conditional_update(user, django_assert_num_queries):
    credential_id = long_id()
    passkey(user, credential_id, counter=3)
    with django_assert_num_queries(2) as queries:
        assert adapter.update_authenticator_counter(credential_id, 3) is None
    update = queries.captured_queries[1]["sql"]
    assert update.lstrip().upper().startswith("UPDATE") and "counter" in update.split("WHERE")[1]
    row = Authenticator.objects.get()
    assert row.counter == 3 and row.last_used_at is None
    assert adapter.update_authenticator_counter(credential_id, 4).counter == 4


def test_new_fields_are_stored_and_cut_to_their_columns(user):
    record = adapter.create_authenticator(
        AdapterAuthenticator(
            credential_id="cred-fields",
            user_id=str(user.pk),
            provider_account_id="cred-fields",
            credential_public_key="pk",
            counter=0,
            credential_backed_up=True,
            credential_device_type="multiDevice",
            name="n" * 150,
            aaguid="ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4",
            backup_eligible=True,
        )
    )
    row = Authenticator.objects.get()
    assert row.name == "n" * 100 and record.name == "n" * 100
    assert row.aaguid == "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4" and row.backup_eligible
    renamed = adapter.rename_authenticator(str(user.pk), "cred-fields", "r" * 150)
    assert renamed.name == "r" * 100
    assert Authenticator.objects.get().name == "r" * 100


def test_rename_and_delete_compare_the_credential_id_exactly(user):
    passkey(user, "abc-id")
    passkey(user, "other-id")
    assert adapter.rename_authenticator(str(user.pk), "ABC-ID", "x") is None
    assert adapter.delete_authenticator(str(user.pk), "ABC-ID") is None
    assert adapter.delete_authenticator(str(user.pk), "abc-id ") is None
    assert Authenticator.objects.count() == 2
    assert adapter.delete_authenticator("not-a-user-id", "abc-id") is None


def test_user_handle_is_one_row_per_user(user):
    handle = adapter.get_user_handle(str(user.pk))
    row = WebAuthnUserHandle.objects.get()
    assert row.user_id == user.pk and row.handle == handle and len(handle) == 86
    with pytest.raises(IntegrityError):
        WebAuthnUserHandle.objects.create(user=user, handle="another")


def test_user_handle_lookups(user, django_assert_num_queries):
    handle = adapter.get_user_handle(str(user.pk))
    with django_assert_num_queries(1):
        assert adapter.get_user_by_handle(handle).instance == user
    with django_assert_num_queries(1):
        assert adapter.get_user_handle(str(user.pk), False) == handle
    assert adapter.get_user_handle("not-a-user-id") is None
    assert adapter.get_user_by_handle(None) is None
    with pytest.raises(ValueError, match="86"):
        adapter.get_user_handle(str(user.pk), True, "h" * 87)


def test_a_users_handle_goes_with_the_user(user):
    adapter.get_user_handle(str(user.pk))
    user.delete()
    assert not WebAuthnUserHandle.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_racing_unlinks_and_passkey_removals_leave_a_way_in():
    # An OAuth account, a passkey with its account: removing either at once
    # (50 callers, half each way) leaves the other.
    for round_no in range(3):
        owner = get_user_model().objects.create_user(f"racer-{round_no}")
        adapter.link_account(
            {
                "user_id": str(owner.pk),
                "type": "oauth",
                "provider": "github",
                "provider_account_id": f"gh-{round_no}",
            }
        )
        credential_id = f"cred-race-{round_no}"
        passkey(owner, credential_id)
        adapter.link_account(
            {
                "user_id": str(owner.pk),
                "type": "webauthn",
                "provider": "passkey",
                "provider_account_id": credential_id,
            }
        )

        def attempt(fn):
            try:
                return "removed" if fn() is not None else "gone"
            except LastSignInMethod:
                return "refused"

        unlink = partial(
            attempt, partial(adapter.unlink_user_account, str(owner.pk), "github", None)
        )
        remove = partial(
            attempt, partial(adapter.delete_authenticator, str(owner.pk), credential_id)
        )
        results = race([unlink if n % 2 else remove for n in range(50)])
        assert results.count("removed") == 1, f"round {round_no}: {results}"
        assert adapter.count_sign_in_methods(str(owner.pk)) == 1


BEFORE_PASSKEYS = [("webauth", "0005_verificationtoken_code_hash_attempts")]


@pytest.mark.django_db(transaction=True)
def test_migration_0006_keeps_existing_passkeys_and_reverses():
    try:
        old_apps = migrate(BEFORE_PASSKEYS)
        old_user = old_apps.get_model(*get_user_model()._meta.label.split(".")).objects.create(
            **{get_user_model().USERNAME_FIELD: "before-0006"}
        )
        old_apps.get_model("webauth", "Authenticator").objects.create(
            user_id=old_user.pk,
            credential_id="old-cred",
            credential_id_hash=credential_id_hash("old-cred"),
            provider_account_id="old-cred",
            credential_public_key="k",
            credential_device_type="multiDevice",
            credential_backed_up=True,
            counter=9,
        )
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("webauth"))
        found = adapter.get_authenticator("old-cred")
        assert (found.name, found.aaguid, found.backup_eligible) == (None, None, False)
        assert found.counter == 9 and found.credential_backed_up
        assert adapter.get_user_handle(str(old_user.pk), False) is None
        old_apps = migrate(BEFORE_PASSKEYS)
        fields = {f.name for f in old_apps.get_model("webauth", "Authenticator")._meta.fields}
        assert not {"name", "aaguid", "backup_eligible"} & fields
        assert old_apps.get_model("webauth", "Authenticator").objects.get().counter == 9
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM webauth_authenticator")
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("webauth"))


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
