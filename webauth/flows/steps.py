"""The steps a sign-in may have to pass before its session: one list, asked by every flow.

Empty unless something registers a step (webauth's own second factor will, and
a project may add its own, such as accepting new terms): append a
:class:`~webauth.flows.outcomes.Step` to :data:`STEPS` from an app's
``ready()``. No flow changes: each one's sign-in goes through
:func:`webauth.flows.signin.complete`, which asks :func:`next_step`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..state import AuthState
    from .outcomes import SignedIn, Step

__all__ = ["STEPS", "next_step"]

#: The registered steps, asked in order.
STEPS: list[Step] = []


def next_step(state: AuthState, signed_in: SignedIn) -> Step | None:
    """The first registered step *signed_in* must pass now, or ``None``."""
    for step in STEPS:
        if step.needed(state, signed_in):
            return step
    return None
