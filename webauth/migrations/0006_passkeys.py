"""Passkeys: Authenticator.name, .aaguid and .backup_eligible; WebAuthnUserHandle;
WebAuthnChallenge.

Existing passkeys get an empty name and AAGUID and are taken as not backup
eligible. A user's handle is made at their next passkey registration. Challenges
are single-use server-side rows (found by their hash) that the purge deletes
once expired.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webauth", "0005_verificationtoken_code_hash_attempts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="WebAuthnChallenge",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "challenge_hash",
                    models.CharField(
                        editable=False, max_length=64, unique=True, verbose_name="challenge hash"
                    ),
                ),
                (
                    "ceremony",
                    models.CharField(
                        choices=[("register", "register"), ("authenticate", "authenticate")],
                        max_length=16,
                        verbose_name="ceremony",
                    ),
                ),
                (
                    "binding_hash",
                    models.CharField(editable=False, max_length=64, verbose_name="binding hash"),
                ),
                ("user_data", models.JSONField(blank=True, null=True, verbose_name="user data")),
                ("expires", models.DateTimeField(db_index=True, verbose_name="expires")),
            ],
            options={
                "verbose_name": "WebAuthn challenge",
                "verbose_name_plural": "WebAuthn challenges",
            },
        ),
        migrations.AddField(
            model_name="authenticator",
            name="aaguid",
            field=models.CharField(blank=True, default="", max_length=36, verbose_name="AAGUID"),
        ),
        migrations.AddField(
            model_name="authenticator",
            name="backup_eligible",
            field=models.BooleanField(default=False, verbose_name="backup eligible"),
        ),
        migrations.AddField(
            model_name="authenticator",
            name="name",
            field=models.CharField(blank=True, default="", max_length=100, verbose_name="name"),
        ),
        migrations.CreateModel(
            name="WebAuthnUserHandle",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "handle",
                    models.CharField(
                        editable=False, max_length=86, unique=True, verbose_name="user handle"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="webauth_user_handle",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "WebAuthn user handle",
                "verbose_name_plural": "WebAuthn user handles",
            },
        ),
    ]
