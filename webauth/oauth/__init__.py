"""The OAuth 2 / OpenID Connect flow, built on Authlib's client.

``client`` makes the HTTP session, ``discovery`` fetches and caches provider
metadata and keys, ``checks`` keeps PKCE / state / nonce in short-lived
encrypted cookies, ``idtoken`` validates ID tokens, ``flow`` runs the two
routes, and ``accounts`` decides which user an account signs in.
"""
