"""What the tests share: settings, URLs and views of the test project, helpers,
and the test OpenID provider (``idp``, ``oidc_helpers``, ``keys``). The in-memory
adapter whose methods are all ``async def`` is public: ``webauth.testing.memory``.

``user_model_flows`` is a suite that ``tests/test_models_user.py`` runs in a
subprocess under ``settings_user_model`` (``AUTH_USER_MODEL = "webauth.User"``).
"""
