"""Authenticator.credential_id_hash: the unique, indexed SHA-256 of the credential id.

A unique index on the 1400-character ``credential_id`` itself is refused by MySQL
(and accepted by MariaDB only through a hidden hash index, with mysql.W003), and
it compares ids case-insensitively under MariaDB's and MySQL's usual collations,
where base64url ids are case-sensitive. The fixed-length hex digest carries the
uniqueness and the lookups instead; ``credential_id`` keeps the full value.

Existing rows get their hash before the column becomes NOT NULL and unique.
A database migrated before 0002 was changed still has 0002's old unique index
on ``credential_id``: it is removed here. Reversing drops the hash column.
"""

import hashlib

from django.db import migrations, models

BATCH = 1000


def fill_credential_id_hash(apps, schema_editor):
    Authenticator = apps.get_model("webauth", "Authenticator")
    rows = Authenticator.objects.using(schema_editor.connection.alias)
    last_pk = None
    while True:
        batch = rows.order_by("pk").only("pk", "credential_id")
        if last_pk is not None:
            batch = batch.filter(pk__gt=last_pk)
        batch = list(batch[:BATCH])
        if not batch:
            return
        for row in batch:
            row.credential_id_hash = hashlib.sha256(row.credential_id.encode()).hexdigest()
        rows.bulk_update(batch, ["credential_id_hash"])
        last_pk = batch[-1].pk


def drop_old_credential_id_unique(apps, schema_editor):
    """Remove the unique index 0002 used to create on credential_id, where it exists.

    0002 no longer creates it (MySQL refuses it), so only databases migrated
    with the earlier 0002 have it. The schema editor removes it the way each
    backend needs (SQLite rebuilds the table).
    """
    Authenticator = apps.get_model("webauth", "Authenticator")
    table = Authenticator._meta.db_table
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    if not any(
        c["unique"] and not c["primary_key"] and c["columns"] == ["credential_id"]
        for c in constraints.values()
    ):
        return
    new_field = Authenticator._meta.get_field("credential_id")
    old_field = new_field.clone()
    old_field._unique = True
    old_field.set_attributes_from_name("credential_id")
    old_field.model = Authenticator
    schema_editor.alter_field(Authenticator, old_field, new_field)


class Migration(migrations.Migration):
    dependencies = [
        ("webauth", "0002_account_session_token_authenticator"),
    ]

    operations = [
        migrations.AddField(
            model_name="authenticator",
            name="credential_id_hash",
            field=models.CharField(
                editable=False, max_length=64, null=True, verbose_name="credential id hash"
            ),
        ),
        migrations.RunPython(fill_credential_id_hash, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="authenticator",
            name="credential_id_hash",
            field=models.CharField(
                editable=False, max_length=64, unique=True, verbose_name="credential id hash"
            ),
        ),
        # Not atomic: MySQL and MariaDB cannot run DDL inside a transaction.
        migrations.RunPython(
            drop_old_credential_id_unique, migrations.RunPython.noop, atomic=False
        ),
    ]
