"""Open an episode for (task instance, condition): the one place where tasks, cards and a
backend meet."""

from __future__ import annotations

from impasse.conditions.cards import BlockerCard, card
from impasse.conditions.faults import AlreadyFixed, NotApplicable, TaskFacts
from impasse.sandbox.base import Backend, Limits, Sandbox
from impasse.tasks.image import Image, load_image
from impasse.tasks.layer import instance_layer
from impasse.tasks.schema import TaskInstance

__all__ = ["NotApplicable", "applies", "open_episode", "task_image"]


def applies(c: BlockerCard, inst: TaskInstance, image: Image | None = None) -> bool:
    """Whether the condition can be applied to this task (see each card's ``requires``)."""
    if c.requires == "f2p_test_files":
        return any(t.split("::")[0] in inst.test_files for t in inst.FAIL_TO_PASS)
    if c.requires == "runtime_deps":
        image = image or task_image(inst)
        return bool(image.import_breaking_deps)
    return True


def task_image(inst: TaskInstance) -> Image:
    image = load_image(inst.image)
    if image is None:
        raise FileNotFoundError(f"task image {inst.image} is not built; run `impasse tasks build {inst.package}"
                                f"=={inst.package_version}`")
    return image


def open_episode(backend: Backend, inst: TaskInstance, condition: str, limits: Limits | None = None) -> Sandbox:
    c = card(condition)
    image = task_image(inst)
    if not applies(c, inst, image):
        raise NotApplicable(f"{condition} does not apply to {inst.instance_id} ({c.requires} required)")
    if reason := backend.unsupported(c.fault):
        raise NotApplicable(f"{condition} cannot run on the {backend.name} backend here: {reason}")
    from impasse.tasks.uselock import create_rebuilding

    fixed = isinstance(c.fault, AlreadyFixed)
    return create_rebuilding(backend, lambda: [instance_layer(inst, image, fixed=fixed), image.layer], [c.fault],
                             TaskFacts.of(image, inst), limits)
