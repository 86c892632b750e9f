"""The test settings with webauth's own user model (``AUTH_USER_MODEL = "webauth.User"``)."""

from .settings import *  # noqa: F403

AUTH_USER_MODEL = "webauth.User"
