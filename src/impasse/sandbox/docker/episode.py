"""Open a Docker episode for (task instance, condition): the generic ``open_episode`` with the
Docker backend, and :class:`Unsupported` when the engine cannot realise the condition."""

from __future__ import annotations

from impasse.conditions.episode import NotApplicable, open_episode
from impasse.sandbox.base import Limits


class Unsupported(NotApplicable):
    """This engine cannot enforce what the condition needs; ``str()`` says why."""


def open_docker_episode(backend, inst, condition: str, limits: Limits | None = None):
    from impasse.conditions.cards import card

    if reason := backend.unsupported(card(condition).fault):
        raise Unsupported(f"{condition} on the Docker backend: {reason}")
    return open_episode(backend, inst, condition, limits)
