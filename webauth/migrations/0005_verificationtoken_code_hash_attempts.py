"""VerificationToken.code_hash and .attempts: email sign-in codes.

One sign-in request is one row: the link token's hash, and now the one-time
code's hash (empty for link-only grants) and the count of wrong codes tried
against it. Existing rows are link-only grants with no failed attempts.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webauth", "0004_session_auth_hash"),
    ]

    operations = [
        migrations.AddField(
            model_name="verificationtoken",
            name="attempts",
            field=models.PositiveSmallIntegerField(default=0, verbose_name="failed code attempts"),
        ),
        migrations.AddField(
            model_name="verificationtoken",
            name="code_hash",
            field=models.CharField(
                blank=True, default="", editable=False, max_length=64, verbose_name="code hash"
            ),
        ),
    ]
