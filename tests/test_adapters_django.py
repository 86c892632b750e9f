"""DjangoAdapter behaviour beyond the contract: hashing, mapping onto auth.User,
transactions, and single-use tokens under concurrency."""

import hmac
import random
import threading
from datetime import timedelta
from functools import partial

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, connections
from django.utils import timezone

from webauth.adapters import django as django_adapter
from webauth.adapters.django import DjangoAdapter
from webauth.models import Account, Session, VerificationToken, token_hash
from webauth.testing.extensions import race
from webauth.types import AdapterAccount, AdapterSession
from webauth.types import VerificationToken as VerificationTokenRecord

pytestmark = pytest.mark.django_db
adapter = DjangoAdapter()


def test_session_token_is_stored_hashed():
    user = get_user_model().objects.create_user("h")
    adapter.create_session(
        AdapterSession(session_token="s3cret", user_id=str(user.pk), expires=timezone.now())
    )
    row = Session.objects.get()
    assert row.token_hash == token_hash("s3cret") != "s3cret"
    assert not Session.objects.filter(token_hash="s3cret").exists()


def test_verification_token_is_stored_hashed():
    adapter.create_verification_token(
        {"identifier": "a@example.com", "token": "abc", "expires": timezone.now()}
    )
    assert VerificationToken.objects.get().token_hash == token_hash("abc")


def test_verification_code_is_stored_hashed():
    record = VerificationTokenRecord(
        identifier="a@example.com", token="link", expires=timezone.now(), code="the-code"
    )
    adapter.replace_verification_token(record)
    row = VerificationToken.objects.get()
    assert (row.token_hash, row.code_hash) == (token_hash("link"), token_hash("the-code"))
    assert row.attempts == 0
    adapter.replace_verification_token({**record.to_wire(), "code": None, "token": "l2"})
    assert VerificationToken.objects.get().code_hash == ""  # a link-only grant


def test_auth_user_mapping_splits_name_and_generates_unique_usernames():
    first = adapter.create_user({"email": "sam@example.com", "name": "Sam Vimes"})
    second = adapter.create_user({"email": "sam@example.org", "name": "Sam Other"})
    one = get_user_model().objects.get(pk=first.id)
    two = get_user_model().objects.get(pk=second.id)
    assert (one.first_name, one.last_name) == ("Sam", "Vimes")
    assert one.username == "sam" and two.username.startswith("sam-")
    assert first.name == "Sam Vimes" and first.image is None and first.email_verified is None


def test_auth_user_records_take_the_full_name_else_the_username():
    User = get_user_model()
    named = adapter.to_record(User(pk=1, username="sam", first_name="Sam", last_name="Vimes"))
    bare = adapter.to_record(User(pk=2, username="nobby", email=""))
    assert (named.id, named.name, named.email) == ("1", "Sam Vimes", None)
    assert (bare.name, bare.image, bare.email_verified) == ("nobby", None, None)


def test_get_user_with_non_numeric_id_is_none():
    assert adapter.get_user("not-a-number") is None


def test_get_session_and_user_is_one_query(django_assert_num_queries):
    user = get_user_model().objects.create_user("q")
    adapter.create_session(
        AdapterSession(session_token="tok", user_id=str(user.pk), expires=timezone.now())
    )
    with django_assert_num_queries(1):
        session, found = adapter.get_session_and_user("tok")
    assert found.instance == user and session.user_id == str(user.pk)


def test_user_and_account_are_created_together_or_not_at_all():
    existing = get_user_model().objects.create_user("owner")
    Account.objects.create(
        user=existing, type="oauth", provider="example", provider_account_id="taken"
    )
    users_before = get_user_model().objects.count()
    with pytest.raises(IntegrityError):
        adapter.create_user_and_link_account(
            {"email": "new@example.com", "name": "New"},
            AdapterAccount(
                user_id="", type="oauth", provider="example", provider_account_id="taken"
            ),
        )
    assert get_user_model().objects.count() == users_before
    assert not get_user_model().objects.filter(email="new@example.com").exists()


def test_user_and_account_created_together():
    user, account = adapter.create_user_and_link_account(
        {"email": "both@example.com"},
        {"userId": "", "type": "oidc", "provider": "example", "providerAccountId": "p1"},
    )
    assert account.user_id == user.id
    assert adapter.get_user_by_account("example", "p1").id == user.id


def test_update_account_replaces_tokens():
    user = get_user_model().objects.create_user("tok")
    adapter.link_account(
        AdapterAccount(
            user_id=str(user.pk),
            type="oauth",
            provider="gh",
            provider_account_id="1",
            access_token="old",
            extra={"foo": 1},
        )
    )
    adapter.update_account(
        AdapterAccount(
            user_id=str(user.pk),
            type="oauth",
            provider="gh",
            provider_account_id="1",
            access_token="new",
            refresh_token="r",
        )
    )
    account = adapter.get_account("1", "gh")
    assert account.access_token == "new" and account.refresh_token == "r"


@pytest.mark.django_db(transaction=True)
def test_concurrent_redemption_gives_the_token_to_exactly_one_caller():
    expires = timezone.now() + timedelta(hours=1)
    threads_count = 16
    rounds = 10
    for round_no in range(rounds):
        token = f"race-{round_no}"
        adapter.create_verification_token(
            {"identifier": "race@example.com", "token": token, "expires": expires}
        )
        barrier = threading.Barrier(threads_count)
        winners: list[object] = []
        errors: list[BaseException] = []

        def redeem(token=token, barrier=barrier, winners=winners, errors=errors):
            try:
                barrier.wait()
                result = adapter.use_verification_token("race@example.com", token)
                if result is not None:
                    winners.append(result)
            except BaseException as exc:  # reported below, never swallowed
                errors.append(exc)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=redeem) for _ in range(threads_count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert len(winners) == 1, f"round {round_no}: {len(winners)} callers got the token"
    assert not VerificationToken.objects.exists()


def test_database_matches_the_environment():
    """CI sets WEBAUTH_TEST_POSTGRES or WEBAUTH_TEST_MARIADB; then the suite must really
    run on that server, else on SQLite."""
    import os

    if os.environ.get("WEBAUTH_TEST_POSTGRES"):
        assert connection.vendor == "postgresql"
    elif os.environ.get("WEBAUTH_TEST_MARIADB"):
        assert connection.vendor == "mysql" and connection.mysql_is_mariadb
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@character_set_database, @@collation_database")
            assert cursor.fetchone() == ("utf8mb4", "utf8mb4_unicode_ci")
            # A case-insensitive collation: the suite runs where "A" = "a" in SQL.
            cursor.execute("SELECT 'AbC' = 'abc'")
            assert cursor.fetchone() == (1,)
            # USE_TZ with date functions (the admin's date hierarchy) needs the
            # server's time zone tables: mariadb-tzinfo-to-sql /usr/share/zoneinfo
            # | mariadb -u root mysql (.ci/run loads them).
            cursor.execute("SELECT CONVERT_TZ('2020-01-01 12:00:00', 'UTC', 'Europe/Paris')")
            assert cursor.fetchone()[0] is not None, "time zone tables are not loaded"
    else:
        assert settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")
        assert connection.vendor == "sqlite"


def test_session_lookup_is_compiled_once_and_matches_the_orm():
    from webauth.adapters.django import _session_lookup

    user = get_user_model().objects.create_user("fast", email="fast@example.com", first_name="F")
    adapter.create_session(
        AdapterSession(
            session_token="fast-token",
            user_id=str(user.pk),
            expires=timezone.now() + timedelta(days=1),
            ip_address="10.1.2.3",
        )
    )
    lookup = _session_lookup("default", settings.AUTH_USER_MODEL)
    assert lookup is not None  # the fast path is used on this database
    fast = lookup.fetch(token_hash("fast-token"))
    orm = Session.objects.select_related("user").get(token_hash=token_hash("fast-token"))
    for field in Session._meta.concrete_fields:
        assert getattr(fast, field.attname) == getattr(orm, field.attname), field.name
    for field in get_user_model()._meta.concrete_fields:
        assert getattr(fast.user, field.attname) == getattr(orm.user, field.attname), field.name
    assert lookup.fetch(token_hash("no-such-token")) is None


def test_user_lookup_is_compiled_and_matches_the_orm():
    from webauth.adapters._compiled import _user_lookup
    from webauth.conf import get_config
    from webauth.state import load_user as _load_user

    user = get_user_model().objects.create_user("quick", email="q@example.com", first_name="Q")
    model = get_user_model()
    assert _user_lookup("default", model._meta.label) is not None
    loaded = _load_user(get_config(), str(user.pk))
    orm = model.objects.get(pk=user.pk)
    for field in model._meta.concrete_fields:
        assert getattr(loaded, field.attname) == getattr(orm, field.attname), field.name
    for bad in ("x", "1.5", str(2**70), "-" + str(2**70), ""):
        assert _load_user(get_config(), bad) is None


def test_account_lookups_compare_the_provider_account_id_exactly():
    """Provider account ids are case-sensitive strings (an OIDC ``sub``); on MariaDB's
    case-insensitive collations SQL matches "AbC" = "abc", which must not sign the
    holder of one id in as the user linked to the other."""
    owner = get_user_model().objects.create_user("case-owner")
    adapter.link_account(
        AdapterAccount(
            user_id=str(owner.pk),
            type="oidc",
            provider="example",
            provider_account_id="AbC-é",
            access_token="owner-token",
        )
    )
    for other in ("abc-é", "ABC-É", "AbC-e", "AbC-é "):
        assert adapter.get_user_by_account("example", other) is None, other
        assert adapter.get_account(other, "example") is None, other
        updated = adapter.update_account(
            AdapterAccount(
                user_id=str(owner.pk),
                type="oidc",
                provider="example",
                provider_account_id=other,
                access_token="intruder-token",
            )
        )
        assert updated is None, other
        assert adapter.unlink_account("example", other) is None, other
    assert adapter.get_user_by_account("example", "AbC-é").id == str(owner.pk)
    assert adapter.get_account("AbC-é", "example").access_token == "owner-token"


def test_provider_account_ids_that_differ_only_in_case_are_two_accounts():
    # The unique (provider, provider_account_id) constraint is exact on every
    # database: on MariaDB it took "AbC" and "abc" for one account (migration 0008).
    one = get_user_model().objects.create_user("one")
    two = get_user_model().objects.create_user("two")
    for user, account_id in ((one, "AbC"), (two, "abc"), (two, "ÄbC"), (two, "AbC ")):
        adapter.link_account(
            AdapterAccount(
                user_id=str(user.pk),
                type="oidc",
                provider="example",
                provider_account_id=account_id,
            )
        )
    assert adapter.get_user_by_account("example", "AbC").id == str(one.pk)
    assert adapter.get_user_by_account("example", "abc").id == str(two.pk)
    with pytest.raises(IntegrityError):
        adapter.link_account(
            AdapterAccount(
                user_id=str(two.pk), type="oidc", provider="example", provider_account_id="AbC"
            )
        )


def test_a_wrong_code_costs_no_attempt_of_a_look_alike_addresses_grant():
    # The attempt is claimed with an UPDATE on the identifier: on MariaDB's
    # collations it also counted against "jöhn"'s grant for a wrong code of "john".
    _grant("jöhn@example.com", token="t-jöhn", code="c-jöhn")
    _grant("john@example.com", token="t-john", code="c-john")
    assert adapter.use_verification_code("john@example.com", "wrong", 5) is None
    attempts = {row.identifier: row.attempts for row in VerificationToken.objects.all()}
    assert attempts == {"jöhn@example.com": 0, "john@example.com": 1}
    # And either grant is redeemed by its own code only.
    assert adapter.use_verification_code("john@example.com", "c-jöhn", 5) is None
    assert adapter.use_verification_code("jöhn@example.com", "c-jöhn", 5) is not None


def test_identifier_columns_have_a_binary_collation_on_mariadb():
    from webauth.fields import ExactCharField, exact_collation

    if connection.vendor != "mysql":
        # SQLite's and PostgreSQL's default collations compare exactly: no change.
        assert exact_collation(connection) is None
        assert ExactCharField(max_length=10).db_parameters(connection)["collation"] is None
        return
    wanted = {
        ("webauth_account", "provider"),
        ("webauth_account", "provider_account_id"),
        ("webauth_verificationtoken", "identifier"),
        ("webauth_authenticator", "credential_id"),
        ("webauth_authenticator", "provider_account_id"),
        ("webauth_webauthnuserhandle", "handle"),
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name, collation_name FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name LIKE 'webauth%%'"
        )
        found = {(table, column): collation for table, column, collation in cursor.fetchall()}
    expected = "utf8mb4_nopad_bin" if connection.mysql_is_mariadb else "utf8mb4_0900_bin"
    assert {key: found[key] for key in wanted} == dict.fromkeys(wanted, expected)


def _grant(identifier, token="t-1", code="c-1", attempts=0):
    return adapter.replace_verification_token(
        VerificationTokenRecord(
            identifier=identifier,
            token=token,
            expires=timezone.now() + timedelta(hours=1),
            code=code,
            attempts=attempts,
        )
    )


@pytest.mark.django_db(transaction=True)
def test_racing_wrong_codes_compare_no_more_than_max_attempts(monkeypatch):
    # However many wrong codes arrive at once, only max_attempts of them are
    # ever compared with the grant's code: the attempt is claimed first.
    compared: list[str] = []
    lock = threading.Lock()
    original = hmac.compare_digest

    def counting(a, b):
        with lock:
            compared.append(b)
        return original(a, b)

    monkeypatch.setattr(django_adapter.hmac, "compare_digest", counting)
    for round_no in range(3):
        compared.clear()
        identifier = f"guess-{round_no}@example.com"
        _grant(identifier)
        results = race(
            [partial(adapter.use_verification_code, identifier, f"w{n}", 5) for n in range(50)]
        )
        assert results == [None] * 50
        assert len(compared) == 5, f"round {round_no}: {len(compared)} codes compared"
        assert not VerificationToken.objects.filter(identifier=identifier).exists()


@pytest.mark.django_db(transaction=True)
def test_racing_resends_and_codes_leave_one_grant_with_the_attempts_carried():
    for round_no in range(3):
        identifier = f"resend-{round_no}@example.com"
        _grant(identifier, "t-0", "c-0", attempts=2)
        resends = [partial(_grant, identifier, f"t-{n}", f"c-{n}") for n in range(1, 11)]
        codes = [
            partial(adapter.use_verification_code, identifier, f"w{n}", 1000) for n in range(20)
        ]
        calls = [*resends, *codes]
        random.Random(round_no).shuffle(calls)
        race(calls)
        rows = list(VerificationToken.objects.filter(identifier=identifier))
        assert len(rows) == 1, f"round {round_no}: {len(rows)} grants survived"
        # The first grant's two and each of the 20 wrong codes, whichever grant
        # it was counted on: the resends queue with the codes and carry them.
        assert rows[0].attempts == 22


# -- update_user writes only what it was given (issue 26's fleet run found a lost update) ---


def test_update_user_writes_only_the_given_columns(monkeypatch):
    from django.contrib.auth.hashers import make_password
    from django.test.utils import CaptureQueriesContext

    model = get_user_model()
    user = model.objects.create_user("lost", "lost@example.com", "old-password")
    adapter = DjangoAdapter()
    original = DjangoAdapter._apply

    def then_a_password_change_commits(self, obj, data, fields):
        changed = original(self, obj, data, fields)
        # Another request between the read and the write: a password reset.
        model.objects.filter(pk=obj.pk).update(password=make_password("new-password"))
        return changed

    monkeypatch.setattr(DjangoAdapter, "_apply", then_a_password_change_commits)
    with CaptureQueriesContext(connection) as queries:
        adapter.update_user({"id": str(user.pk), "name": "Lost Update"})
    user.refresh_from_db()
    assert user.first_name == "Lost" and user.last_name == "Update"
    assert user.check_password("new-password") and not user.check_password("old-password")
    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert updates and "password" not in updates[-1].split("WHERE")[0]


def test_update_user_with_nothing_the_model_has_writes_nothing(django_assert_num_queries):
    user = get_user_model().objects.create_user("quiet", "quiet@example.com", "pw")
    # Django's User has no email_verified column: an email sign-in's update is a read only.
    with django_assert_num_queries(1):
        DjangoAdapter().update_user({"id": str(user.pk), "emailVerified": None})
