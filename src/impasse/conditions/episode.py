"""Open an episode for (task instance, condition): the one place where tasks, cards and the
sandbox meet."""

from __future__ import annotations

from impasse.conditions.cards import BlockerCard, card
from impasse.conditions.faults import make_faults, pick_dependency
from impasse.sandbox.local import Limits
from impasse.tasks.image import Image, load_image
from impasse.tasks.layer import instance_layer
from impasse.tasks.schema import TaskInstance


class NotApplicable(ValueError):
    """The condition cannot be applied to this task (e.g. no third-party dependency)."""


def applies(c: BlockerCard, inst: TaskInstance, image: Image | None = None) -> bool:
    if c.requires == "f2p_test_files":
        return any(t.split("::")[0] in inst.test_files for t in inst.FAIL_TO_PASS)
    if c.requires == "runtime_deps":
        image = image or load_image(inst.image)
        return bool(image and pick_dependency(inst, image))
    return True


def open_episode(backend, inst: TaskInstance, condition: str, limits: Limits | None = None):
    c = card(condition)
    if missing := inst.missing_impasse_fields():
        raise ValueError(f"{inst.instance_id} is a plain SWE-bench/SWE-smith row without impasse's {', '.join(missing)}; "
                         "impasse runs tasks it built itself: `impasse tasks build PACKAGE==VERSION`")
    image = load_image(inst.image)
    if image is None:
        raise FileNotFoundError(f"task image {inst.image} is not built; run `impasse tasks build {inst.package}"
                                f"=={inst.package_version}`")
    if not applies(c, inst, image):
        raise NotApplicable(f"{condition} does not apply to {inst.instance_id} ({c.requires} required)")
    layer = instance_layer(inst, image, fixed=c.fault["kind"] == "already_fixed")
    return backend.create([layer, image.layer], make_faults(c.fault, inst, image), limits)
