"""How a model fails, as two named exceptions (the tools' own endings, ``Completed`` and
``Escalated``, live with the tools in :mod:`impasse.env.tools`).

:class:`AgentError`: the model cannot go on (it refused the request, kept replying without a tool
call): the episode ends as ``error``. :class:`EndpointError` is different in kind: the model
*service* failed (unreachable, refused the key, kept failing); it is the harness's problem, not
the agent's, so the episode is recorded as a harness error and ``--resume`` runs it again.
"""

from __future__ import annotations


class AgentError(Exception):
    pass


class EndpointError(RuntimeError):
    """The model endpoint is unreachable, refuses the request, or kept failing after retries."""
