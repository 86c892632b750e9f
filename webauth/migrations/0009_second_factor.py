"""The second factor (webauth.mfa): TOTP keys, recovery codes, trusted browsers, and
what a database session says of how its user proved who they are.

Three new tables (a recovery code's hash is hex, so the unique (user, hash) pair
compares exactly under any collation), and two columns on sessions (``amr`` and
``mfa_at``, empty for the sessions made before).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webauth", "0008_exact_identifiers"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
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
        migrations.CreateModel(
            name="SecondFactor",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("totp", "authenticator app")], max_length=16, verbose_name="kind"
                    ),
                ),
                (
                    "name",
                    models.CharField(blank=True, default="", max_length=100, verbose_name="name"),
                ),
                ("secret", models.TextField(editable=False, verbose_name="secret")),
                ("confirmed", models.BooleanField(default=False, verbose_name="confirmed")),
                (
                    "last_step",
                    models.BigIntegerField(
                        blank=True, editable=False, null=True, verbose_name="last time step"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "last_used_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="last used"),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="webauth_second_factors",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "second factor",
                "verbose_name_plural": "second factors",
            },
        ),
        migrations.CreateModel(
            name="TrustedBrowser",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "token_hash",
                    models.CharField(
                        editable=False, max_length=64, unique=True, verbose_name="token hash"
                    ),
                ),
                (
                    "user_agent",
                    models.CharField(blank=True, max_length=512, verbose_name="user agent"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("expires", models.DateTimeField(db_index=True, verbose_name="expires")),
                (
                    "last_used_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="last used"),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="webauth_trusted_browsers",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "trusted browser",
                "verbose_name_plural": "trusted browsers",
            },
        ),
        migrations.CreateModel(
            name="RecoveryCode",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "code_hash",
                    models.CharField(editable=False, max_length=64, verbose_name="code hash"),
                ),
                ("used_at", models.DateTimeField(blank=True, null=True, verbose_name="used")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="webauth_recovery_codes",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "recovery code",
                "verbose_name_plural": "recovery codes",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("user", "code_hash"), name="webauth_recovery_code_once"
                    )
                ],
            },
        ),
    ]
