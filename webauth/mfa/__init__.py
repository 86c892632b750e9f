"""The second factor: TOTP keys and recovery codes, between the first factor and the session.

Off unless ``WEBAUTH["mfa"]["enabled"]`` (docs/mfa.md). The pieces, each a
module with one job:

- :mod:`webauth.mfa.totp`: RFC 6238 codes (``pyotp``) and the enrolment's QR
  code as inline SVG (``segno``);
- :mod:`webauth.mfa.recovery`: single-use recovery codes and their hashes;
- :mod:`webauth.mfa.factors`: a user's factors through the adapter (enrol,
  confirm, verify, remove), the TOTP key sealed with ``WEBAUTH["secret"]``.

A code is accepted at most once: the adapter raises the factor's last used
time step (``use_totp_step``) and spends a recovery code (``use_recovery_code``)
in one conditional write each, so two requests racing with one code cannot
both pass.
"""
