"""Admin pages for webauth's tables: revoke sessions, unlink accounts, remove passkeys.

:class:`PasskeyInline` lists a user's passkeys on the user's admin page: webauth's
own user admin has it, and a project's ``UserAdmin`` can add it to ``inlines``.
WebAuthn challenges and user handles are not shown: a challenge lives minutes and
means nothing to a person, a handle is an opaque random string.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import BaseUserCreationForm
from django.contrib.auth.forms import UserChangeForm as DjangoUserChangeForm
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from .conf import get_config
from .linked_accounts import LastSignInMethod, unlink
from .models import Account, Authenticator, Session, User, VerificationToken


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    """Database sessions; the token itself is never shown (only its hash is stored)."""

    list_display = ("user", "created_at", "updated_at", "expires", "ip_address", "user_agent")
    list_filter = ("expires", "created_at")
    search_fields = ("user__pk", "ip_address", "user_agent")
    list_select_related = ("user",)
    readonly_fields = ("user", "created_at", "updated_at", "expires", "ip_address", "user_agent")
    exclude = ("token_hash",)
    actions = ("revoke",)
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=_("Revoke the selected sessions (sign those devices out)"))
    def revoke(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        count, _unused = queryset.delete()
        self.message_user(
            request,
            ngettext("%(count)d session revoked.", "%(count)d sessions revoked.", count)
            % {"count": count},
            messages.SUCCESS,
        )


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    """Linked provider accounts; tokens are not displayed."""

    list_display = ("user", "provider", "provider_account_id", "type", "created_at", "updated_at")
    list_filter = ("provider", "type")
    search_fields = ("provider_account_id", "provider", "user__pk")
    list_select_related = ("user",)
    readonly_fields = (
        "user",
        "type",
        "provider",
        "provider_account_id",
        "created_at",
        "updated_at",
    )
    fields = (*readonly_fields, "scope", "expires_at")
    actions = ("unlink",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting would bypass the "never the last way to sign in" rule of unlink.
        return False

    @admin.action(description=_("Unlink the selected accounts"))
    def unlink(self, request: HttpRequest, queryset: QuerySet[Account]) -> None:
        count, kept = 0, []
        for account in queryset.select_related("user"):
            try:
                if unlink(account.user, account.provider, account.provider_account_id):
                    count += 1
            except LastSignInMethod:
                kept.append(str(account))
        self.message_user(
            request,
            ngettext("%(count)d account unlinked.", "%(count)d accounts unlinked.", count)
            % {"count": count},
            messages.SUCCESS,
        )
        if kept:
            self.message_user(
                request,
                _("Kept %(accounts)s: the only way those users can sign in.")
                % {"accounts": ", ".join(kept)},
                messages.WARNING,
            )


#: What a passkey's row shows: the name, when it was made and last used, and
#: whether it is synced (a multi-device credential, backed up).
PASSKEY_COLUMNS = (
    "name",
    "created_at",
    "last_used_at",
    "credential_device_type",
    "credential_backed_up",
)


@admin.register(Authenticator)
class AuthenticatorAdmin(admin.ModelAdmin):
    """Registered passkeys: shown read-only, removed through the adapter's rule."""

    list_display = ("user", *PASSKEY_COLUMNS, "backup_eligible", "counter")
    list_filter = ("credential_device_type", "credential_backed_up", "backup_eligible")
    search_fields = ("credential_id", "name", "user__pk")
    list_select_related = ("user",)
    ordering = ("user", "-created_at")
    readonly_fields = (
        "user",
        "name",
        "credential_id",
        "provider_account_id",
        "credential_public_key",
        "counter",
        "aaguid",
        "backup_eligible",
        "credential_backed_up",
        "credential_device_type",
        "transports",
        "created_at",
        "last_used_at",
    )
    actions = ("remove",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting would bypass the "never the last way to sign in" rule of remove.
        return False

    @admin.action(description=_("Remove the selected passkeys"))
    def remove(self, request: HttpRequest, queryset: QuerySet[Authenticator]) -> None:
        storage = get_config().storage
        count, kept = 0, []
        for passkey in queryset:
            try:
                if storage("delete_authenticator", str(passkey.user_id), passkey.credential_id):
                    count += 1
            except LastSignInMethod:
                kept.append(passkey.name or str(passkey))
        self.message_user(
            request,
            ngettext("%(count)d passkey removed.", "%(count)d passkeys removed.", count)
            % {"count": count},
            messages.SUCCESS,
        )
        if kept:
            self.message_user(
                request,
                _("Kept %(passkeys)s: the only way those users can sign in.")
                % {"passkeys": ", ".join(kept)},
                messages.WARNING,
            )


class PasskeyInline(admin.TabularInline):
    """A user's passkeys on the user's admin page (read-only; remove them from the
    passkeys list, which keeps a user's last way to sign in)."""

    model = Authenticator
    fields = PASSKEY_COLUMNS
    readonly_fields = PASSKEY_COLUMNS
    ordering = ("-created_at",)
    extra = 0
    can_delete = False
    show_change_link = True
    verbose_name = _("passkey")
    verbose_name_plural = _("passkeys")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(VerificationToken)
class VerificationTokenAdmin(admin.ModelAdmin):
    """Pending email sign-in grants (link and code stored hashed; shown for support,
    never editable). The hashes are never shown."""

    list_display = ("identifier", "expires", "is_expired", "attempts")
    search_fields = ("identifier",)
    readonly_fields = ("identifier", "expires", "attempts")
    exclude = ("token_hash", "code_hash")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(boolean=True, description=_("expired"))
    def is_expired(self, obj: VerificationToken) -> bool:
        return obj.expires <= timezone.now()


if settings.AUTH_USER_MODEL == "webauth.User":

    class UserCreationForm(BaseUserCreationForm):
        """Add a user by email and password."""

        class Meta:
            model = User
            fields = ("email",)

    class UserChangeForm(DjangoUserChangeForm):
        """Edit a webauth user."""

        class Meta:
            model = User
            fields = "__all__"

    @admin.register(User)
    class UserAdmin(DjangoUserAdmin):
        """The admin for webauth's own user model (email instead of username)."""

        add_form = UserCreationForm
        form = UserChangeForm
        inlines = (PasskeyInline,)

        ordering = ("email",)
        list_display = ("email", "name", "is_staff", "is_active", "date_joined")
        search_fields = ("email", "name")
        fieldsets = (
            (None, {"fields": ("email", "password")}),
            (_("Profile"), {"fields": ("name", "image", "email_verified")}),
            (
                _("Permissions"),
                {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")},
            ),
            (_("Important dates"), {"fields": ("last_login", "date_joined")}),
        )
        add_fieldsets = (
            (None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),
        )

        def get_inlines(self, request: HttpRequest, obj: Any = None) -> Any:
            # A user being added has no passkeys (and the add form posts no formset).
            return self.inlines if obj is not None else ()
