"""How a phase of an episode ends, as a few named exceptions (the loop's whole control flow).

A tool raises :class:`Completed` or :class:`Escalated`; the loop raises :class:`StepLimitReached`
or :class:`SwitchPoint` (a step the run chose in advance, e.g. for a model handoff); a model that
cannot go on raises :class:`AgentError`. :class:`EndpointError` is different in kind: the model
*service* failed (unreachable, refused the key, kept failing); it is the harness's problem, not
the agent's, so the episode is recorded as a harness error and ``--resume`` runs it again.
"""

from __future__ import annotations

from typing import Any


class Completed(Exception):  # noqa: N818 - control flow, not an error
    def __init__(self, verified: bool, summary: str) -> None:
        super().__init__(summary)
        self.verified, self.summary = verified, summary


class Escalated(Exception):  # noqa: N818
    def __init__(self, ticket: Any, raw: dict[str, Any]) -> None:
        super().__init__("escalated")
        self.ticket, self.raw = ticket, raw


class StepLimitReached(Exception):  # noqa: N818
    pass


class SwitchPoint(Exception):  # noqa: N818
    """The run asked for this phase to end at a fixed step."""


class AgentError(Exception):
    pass


class EndpointError(RuntimeError):
    """The model endpoint is unreachable, refuses the request, or kept failing after retries."""
