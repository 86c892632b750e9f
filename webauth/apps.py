"""The app config: registers the system checks and the settings reload."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WebauthConfig(AppConfig):
    name = "webauth"
    verbose_name = _("Web authentication")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import setting_changed

        from . import checks  # noqa: F401  (registers the checks)
        from .conf import reset_config

        setting_changed.connect(reset_config, dispatch_uid="webauth.reset_config")
