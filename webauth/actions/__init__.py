"""One module per route action, as in Auth.js's ``lib/actions``."""
