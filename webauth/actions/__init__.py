"""One module per route, as in Auth.js's ``lib/actions``.

Each route is a function ``(state, provider_id) -> HttpResponse`` that
:mod:`webauth.views` calls with the request's :class:`~webauth.state.AuthState`.
A route checks what Auth.js checks at that point (CSRF, the provider), chooses
the flow for the provider's type (:func:`webauth.flows.flow_for`) and returns
its answer; the flows do the work.
"""
