"""The password's lifecycle around ``DjangoCredentials`` (docs/passwords.md).

Sign-up, reset, change and set, each off unless ``WEBAUTH["passwords"]`` turns
it on, built on webauth's email grants (a link and a code, bound to the browser
that asked), its rate limits and its sessions; a breached-password validator
for ``AUTH_PASSWORD_VALIDATORS``. Every path that gives a user a new password
ends in :func:`webauth.passwords.changed.password_changed`.
"""
