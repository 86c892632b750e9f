"""manage.py webauth_addresses and webauth.addresses: non-canonical addresses and collisions.

Runs on the suite's database (SQLite, PostgreSQL, MariaDB with a case- and
accent-insensitive collation) with Django's auth.User, whose address column
is not unique; test_suite_passes_with_webauth_user_model runs the module again
under webauth.User (unique, exactly compared column), where exact duplicates
cannot be stored and those tests skip.
"""

import itertools
import math
from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webauth.addresses import (
    AccountAddress,
    Collision,
    FixResult,
    NonCanonicalAddress,
    UserAddress,
    audit,
    fix,
)
from webauth.models import Account

WEBAUTH_USER = settings.AUTH_USER_MODEL == "webauth.User"
_names = itertools.count()

# webauth.User's address column is unique: two users cannot store one value.
needs_duplicates = pytest.mark.skipif(
    WEBAUTH_USER, reason="the user model's address column is unique"
)


def make(email):
    """A user storing *email* exactly as given (no manager normalises it)."""
    model = get_user_model()
    field = model.get_email_field_name()
    fields = {field: email}
    if field != model.USERNAME_FIELD:
        fields[model.USERNAME_FIELD] = f"user{next(_names)}"
    return model._default_manager.create(**fields)


def stored(user):
    user.refresh_from_db()
    return getattr(user, get_user_model().get_email_field_name())


def email_account(user, address, provider="email", type="email"):
    return Account.objects.create(
        user=user, type=type, provider=provider, provider_account_id=address
    )


def run(*args):
    out = StringIO()
    call_command("webauth_addresses", *args, stdout=out)
    return out.getvalue()


def exit_status(*args):
    """The status the command would exit with (0 when it returns), and its stderr."""
    err = StringIO()
    try:
        call_command("webauth_addresses", *args, stdout=StringIO(), stderr=err)
    except SystemExit as exc:
        return exc.code, err.getvalue()
    return 0, err.getvalue()


# -- what the audit finds ---------------------------------------------------------------


@pytest.mark.django_db
def test_canonical_data_reports_nothing():
    alice = make("alice@example.com")
    make("jöhn@example.com")
    make("john@example.com")
    make("dup@xn--e1afmkfd.xn--p1ai")
    make("a.b+tag@example.com")
    make(None if WEBAUTH_USER else "")  # no address: skipped, not counted
    email_account(alice, "alice@example.com")

    with CaptureQueriesContext(connection) as queries:
        report = audit(batch_size=2)

    assert report.users_checked == 5
    assert report.accounts_checked == 1
    assert report.non_canonical == ()
    assert report.invalid == ()
    assert report.collisions == ()
    assert report.accounts == ()
    assert report.clean
    assert report.using == "default"
    assert report.user_model == settings.AUTH_USER_MODEL
    # Nothing to look for: one pass over the 5 addresses in pages of 2, and the GROUP BY.
    table = connection.ops.quote_name(get_user_model()._meta.db_table)
    reads = [q["sql"] for q in queries.captured_queries if f"FROM {table}" in q["sql"]]
    assert len(reads) == 3 + 1


@pytest.mark.django_db
def test_non_canonical_addresses_are_reported_with_their_canonical_form():
    mixed = make("Mixed@Example.COM")
    wide = make("\uff46\uff55\uff4c\uff4c@example.com")  # full-width "full"
    idn = make("uni@Пример.рф")
    spaced = make(" spaced@example.com ")
    accent = make("JÖHN@example.com")
    make("john@example.com")  # another mailbox than jöhn's: no collision
    make("ok@example.com")

    report = audit()

    assert report.non_canonical == (
        NonCanonicalAddress(mixed.pk, "Mixed@Example.COM", "mixed@example.com"),
        NonCanonicalAddress(wide.pk, "\uff46\uff55\uff4c\uff4c@example.com", "full@example.com"),
        NonCanonicalAddress(idn.pk, "uni@Пример.рф", "uni@xn--e1afmkfd.xn--p1ai"),
        NonCanonicalAddress(spaced.pk, " spaced@example.com ", "spaced@example.com"),
        NonCanonicalAddress(accent.pk, "JÖHN@example.com", "jöhn@example.com"),
    )
    assert report.fixable == report.non_canonical
    assert report.collisions == ()
    assert report.users_checked == 7
    assert not report.clean


@pytest.mark.django_db
def test_invalid_addresses_are_reported_and_blank_ones_skipped():
    words = make("not an address")
    two_ats = make("two@@example.com")
    hidden = make("eve\u200b@example.com")  # a zero-width space
    make("   ")
    make("fine@example.com")

    report = audit()

    assert report.invalid == (
        UserAddress(words.pk, "not an address"),
        UserAddress(two_ats.pk, "two@@example.com"),
        UserAddress(hidden.pk, "eve\u200b@example.com"),
    )
    assert report.users_checked == 4
    assert report.non_canonical == ()
    # Nothing to rewrite them to: they do not make the data unclean.
    assert report.clean


@needs_duplicates
@pytest.mark.django_db
def test_exact_duplicates_collide():
    first = make("same@example.com")
    second = make("same@example.com")
    third = make("Dupe@Example.com")
    fourth = make("Dupe@Example.com")
    make("other@example.com")
    make("no address")
    make("no address")  # the same non-address twice: invalid, not a collision

    report = audit()

    assert report.collisions == (
        Collision(
            "dupe@example.com",
            (UserAddress(third.pk, "Dupe@Example.com"), UserAddress(fourth.pk, "Dupe@Example.com")),
        ),
        Collision(
            "same@example.com",
            (UserAddress(first.pk, "same@example.com"), UserAddress(second.pk, "same@example.com")),
        ),
    )
    assert report.fixable == ()
    assert len(report.invalid) == 2


@pytest.mark.django_db
def test_canonical_forms_collide():
    upper = make("Alice@Example.com")
    lower = make("alice@example.com")
    unicode_domain = make("dup@пример.рф")
    punycode = make("dup@xn--e1afmkfd.xn--p1ai")
    bob_mixed = make("Bob@Example.com")
    bob_upper = make("BOB@example.com")  # no user holds bob@example.com itself
    safe = make("Safe@Example.com")

    report = audit()

    assert report.collisions == (
        Collision(
            "alice@example.com",
            (
                UserAddress(upper.pk, "Alice@Example.com"),
                UserAddress(lower.pk, "alice@example.com"),
            ),
        ),
        Collision(
            "bob@example.com",
            (
                UserAddress(bob_mixed.pk, "Bob@Example.com"),
                UserAddress(bob_upper.pk, "BOB@example.com"),
            ),
        ),
        Collision(
            "dup@xn--e1afmkfd.xn--p1ai",
            (
                UserAddress(unicode_domain.pk, "dup@пример.рф"),
                UserAddress(punycode.pk, "dup@xn--e1afmkfd.xn--p1ai"),
            ),
        ),
    )
    assert report.fixable == (NonCanonicalAddress(safe.pk, "Safe@Example.com", "safe@example.com"),)
    assert report.colliding == {
        upper.pk,
        lower.pk,
        unicode_domain.pk,
        punycode.pk,
        bob_mixed.pk,
        bob_upper.pk,
    }


@pytest.mark.django_db
def test_accented_and_plain_letters_are_two_mailboxes():
    # MariaDB's utf8mb4_unicode_ci says 'jöhn' = 'john' = 'JOHN': the audit must not.
    accented = make("jöhn@example.com")
    plain = make("john@example.com")
    upper = make("JOHN@example.com")
    upper_accented = make("JÖHN@example.org")
    lower_accented = make("jöhn@example.org")

    report = audit()

    assert report.collisions == (
        Collision(
            "john@example.com",
            (UserAddress(plain.pk, "john@example.com"), UserAddress(upper.pk, "JOHN@example.com")),
        ),
        Collision(
            "jöhn@example.org",
            (
                UserAddress(upper_accented.pk, "JÖHN@example.org"),
                UserAddress(lower_accented.pk, "jöhn@example.org"),
            ),
        ),
    )
    assert accented.pk not in report.colliding


@needs_duplicates
@pytest.mark.django_db
def test_accented_and_plain_duplicates_are_not_grouped():
    accented = make("jöhn@example.com")
    first = make("john@example.com")
    second = make("john@example.com")
    make("jöhn@example.org")
    make("john@example.org")

    report = audit()

    assert report.collisions == (
        Collision(
            "john@example.com",
            (UserAddress(first.pk, "john@example.com"), UserAddress(second.pk, "john@example.com")),
        ),
    )
    assert accented.pk not in report.colliding


@pytest.mark.django_db
def test_batches_smaller_than_the_table_find_everything():
    users = [
        make("Alice@Example.com"),
        make("plain@example.com"),
        make("alice@example.com"),
        make("bad address"),
        make("Pünktchen@Example.com"),
        make("x@Пример.рф"),
        make("last@example.com"),
    ]

    with CaptureQueriesContext(connection) as queries:
        report = audit(batch_size=2)

    assert report.users_checked == 7
    assert [row.pk for row in report.non_canonical] == [users[0].pk, users[4].pk, users[5].pk]
    assert report.invalid == (UserAddress(users[3].pk, "bad address"),)
    assert [c.canonical for c in report.collisions] == ["alice@example.com"]
    assert [row.canonical for row in report.fixable] == [
        "pünktchen@example.com",
        "x@xn--e1afmkfd.xn--p1ai",
    ]
    # The table was read in pages of 2 rows, never at once: 7 rows, 4 pages,
    # twice (the second pass finds who holds alice@example.com).
    table = connection.ops.quote_name(get_user_model()._meta.db_table)
    reads = [q["sql"] for q in queries.captured_queries if f"FROM {table}" in q["sql"]]
    pages = [sql for sql in reads if "LIMIT" in sql]
    assert len(pages) == 2 * math.ceil(7 / 2)
    assert all("LIMIT 2" in sql for sql in pages)
    # And once more: the GROUP BY that finds exact duplicates (it returns only those).
    assert [sql for sql in reads if "LIMIT" not in sql] == [
        sql for sql in reads if "GROUP BY" in sql and "HAVING" in sql
    ]
    assert len(reads) == 9


def test_batch_size_must_be_positive():
    with pytest.raises(ValueError, match="batch_size"):
        audit(batch_size=0)


# -- email accounts ----------------------------------------------------------------------


@pytest.mark.django_db
def test_email_account_ids_that_are_not_canonical():
    user = make("carol@example.com")
    other = make("dave@example.com")
    mixed = email_account(user, "Carol@Example.com")
    # A non-canonical id whose canonical form another account already has.
    email_account(other, "dave@example.com")
    taken = email_account(other, "DAVE@example.com")
    # Two non-canonical ids of one canonical form clash with each other.
    one = email_account(user, "Erin@Example.com")
    two = email_account(other, "ERIN@example.com")
    # The same id at another provider is no clash.
    email_account(user, "frank@example.com", provider="resend")
    elsewhere = email_account(other, "Frank@Example.com")
    junk = email_account(user, "not an address")
    # Not an email account: an OAuth id is opaque and stays as it is.
    email_account(user, "Carol@Example.com", provider="github", type="oauth")

    report = audit()

    assert report.accounts_checked == 8
    by_pk = {account.pk: account for account in report.accounts}
    assert by_pk[mixed.pk] == AccountAddress(
        mixed.pk, user.pk, "email", "Carol@Example.com", "carol@example.com", ()
    )
    dave = Account.objects.get(provider_account_id="dave@example.com").pk
    assert by_pk[taken.pk].clashes_with == (dave,)
    assert by_pk[one.pk].clashes_with == (two.pk,)
    assert by_pk[two.pk].clashes_with == (one.pk,)
    assert by_pk[elsewhere.pk].clashes_with == ()
    assert by_pk[junk.pk].canonical is None
    assert set(by_pk) == {mixed.pk, taken.pk, one.pk, two.pk, elsewhere.pk, junk.pk}
    assert [a.pk for a in report.fixable_accounts] == [mixed.pk, elsewhere.pk]
    assert not report.clean


# -- fix ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_fix_rewrites_the_safe_ones_and_leaves_collisions():
    safe = make("Safe@Example.com")
    wide = make("\uff57\uff49\uff44\uff45@example.com")
    idn = make("uni@пример.рф")
    accented = make("JÖHN@example.com")
    make("john@example.com")
    upper = make("Alice@Example.com")
    lower = make("alice@example.com")
    unicode_domain = make("dup@пример.рф")
    punycode = make("dup@xn--e1afmkfd.xn--p1ai")
    invalid = make("not an address")
    account = email_account(safe, "Safe@Example.com")
    clashing = email_account(lower, "ALICE@example.com")
    email_account(upper, "alice@example.com")

    result = fix(audit())

    assert result == FixResult(
        users_rewritten=4,
        users_in_collisions=2,
        users_taken=0,
        users_changed=0,
        accounts_rewritten=1,
        accounts_clashing=1,
        accounts_changed=0,
    )
    assert stored(safe) == "safe@example.com"
    assert stored(wide) == "wide@example.com"
    assert stored(idn) == "uni@xn--e1afmkfd.xn--p1ai"
    assert stored(accented) == "jöhn@example.com"
    # Collisions and what is no address are untouched.
    assert stored(upper) == "Alice@Example.com"
    assert stored(lower) == "alice@example.com"
    assert stored(unicode_domain) == "dup@пример.рф"
    assert stored(punycode) == "dup@xn--e1afmkfd.xn--p1ai"
    assert stored(invalid) == "not an address"
    account.refresh_from_db()
    clashing.refresh_from_db()
    assert account.provider_account_id == "safe@example.com"
    assert clashing.provider_account_id == "ALICE@example.com"

    again = audit()
    assert again.fixable == ()
    assert [row.pk for row in again.non_canonical] == [upper.pk, unicode_domain.pk]
    assert [c.canonical for c in again.collisions] == [
        "alice@example.com",
        "dup@xn--e1afmkfd.xn--p1ai",
    ]
    assert [a.pk for a in again.accounts] == [clashing.pk]
    assert fix(again).users_rewritten == 0


@pytest.mark.django_db
def test_fix_leaves_an_address_that_changed_since_the_audit():
    user = make("Changed@Example.com")
    report = audit()
    model = get_user_model()
    model._default_manager.filter(pk=user.pk).update(
        **{model.get_email_field_name(): "CHANGED@example.com"}
    )

    result = fix(report)

    assert (result.users_rewritten, result.users_changed) == (0, 1)
    assert stored(user) == "CHANGED@example.com"


@pytest.mark.django_db
def test_fix_leaves_an_address_another_user_took_since_the_audit():
    user = make("Taken@Example.com")
    report = audit()
    newcomer = make("taken@example.com")

    result = fix(report)

    assert (result.users_rewritten, result.users_taken) == (0, 1)
    assert stored(user) == "Taken@Example.com"
    assert stored(newcomer) == "taken@example.com"


@pytest.mark.django_db
def test_fix_leaves_an_account_id_that_another_account_took_or_that_changed():
    user = make("gina@example.com")
    taken = email_account(user, "Gina@Example.com")
    changed = email_account(user, "Hal@Example.com")
    report = audit()
    email_account(user, "gina@example.com")
    Account.objects.filter(pk=changed.pk).update(provider_account_id="HAL@example.com")

    result = fix(report)

    assert (result.accounts_rewritten, result.accounts_clashing, result.accounts_changed) == (
        0,
        1,
        1,
    )
    taken.refresh_from_db()
    changed.refresh_from_db()
    assert taken.provider_account_id == "Gina@Example.com"
    assert changed.provider_account_id == "HAL@example.com"


# -- the command -------------------------------------------------------------------------


@pytest.mark.django_db
def test_command_reports_and_says_what_to_do():
    upper = make("Alice@Example.com")
    lower = make("alice@example.com")
    safe = make("Safe@Example.com")
    spaced = make("trail@example.com ")
    bad = make("eve\u200b@example.com")
    account = email_account(lower, "ALICE@example.com")
    label = get_user_model()._meta.label
    field = get_user_model().get_email_field_name()

    output = run()

    assert output == (
        f"Checked 5 user addresses ({label}.{field}) and 1 email account in database 'default'.\n"
        "Non-canonical addresses: 3 (2 in no collision, 1 in collisions)\n"
        "Collisions: 1 (2 users)\n"
        "Invalid addresses: 1 (--verbosity 2 lists them)\n"
        "Non-canonical email account ids: 1 (1 free, 0 clashing with another account)\n"
        "\n"
        "Collision: alice@example.com is the address of:\n"
        f"  user {upper.pk}: Alice@Example.com\n"
        f"  user {lower.pk}: alice@example.com\n"
        "\n"
        "Non-canonical addresses (user: stored -> canonical):\n"
        f"  user {upper.pk}: Alice@Example.com -> alice@example.com (in a collision)\n"
        f"  user {safe.pk}: Safe@Example.com -> safe@example.com\n"
        f"  user {spaced.pk}: 'trail@example.com ' -> trail@example.com\n"
        "\n"
        "Non-canonical email account ids:\n"
        f"  account {account.pk} (provider email, user {lower.pk}): "
        "ALICE@example.com -> alice@example.com\n"
        "\n"
        "Run with --fix to rewrite the 2 user addresses and 1 email account id that are in no "
        "collision.\n"
        "Resolve each collision in the admin: give every user of it but one another address "
        "(or merge the users), then run this command again.\n"
    )
    verbose = run("--verbosity", "2")
    hidden = repr("eve\u200b@example.com")  # the zero-width space shown, not hidden
    assert hidden == "'eve\\u200b@example.com'"
    title = "Invalid addresses (webauth never finds these users by address):"
    assert f"{title}\n  user {bad.pk}: {hidden}\n" in verbose
    assert stored(safe) == "Safe@Example.com"  # without --fix nothing changes

    fixed = run("--fix")
    assert (
        "Rewrote 2 user addresses and 1 email account id to the canonical form.\n"
        "Left 1 user address in collisions.\n"
    ) in fixed
    assert "--fix to rewrite" not in fixed
    assert stored(safe) == "safe@example.com"
    assert stored(spaced) == "trail@example.com"
    assert stored(upper) == "Alice@Example.com"


@pytest.mark.django_db
def test_command_on_clean_data():
    make("alice@example.com")

    assert run() == (
        f"Checked 1 user address ({get_user_model()._meta.label}."
        f"{get_user_model().get_email_field_name()}) and 0 email accounts in database "
        "'default'.\n"
        "Non-canonical addresses: 0 (0 in no collision, 0 in collisions)\n"
        "Collisions: 0 (0 users)\n"
        "Invalid addresses: 0\n"
        "Non-canonical email account ids: 0 (0 free, 0 clashing with another account)\n"
        "\n"
        "Every address is in canonical form: nothing to do.\n"
    )
    assert run("--verbosity", "0") == ""


@pytest.mark.django_db
def test_command_lists_fifty_rows_unless_verbose():
    users = [make(f"User{i:02}@Example.com") for i in range(53)]

    output = run()
    verbose = run("--verbosity", "2")

    listed = [line for line in output.splitlines() if line.startswith("  user ")]
    assert len(listed) == 50
    assert listed[-1] == f"  user {users[49].pk}: User49@Example.com -> user49@example.com"
    assert "  ... and 3 more (--verbosity 2 lists them all)" in output
    assert len([line for line in verbose.splitlines() if line.startswith("  user ")]) == 53
    assert "more (--verbosity 2" not in verbose


@pytest.mark.django_db
def test_check_exit_status():
    failed = (1, "Collisions or non-canonical addresses remain (--check).\n")
    make("alice@example.com")
    assert exit_status("--check") == (0, "")

    safe = make("Safe@Example.com")
    assert exit_status("--check") == failed
    assert stored(safe) == "Safe@Example.com"
    # --fix leaves nothing behind: the check passes.
    assert exit_status("--fix", "--check") == (0, "")
    assert exit_status("--check") == (0, "")

    make("Alice@Example.com")
    assert exit_status("--fix", "--check") == failed  # the collision remains
    assert exit_status("--check", "--verbosity", "0") == failed
    assert exit_status() == (0, "")  # without --check, problems are no failure


@pytest.mark.django_db
def test_check_fails_for_a_clashing_account_alone():
    user = make("ivy@example.com")
    kept = email_account(user, "ivy@example.com")
    clashing = email_account(user, "IVY@example.com")

    assert exit_status("--fix", "--check")[0] == 1
    output = run("--fix")
    assert (
        f"  account {clashing.pk} (provider email, user {user.pk}): IVY@example.com -> "
        f"ivy@example.com (clashes with account {kept.pk})\n"
    ) in output
    assert "Left 1 account id clashing with another account.\n" in output
    assert "For each clashing email account, delete the one that is no longer used" in output
    clashing.refresh_from_db()
    assert clashing.provider_account_id == "IVY@example.com"


@pytest.mark.django_db
def test_invalid_addresses_do_not_fail_the_check():
    make("not an address")
    assert exit_status("--check") == (0, "")
    assert run().endswith(
        "\nNo collision and no non-canonical address remain. The users whose address is "
        "invalid are never found by it: correct it in the admin where it matters.\n"
    )


def test_unknown_database_alias():
    with pytest.raises(CommandError, match="Unknown database alias 'nope'"):
        run("--database", "nope")


@pytest.mark.parametrize("value", ["0", "-3"])
def test_batch_size_must_be_a_positive_integer(value):
    with pytest.raises(CommandError, match="--batch-size must be a positive integer"):
        run("--batch-size", value)


def test_batch_size_must_be_a_number():
    with pytest.raises(CommandError, match="--batch-size: invalid int value: 'abc'"):
        run("--batch-size", "abc")


@pytest.mark.django_db
def test_batch_size_option_is_used():
    make("A@Example.com")
    make("B@Example.com")
    make("C@Example.com")
    with CaptureQueriesContext(connection) as queries:
        run("--batch-size", "1")
    assert sum("LIMIT 1" in q["sql"] for q in queries.captured_queries) >= 4


# MariaDB and MySQL commit DDL at once (no rollback at the end of the test): the
# table is renamed back explicitly, and the rows are flushed after the test.
@pytest.mark.django_db(transaction=True)
def test_database_error_is_a_clear_command_error():
    make("Safe@Example.com")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE webauth_account RENAME TO webauth_account_gone")
    try:
        with pytest.raises(
            CommandError, match=r"(?s)Reading the addresses failed: .*Nothing was changed"
        ):
            run("--fix")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE webauth_account_gone RENAME TO webauth_account")


# -- under webauth.User ------------------------------------------------------------------
