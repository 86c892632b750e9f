"""manage.py webauth_purge."""

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from webauth.models import Session, TokenSession, VerificationToken, WebAuthnChallenge, token_hash
from webauth.purge import purge_expired

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


# -- batches follow the rows, not the id range ---------------------------------------------


def delete_statements(queries):
    return [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("DELETE")]


@pytest.mark.parametrize(
    ("model", "batch_size", "expected_batches"),
    [(Session, 10_000, 1), (Session, 1, 2), (VerificationToken, 10_000, 1)],
)
def test_far_apart_ids_cost_one_delete_per_batch_of_rows(model, batch_size, expected_batches):
    # Two expired rows at ids 1 and 10**10: walking the id range would run a
    # million empty DELETEs; batches that start at the next existing expired id
    # need ceil(rows / batch size) of them.
    past = timezone.now() - timedelta(days=1)
    if model is Session:
        user = get_user_model().objects.create_user("far")
        make = lambda pk, n: Session.objects.create(  # noqa: E731
            pk=pk, user=user, token_hash=token_hash(n), expires=past
        )
    else:
        make = lambda pk, n: VerificationToken.objects.create(  # noqa: E731
            pk=pk, identifier="far", token_hash=n, expires=past
        )
    make(1, "first")
    make(10**10, "last")
    batches = []

    def progress(count):
        batches.append(count)
        assert len(batches) <= expected_batches, "more DELETE batches than batches of rows"

    with CaptureQueriesContext(connection) as queries:
        result = purge_expired(model, batch_size=batch_size, progress=progress)
    assert (result.deleted, result.batches) == (2, expected_batches)
    assert len(delete_statements(queries.captured_queries)) == expected_batches
    assert not model.objects.exists()


def test_deletes_are_bounded_by_rows_over_batch_size_with_live_rows_between():
    user = get_user_model().objects.create_user("mixed")
    now = timezone.now()
    ids = [1, 3, 5, 1000, 10**6, 10**6 + 2, 10**9, 10**10, 10**10 + 5, 10**12]
    for i, pk in enumerate(ids):
        Session.objects.create(
            pk=pk, user=user, token_hash=token_hash(f"x{i}"), expires=now - timedelta(hours=1)
        )
        Session.objects.create(  # a live row right after each expired one
            pk=pk + 1,
            user=user,
            token_hash=token_hash(f"l{i}"),
            expires=now + timedelta(days=1),
        )
    batches = []

    def progress(count):
        batches.append(count)
        assert len(batches) <= 4, "more DELETE batches than batches of rows"

    with CaptureQueriesContext(connection) as queries:
        result = purge_expired(Session, batch_size=3, now=now, progress=progress)
    assert batches == [3, 3, 3, 1]
    assert result.deleted == 10 and result.batches == 4  # ceil(10 / 3)
    assert len(delete_statements(queries.captured_queries)) == 4
    assert Session.objects.count() == 10
    assert not Session.objects.filter(expires__lt=now).exists()


def test_the_batches_report_full_batches_then_the_rest(rows):
    counts = []
    result = purge_expired(Session, batch_size=10, progress=counts.append)
    assert counts == [10, 10, 5] and result.batches == 3


def test_empty_table_runs_no_delete():
    with CaptureQueriesContext(connection) as queries:
        result = purge_expired(Session)
    assert (result.deleted, result.batches) == (0, 0)
    assert delete_statements(queries.captured_queries) == []


def test_expired_webauthn_challenges_are_purged(db):
    now = timezone.now()
    for n, expires in enumerate([now - timedelta(minutes=1)] * 3 + [now + timedelta(minutes=5)]):
        WebAuthnChallenge.objects.create(
            challenge_hash=token_hash(f"c{n}"),
            ceremony="authenticate",
            binding_hash=token_hash("b"),
            expires=expires,
        )
    assert "webauth_webauthnchallenge: 3 expired rows would be deleted" in purge("--dry-run")
    assert "webauth_webauthnchallenge: deleted 3 expired rows" in purge()
    assert list(WebAuthnChallenge.objects.values_list("challenge_hash", flat=True)) == [
        token_hash("c3")
    ]


def test_access_token_sessions_are_purged_once_their_tokens_have_expired(db):
    now = timezone.now()
    TokenSession.objects.create(sid="gone", user_id="1", expires=now - timedelta(seconds=1))
    TokenSession.objects.create(
        sid="ended-gone", user_id="1", expires=now - timedelta(seconds=1), ended=now
    )
    TokenSession.objects.create(sid="live", user_id="1", expires=now + timedelta(minutes=5))
    TokenSession.objects.create(
        sid="ended-live", user_id="1", expires=now + timedelta(minutes=5), ended=now
    )
    assert "webauth_tokensession: deleted 2 expired rows" in purge()
    assert sorted(TokenSession.objects.values_list("sid", flat=True)) == ["ended-live", "live"]
