"""Django signals for webauth's events.

Each is sent with ``sender`` = the provider id (or ``None``) and the event's
message as keyword arguments (write receivers with ``**kwargs``: keys that a
flow does not have are left out). They are notifications for audit and logging:
a receiver that raises is logged and never breaks the sign-in.

=================  ==========================================================
signal             keyword arguments
=================  ==========================================================
``signed_in``      ``user``, ``account``, ``request``; OAuth adds ``profile``, ``is_new_user``
``signed_out``     ``session`` (database strategy) or ``token`` (jwt), ``request``
``user_created``   ``user``, ``request``
``user_updated``   ``user``, ``request``
``account_linked`` ``user``, ``account``, ``profile``, ``request``
``session_read``   ``session``, ``token`` (jwt strategy), ``request``
``second_factor``  ``user``, ``action``, ``request``; ``by`` (an admin's reset),
                   ``kind`` (``totp``/``webauthn``: the key added, removed or refused)
``signup``         ``user`` (``None`` when the address or username was taken:
                   its owner is mailed instead), ``email``, ``request``
``password_reset_requested``  ``user`` (``None`` for an unknown address or
                   username), ``identifier``, ``request``
``password_changed``  ``user``, ``how`` (``reset``, ``change`` or ``set``), ``request``
``access_token_minted``  ``claims`` (the token's, never the token), ``request``
``api_key_changed``  ``user_id``, ``key_id``, ``key_name`` (when made), ``action``, ``owner``
                     (an owner's key only)
                   (``created`` or ``revoked``), ``request``; never the key
=================  ==========================================================

One more is not an event: ``token_sessions_ended`` (``sender`` ``None``;
``sids``, ``user_id``, ``reason``: ``signout``, ``signout_everywhere``,
``password``, ``inactive``, ``deleted`` or ``revoked``) says that sessions access tokens were
minted for have ended, as the revocation feed will list them
(docs/tokens.md), for a project that pushes them to its services.
"""

from django.dispatch import Signal

__all__ = [
    "EVENT_SIGNALS",
    "access_token_minted",
    "account_linked",
    "api_key_changed",
    "password_changed",
    "password_reset_requested",
    "second_factor",
    "session_read",
    "signed_in",
    "signed_out",
    "signup",
    "token_sessions_ended",
    "user_created",
    "user_updated",
]

signed_in = Signal()
signed_out = Signal()
user_created = Signal()
user_updated = Signal()
account_linked = Signal()
session_read = Signal()
#: webauth's: a second factor was added, removed, reset by an admin, used up
#: (a recovery code), renewed (new recovery codes) or refused (``action``).
second_factor = Signal()
#: webauth's passwords (docs/passwords.md): a sign-up asked for, a reset asked
#: for, a password chosen (after a reset, changed or set in the account center).
signup = Signal()
password_reset_requested = Signal()
password_changed = Signal()
#: webauth's access tokens (docs/tokens.md): a token was minted for a session.
access_token_minted = Signal()
api_key_changed = Signal()
token_sessions_ended = Signal()

#: event name (as in ``WEBAUTH["events"]``) -> signal
EVENT_SIGNALS = {
    "sign_in": signed_in,
    "sign_out": signed_out,
    "create_user": user_created,
    "update_user": user_updated,
    "link_account": account_linked,
    "session": session_read,
    "second_factor": second_factor,
    "signup": signup,
    "password_reset_requested": password_reset_requested,
    "password_changed": password_changed,
    "access_token": access_token_minted,
    "api_key": api_key_changed,
}
