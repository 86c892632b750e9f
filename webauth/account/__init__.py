"""The account center: where a signed-in user looks after their account.

Pages (each a template under ``webauth/account/`` that a project can override):

* **Overview** (``index``): the address and a line about each section;
* **Sessions**: the devices signed in (database sessions), each one signed out
  on its own, or all but this one ("sign out everywhere else"); under the JWT
  strategy, an explanation of why sessions live in the browsers;
* **Connections**: the OAuth providers, connected (start the provider's
  sign-in while signed in: its account is linked) and disconnected (never the
  last way in: the button is disabled, and says why);
* **Passkeys**: :func:`webauth.passkeys.passkeys_view` in the same frame;
* **Email**: the address and when it was verified, and changing it with a code
  sent to the new address (:mod:`webauth.account.email`);
* **Password** (with ``WEBAUTH["passwords"]["change"]``): changing the password,
  or setting one for a user who has none (:mod:`webauth.passwords.change`);
* **Security** (with ``WEBAUTH["mfa"]``): the second factor
  (:mod:`webauth.account.security`);
* **Re-authentication** (``reauthenticate``): where ``@reauth_required`` sends
  a session that signed in too long ago (:mod:`webauth.reauth`).

Route them with ``path("account/", include("webauth.account.urls"))``
(:mod:`webauth.account.urls`). The same sections are template tags for a
project's own pages: ``{% webauth_account_sessions %}``,
``{% webauth_account_connections %}``, ``{% webauth_account_passkeys %}``,
``{% webauth_account_email %}`` and ``{% webauth_account_password %}`` (their
forms post to these pages, which send the browser back). See ``docs/account.md``.
"""
