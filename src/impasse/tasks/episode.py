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


def _f2p_in_test_files(inst: TaskInstance, image: Image | None) -> bool:
    """tests_unreadable: some FAIL_TO_PASS test lives in a test file (a doctest-only task keeps
    its checks in the source, which the fault leaves readable)."""
    return any(t.split("::")[0] in inst.test_files for t in inst.FAIL_TO_PASS)


def _import_breaking_dep(inst: TaskInstance, image: Image | None) -> bool:
    """missing_dependency: removing a third-party dependency really breaks ``import <package>``
    (probed at image build), so there is an explicit import failure and no offline way back."""
    image = image or load_image(inst.image)
    return bool(image and image.import_breaking_deps)


def _venv_test_runner(inst: TaskInstance, image: Image | None) -> bool:
    """broken_site_packages: the test runner (pytest) is installed in the venv whose
    site-packages the fault locks, so verification really depends on it; source edits stay
    possible because the source is the repository, not site-packages."""
    image = image or load_image(inst.image)
    return bool(image and any(f.lower().split("==")[0] == "pytest" for f in image.freeze))


REQUIREMENTS = {"f2p_test_files": _f2p_in_test_files, "runtime_deps": _import_breaking_dep,
                "venv_test_runner": _venv_test_runner}
"""Condition filters, as the paper filters its two task-dependent conditions: a card's
``requires`` names the predicate a task must meet; cards without one apply to every task."""


def applies(c: BlockerCard, inst: TaskInstance, image: Image | None = None) -> bool:
    """Whether the condition can be applied to this task (see each card's ``requires``)."""
    return c.requires is None or REQUIREMENTS[c.requires](inst, image)


def task_image(inst: TaskInstance) -> Image:
    image = load_image(inst.image)
    if image is None:
        raise FileNotFoundError(f"task image {inst.image} is not built; run `impasse tasks build {inst.package}"
                                f"=={inst.package_version}`")
    return image


def open_episode(backend: Backend, inst: TaskInstance, condition: str, limits: Limits | None = None) -> Sandbox:
    c = card(condition)
    if missing := inst.missing_impasse_fields():
        raise ValueError(f"{inst.instance_id} is a plain SWE-bench/SWE-smith row without impasse's {', '.join(missing)}; "
                         "impasse runs tasks it built itself: `impasse tasks build PACKAGE==VERSION`")
    image = task_image(inst)
    if not applies(c, inst, image):
        raise NotApplicable(f"{condition} does not apply to {inst.instance_id} ({c.requires} required)")
    if reason := backend.unsupported(c.fault):
        raise NotApplicable(f"{condition} cannot run on the {backend.name} backend here: {reason}")
    from impasse.sandbox.uselock import create_rebuilding

    fixed = isinstance(c.fault, AlreadyFixed)
    return create_rebuilding(backend, lambda: [instance_layer(inst, image, fixed=fixed), image.layer], [c.fault],
                             TaskFacts.of(image, inst), limits)
