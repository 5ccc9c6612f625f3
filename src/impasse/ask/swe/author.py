"""Render authoring specs (``specs/<task_id>.toml``) into task directories.

One spec (TOML: code sits in literal strings, no escaping) holds a task's statement, blockers, held-out tests and the code of its change as
*edits* with ``{{slot}}`` placeholders. Every blocker owns some slots and gives each a pair
``[with resolution, without it]``. The full-information solution fills every slot with its first
value; ``without/<blocker>.patch`` fills that blocker's slots with the second (what a careful
engineer would reasonably write without the answer) and every other slot with the first. So the
patches differ exactly where the blocker bites, and the validator can show each one matters.

Patches are real ``git diff`` output against the clean sdist tree of the task image.

    python -m impasse.ask.swe.author [TASK_ID ...]     # all specs when none is given
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from impasse.ask.swe.tasks import DATA_DIR, Blocker, heldout_node_ids
from impasse.tasks.image import Image, build_image, load_image
from impasse.tasks.layer import GIT_ENV, commit_tree, copy_repo
from impasse.tasks.suite import spec_for

SPECS_DIR = Path(__file__).resolve().parent / "specs"
HELDOUT_PATH = "test_ask_heldout.py"
_SLOT = re.compile(r"\{\{(\w+)\}\}")


class Edit(BaseModel):
    file: str
    old: str | None = Field(None, description="exact text to replace once; None appends `new` to the file")
    new: str


class BlockerSpec(Blocker):
    slots: dict[str, tuple[str, str]] = Field(description="slot -> (with resolution, without it)")


class TaskSpec(BaseModel):
    package: str
    version: str
    statement: str
    edits: list[Edit] = Field(min_length=1)
    blockers: list[BlockerSpec]
    tests: str


def load_spec(task_id: str) -> TaskSpec:
    path = SPECS_DIR / f"{task_id}.toml"
    if not path.is_file():
        raise FileNotFoundError(f"no spec {path}; specs present: {', '.join(spec_ids())}")
    try:
        return TaskSpec.model_validate(tomllib.loads(path.read_text()))
    except (tomllib.TOMLDecodeError, ValidationError) as e:
        raise ValueError(f"{path}: not a valid task spec: {e}") from e


def spec_ids() -> list[str]:
    return sorted(p.stem for p in SPECS_DIR.glob("*.toml"))


def fill(text: str, values: dict[str, str]) -> str:
    """Replace every ``{{slot}}``; an unknown slot is an authoring error, named."""
    def sub(m: re.Match) -> str:
        if m.group(1) not in values:
            raise KeyError(f"slot {{{{{m.group(1)}}}}} is used but no blocker defines it")
        return values[m.group(1)]
    for _ in range(4):  # a slot's value may itself use slots (a few levels at most)
        text = _SLOT.sub(sub, text)
    if _SLOT.search(text):
        raise ValueError(f"slots nested more than 4 deep: {_SLOT.search(text).group(0)}")
    return text


def variants(spec: TaskSpec) -> dict[str, dict[str, str]]:
    """``{"solution": slot values, <blocker id>: slot values without that blocker}``."""
    full = {s: pair[0] for b in spec.blockers for s, pair in b.slots.items()}
    out = {"solution": full}
    for b in spec.blockers:
        out[b.id] = {**full, **{s: pair[1] for s, pair in b.slots.items()}}
    return out


def apply_edits(repo: Path, edits: list[Edit], values: dict[str, str]) -> None:
    for e in edits:
        f = repo / e.file
        text = f.read_text() if f.exists() else ""
        new = fill(e.new, values)
        if e.old is None:
            text = text + ("" if not text or text.endswith("\n") else "\n") + new
        elif text.count(e.old) != 1:
            raise ValueError(f"{e.file}: the edit's `old` text occurs {text.count(e.old)} times, need exactly 1")
        else:
            text = text.replace(e.old, new, 1)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def make_patch(image: Image, edits: list[Edit], values: dict[str, str]) -> str:
    """``git diff`` of the clean sdist tree after the edits (new files included)."""
    git = ["git", "-c", "safe.directory=*"]
    with tempfile.TemporaryDirectory() as tmp:
        repo = copy_repo(image, Path(tmp) / "repo")
        commit_tree(repo, "clean")
        apply_edits(repo, edits, values)
        subprocess.run([*git, "-C", str(repo), "add", "-A"], env=GIT_ENV, check=True, capture_output=True)
        out = subprocess.run([*git, "-C", str(repo), "diff", "--cached"], env=GIT_ENV, check=True,
                             capture_output=True, text=True)
    return out.stdout


def render(task_id: str, image: Image, dest_root: Path = DATA_DIR) -> Path:
    spec = load_spec(task_id)
    dest = dest_root / task_id
    (dest / "ask-human-data").mkdir(parents=True, exist_ok=True)
    (dest / "without").mkdir(exist_ok=True)
    for old in (dest / "without").glob("*.patch"):
        old.unlink()
    meta = {"instance_id": task_id, "package": spec.package, "package_version": spec.version,
            "FAIL_TO_PASS": heldout_node_ids(HELDOUT_PATH, spec.tests), "PASS_TO_PASS": [],
            "test_cmd": image.test_cmd, "heldout_path": HELDOUT_PATH, "image": image.key}
    (dest / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    (dest / "problem_statement.txt").write_text(spec.statement.strip() + "\n")
    registry = {"blockers": [Blocker.model_validate(b.model_dump()).model_dump() for b in spec.blockers]}
    (dest / "ask-human-data" / "blocker_registry.json").write_text(json.dumps(registry, indent=2) + "\n")
    (dest / "heldout_tests.py").write_text(spec.tests)
    for name, values in variants(spec).items():
        patch = make_patch(image, spec.edits, values)
        target = dest / "solution.patch" if name == "solution" else dest / "without" / f"{name}.patch"
        target.write_text(patch)
    return dest


def image_for(package: str, version: str, backend=None) -> Image:
    img = load_image(f"{package}-{version}")
    if img is not None:
        return img
    from impasse.sandbox.local import LocalBackend

    return build_image(spec_for(package, version), backend or LocalBackend(), log=print)


def main(argv: list[str]) -> int:
    ids = argv or spec_ids()
    for task_id in ids:
        spec = load_spec(task_id)
        print(render(task_id, image_for(spec.package, spec.version)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
