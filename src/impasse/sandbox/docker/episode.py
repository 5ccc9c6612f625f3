"""Open a Docker episode for (task instance, condition): the Docker twin of
``impasse.conditions.episode.open_episode``, with a reason when the engine cannot realise it."""

from __future__ import annotations

from impasse.conditions.cards import card
from impasse.conditions.episode import NotApplicable, applies
from impasse.sandbox.docker.faults import facts_for, make_faults, supports
from impasse.sandbox.local import Limits
from impasse.tasks.image import load_image
from impasse.tasks.layer import instance_layer


class Unsupported(NotApplicable):
    """This engine cannot enforce what the condition needs; ``str()`` says why."""


def open_docker_episode(backend, inst, condition: str, limits: Limits | None = None):
    c = card(condition)
    image = load_image(inst.image)
    if image is None:
        raise FileNotFoundError(f"task image {inst.image} is not built; run `impasse tasks build {inst.package}"
                                f"=={inst.package_version}`")
    if not applies(c, inst, image):
        raise NotApplicable(f"{condition} does not apply to {inst.instance_id} ({c.requires} required)")
    if reason := supports(c.fault, backend):
        raise Unsupported(f"{condition} on the Docker backend: {reason}")
    layer = instance_layer(inst, image, fixed=c.fault["kind"] == "already_fixed")
    return backend.create([layer, image.layer], make_faults(c.fault, facts_for(inst, image)), limits)
