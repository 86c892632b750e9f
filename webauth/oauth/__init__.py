"""OAuth 2 / OpenID Connect protocol helpers, built on Authlib's client.

``client`` makes the HTTP sessions, ``discovery`` fetches and caches provider
metadata and keys, ``checks`` keeps PKCE / state / nonce in short-lived
encrypted cookies, ``idtoken`` validates ID tokens, and ``tokens`` hands the
project a fresh access token (:func:`webauth.get_access_token`). The sign-in
flow that uses them is :mod:`webauth.flows.oauth`.
"""
