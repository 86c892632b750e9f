"""Database sessions say how their user proved who they are (webauth.mfa): ``amr`` and ``mfa_at``.

Two nullable or defaulted columns; existing sessions keep working and say nothing.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webauth", "0009_second_factor"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="amr",
            field=models.CharField(
                blank=True, default="", editable=False, max_length=64, verbose_name="methods"
            ),
        ),
        migrations.AddField(
            model_name="session",
            name="mfa_at",
            field=models.DateTimeField(
                blank=True, editable=False, null=True, verbose_name="second factor proven"
            ),
        ),
    ]
