"""Identifier columns compare exactly on MariaDB and MySQL too (webauth.fields).

The address of ``webauth.User``, a provider account's provider and id, a
grant's identifier, a passkey's credential id and account id, and a user
handle get a binary collation there (``utf8mb4_nopad_bin`` on MariaDB,
``utf8mb4_0900_bin`` on MySQL 8): under the usual case- and accent-insensitive
collations a ``WHERE`` clause or a unique index took one for another. SQLite
and PostgreSQL already compare these columns exactly: nothing is run there.

No value is rewritten. Addresses stored in another spelling than webauth's
canonical one (``webauth.identity``) are reported, and fixed where that is
safe, by ``manage.py webauth_addresses`` (docs/addresses.md).
"""

from django.db import migrations

import webauth.fields


class AlterFieldOnMySQL(migrations.AlterField):
    """``AlterField`` whose only change to the database is the MariaDB/MySQL collation."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "mysql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "mysql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    dependencies = [
        ("webauth", "0007_unproven_email"),
    ]

    operations = [
        AlterFieldOnMySQL(
            model_name="account",
            name="provider",
            field=webauth.fields.ExactCharField(max_length=128, verbose_name="provider"),
        ),
        AlterFieldOnMySQL(
            model_name="account",
            name="provider_account_id",
            field=webauth.fields.ExactCharField(max_length=255, verbose_name="provider account id"),
        ),
        AlterFieldOnMySQL(
            model_name="authenticator",
            name="credential_id",
            field=webauth.fields.ExactCharField(max_length=1400, verbose_name="credential id"),
        ),
        AlterFieldOnMySQL(
            model_name="authenticator",
            name="provider_account_id",
            field=webauth.fields.ExactCharField(max_length=255, verbose_name="provider account id"),
        ),
        AlterFieldOnMySQL(
            model_name="user",
            name="email",
            field=webauth.fields.ExactEmailField(
                blank=True, max_length=254, null=True, unique=True, verbose_name="email address"
            ),
        ),
        AlterFieldOnMySQL(
            model_name="verificationtoken",
            name="identifier",
            field=webauth.fields.ExactCharField(max_length=320, verbose_name="identifier"),
        ),
        AlterFieldOnMySQL(
            model_name="webauthnuserhandle",
            name="handle",
            field=webauth.fields.ExactCharField(
                editable=False, max_length=86, unique=True, verbose_name="user handle"
            ),
        ),
    ]
