"""Browsers a user trusts with their second factor (webauth.mfa, ``mfa.trust_days``): a new table."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webauth", "0010_session_assurance"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
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
    ]
