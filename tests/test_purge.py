"""manage.py webauth_purge."""

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from webauth.models import Session, VerificationToken, token_hash

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows():
    user = get_user_model().objects.create_user("p")
    now = timezone.now()
    past, future = now - timedelta(minutes=1), now + timedelta(days=1)
    # Interleaved so every batch mixes live and expired rows.
    for i in range(25):
        Session.objects.create(user=user, token_hash=token_hash(f"s{i}"), expires=past)
        Session.objects.create(user=user, token_hash=token_hash(f"l{i}"), expires=future)
    for i in range(7):
        VerificationToken.objects.create(identifier="a", token_hash=f"e{i}", expires=past)
    VerificationToken.objects.create(identifier="a", token_hash="live", expires=future)


def purge(*args):
    out = StringIO()
    call_command("webauth_purge", *args, stdout=out)
    return out.getvalue()


def test_purge_deletes_only_expired_rows_and_reports_per_table(rows):
    output = purge("--batch-size", "4")
    assert Session.objects.count() == 25
    assert not Session.objects.filter(expires__lt=timezone.now()).exists()
    assert list(VerificationToken.objects.values_list("token_hash", flat=True)) == ["live"]
    assert "webauth_session: deleted 25 expired rows" in output
    assert "webauth_verificationtoken: deleted 7 expired rows" in output


def test_dry_run_counts_and_deletes_nothing(rows):
    output = purge("--dry-run")
    assert "webauth_session: 25 expired rows would be deleted" in output
    assert "webauth_verificationtoken: 7 expired rows would be deleted" in output
    assert Session.objects.count() == 50 and VerificationToken.objects.count() == 8


def test_sparse_ids_are_all_reached(rows):
    user = get_user_model().objects.get()
    far = Session.objects.create(
        pk=Session.objects.order_by("-pk").first().pk + 100_000,
        user=user,
        token_hash=token_hash("far"),
        expires=timezone.now() - timedelta(days=1),
    )
    purge("--batch-size", "10000")
    assert not Session.objects.filter(pk=far.pk).exists()


def test_verbosity_two_reports_batches(rows):
    output = purge("--batch-size", "10", "--verbosity", "2")
    assert "webauth_session: deleted a batch of" in output


def test_verbosity_zero_is_silent(rows):
    assert purge("--verbosity", "0") == ""


def test_empty_tables():
    output = purge()
    assert "webauth_session: deleted 0 expired rows in 0 batches" in output


def test_bad_batch_size():
    with pytest.raises(CommandError, match="--batch-size"):
        purge("--batch-size", "0")


# MariaDB and MySQL commit DDL at once (no rollback at the end of the test): the
# table is renamed back explicitly, and the rows are flushed after the test.
@pytest.mark.django_db(transaction=True)
def test_database_error_is_a_clear_command_error(rows):
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE webauth_session RENAME TO webauth_session_gone")
    try:
        with pytest.raises(
            CommandError, match=r"(?s)Purging webauth_session failed: .*run the command"
        ):
            purge()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE webauth_session_gone RENAME TO webauth_session")


def test_unknown_database_alias():
    with pytest.raises(CommandError, match="Unknown database alias 'nope'"):
        purge("--database", "nope")


def test_dry_run_respects_verbosity_zero(rows):
    assert purge("--dry-run", "--verbosity", "0") == ""
