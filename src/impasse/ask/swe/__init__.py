"""The ask suite's SWE domain: small feature tasks on real packages whose statement withholds,
blurs or contradicts what the change must do (HiL-Bench style blockers).

Each task is a directory in HiL-Bench's public per-task layout (see :mod:`.tasks`), rendered from
one authoring spec (``specs/<task_id>.toml``, see :mod:`.author`) and validated for real in the
sandbox (:mod:`.validate`).
"""
