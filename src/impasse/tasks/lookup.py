"""Finding task instances by id or unique prefix (the one place that does it)."""

from __future__ import annotations

from collections.abc import Iterable

from impasse.tasks.schema import TaskInstance


def find_instance(wanted: str, instances: Iterable[TaskInstance]) -> TaskInstance:
    """The instance whose id is ``wanted``, or the only one it prefixes. Errors say which."""
    insts = list(instances)
    exact = [i for i in insts if i.instance_id == wanted]
    if exact:
        return exact[0]
    prefixed = [i for i in insts if i.instance_id.startswith(wanted)]
    if len(prefixed) == 1:
        return prefixed[0]
    hint = f"{len(prefixed)} match that prefix" if prefixed else "none matches"
    raise ValueError(f"unknown task {wanted!r} ({hint}); see `impasse tasks list`")
