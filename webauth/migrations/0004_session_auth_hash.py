"""Session.auth_hash: the user's session auth hash at sign-in.

A database session whose stored hash no longer matches its user's (the password
changed) ends on its next read, as ``django.contrib.auth``'s sessions do.
Existing rows get an empty hash: they are read without that check until they
end. ``Session.created_at`` (already there) is the sign-in from which
``session.absolute_max_age`` counts.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webauth", "0003_authenticator_credential_id_hash"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="auth_hash",
            field=models.CharField(
                blank=True, editable=False, max_length=128, verbose_name="auth hash"
            ),
        ),
    ]
