"""Runs the diagnostic catalogue (tests/catalogue/*.yaml) in the real sandbox and turns each entry
into the step the agent would have seen. Shared by tests/test_catalogue.py and by anyone who wants
to look at the raw outputs (``python tests/catalogue_runner.py [CARD ...]``; ``--record`` rewrites
tests/catalogue/recorded.json, the real outputs the fast test checks the labels against)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from impasse.steps import Step

CATALOGUE = Path(__file__).parent / "catalogue"


def catalogue_file(card: str) -> Path:
    """tests/catalogue/CARD.yaml, or the catalogue beside a card of $IMPASSE_CARDS_PATH."""
    from impasse.conditions.cards import companion

    own = CATALOGUE / f"{card}.yaml"
    return own if own.exists() else (companion(card, "catalogue") or own)


def load_catalogue(card: str) -> dict[str, Any]:
    data = yaml.safe_load(catalogue_file(card).read_text())
    if data.get("card") != card:
        raise ValueError(f"{card}.yaml names card {data.get('card')!r}")
    for i, e in enumerate(data["commands"]):
        if ("run" in e) == ("edit" in e) or "reveals" not in e:
            raise ValueError(f"{card}.yaml entry {i}: needs exactly one of run/edit, and reveals")
    return data


def placeholders(inst, image) -> dict[str, str]:
    from impasse.conditions.faults import HideDependency, TaskFacts

    test_file = inst.FAIL_TO_PASS[0].split("::")[0]
    deps = image.import_breaking_deps or []
    return {"target": inst.target_file, "target_dir": str(Path(inst.target_file).parent),
            "test_file": test_file, "test_dir": str(Path(test_file).parent), "f2p": inst.FAIL_TO_PASS[0],
            "pkg": Path(inst.target_file).parts[0], "dep": HideDependency().choose(TaskFacts.of(image, inst))[0] if deps else "",
            "site": image.site_packages}


def fill(value: Any, ph: dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in ph.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, dict):
        return {k: fill(v, ph) for k, v in value.items()}
    return value


def run_catalogue(backend, inst, card: str) -> list[tuple[dict[str, Any], Step]]:
    """One episode for ``card``; every entry in file order; the real tool implementations."""
    from impasse.env.tools import run_bash, run_edit
    from impasse.tasks.episode import open_episode
    from impasse.tasks.image import load_image

    data = load_catalogue(card)
    ph = placeholders(inst, load_image(inst.image))
    out = []
    with open_episode(backend, inst, card) as sb:
        for i, entry in enumerate(data["commands"], 1):
            if "run" in entry:
                cmd = fill(entry["run"], ph)
                res = run_bash(sb, cmd, timeout=120, limit=20000)
                step = Step(i, "bash", {"command": cmd}, res.output, res.exit_code)
            else:
                args = fill(entry["edit"], ph)
                res = run_edit(sb, args["path"], args["old_str"], args["new_str"])
                step = Step(i, "edit_file", args, res.output, res.exit_code)
            out.append((entry, step))
    return out


if __name__ == "__main__":  # dump raw outputs for a reader
    import os

    os.environ.setdefault("IMPASSE_CACHE", str(Path.home() / ".cache" / "impasse-tests"))
    from impasse.sandbox.local import LocalBackend
    from impasse.tasks.build import build_package
    from impasse.tasks.suite import spec_for

    be = LocalBackend()
    task = build_package(spec_for("glom", "25.12.0"), be, max_instances=2, seed=0).instances[0]
    from impasse.conditions.cards import names

    record = "--record" in sys.argv
    dump = {}
    for name in [a for a in sys.argv[1:] if a != "--record"] or names():
        dump[name] = [{"entry": e, "tool": s.tool, "arguments": s.arguments, "output": s.output,
                       "exit_code": s.exit_code} for e, s in run_catalogue(be, task, name)]
    text = json.dumps(dump, indent=1)
    if record:
        (CATALOGUE / "recorded.json").write_text(text + "\n")
    else:
        print(text)
