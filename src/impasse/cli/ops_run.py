"""What ``impasse run`` needs for operating a real evaluation: spend limits (and changing them on
``--resume``), reruns of chosen episodes, and frozen task releases. Plain functions; ``run.py``
calls them and turns their ValueErrors into clear failures."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

RERUNS = ("harness-errors", "invalid")


def spend_options(max_cost: str | None, max_tokens: str | None, rpm: int | None, tpm: int | None,
                  prices: Path | None) -> dict[str, Any]:
    """The spend options actually given, as SpendLimits fields (so a resume changes only those)."""
    from impasse.prices import load_prices
    from impasse.run.budget import parse_ceilings

    given: dict[str, Any] = {}
    per: dict[str, dict[str, Any]] = {}
    for flag, text, kind, field in (("--max-cost", max_cost, float, "max_cost"),
                                    ("--max-tokens", max_tokens, int, "max_tokens")):
        if text is None:
            continue
        try:
            run, models = parse_ceilings(text, kind)
        except ValueError as e:
            raise ValueError(f"{flag} {e}") from None
        if run is not None:
            given[field] = run
        for model, value in models.items():
            per.setdefault(model, {})[field] = value
    if per:
        given["per_model"] = per
    if rpm is not None:
        given["rpm"] = rpm
    if tpm is not None:
        given["tpm"] = tpm
    if prices is not None:
        given["prices"] = load_prices(prices).to_json()
    return given


def apply_spend(cfg: Any, given: dict[str, Any]) -> None:
    from impasse.run.budget import SpendLimits

    data = cfg.spend.model_dump()
    per = {**data.get("per_model", {})}
    for model, ceiling in given.get("per_model", {}).items():
        per[model] = {**per.get(model, {}), **ceiling}
    cfg.spend = SpendLimits.model_validate({**data, **given, "per_model": per})


def override_on_resume(rd: Any, cfg: Any, given: dict[str, Any]) -> Any:
    """``--resume DIR --max-cost X``: the new limits replace the old ones in the manifest, and
    the change is recorded (``limits_history``) so a report can tell what the run was allowed."""
    if not given:
        return cfg
    apply_spend(cfg, given)
    manifest = rd.read_manifest()
    manifest["config"] = cfg.model_dump()
    manifest.setdefault("limits_history", []).append(
        {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "changed": given})
    rd.rewrite_manifest(manifest)
    return cfg


def is_invalid(traj: Any) -> bool:
    """A trajectory marked invalid (the ask suite's invalid passes): an ``invalid`` event, or any
    event (grade, ending) or the header carrying ``"invalid": true``."""
    return bool(traj.header.get("invalid")) or any(e.get("type") == "invalid" or e.get("invalid") is True
                                                   for e in traj.events)


def select_rerun(rd: Any, specs: list[Any], what: str) -> list[Any]:
    """The episodes to run again (their old trajectories moved to ``RUN/attempts/``) plus the
    complete ones (skipped, so the summary still covers them). Interrupted or paused episodes
    are left alone: a plain ``--resume`` continues them."""
    from impasse.store.trajectory import read_trajectory

    if what not in RERUNS:
        raise ValueError(f"--rerun {what!r}: expected one of {', '.join(RERUNS)}")
    chosen, keep = [], []
    for s in specs:
        path = rd.trajectory(s.episode_id)
        if not path.exists():
            continue
        t = read_trajectory(path)
        if (t.failed if what == "harness-errors" else t.complete and is_invalid(t)):
            rd.archive_attempt(path)
            chosen.append(s)
        elif t.complete:
            keep.append(s)
    if not chosen:
        raise ValueError(f"no episode of {rd.path} matches --rerun {what}; nothing to do")
    return chosen + keep


def use_release(cfg: Any, name_or_path: str) -> None:
    """Hold the run to a frozen release: its instances (the plan reads the release's own rows,
    never the tasks built here), and only if every layer it names is installed and matches."""
    from impasse.tasks import release as rel

    path = rel.resolve(name_or_path).resolve()
    verify_release(path)
    doc = rel.load(path)
    cfg.tasks = [i.instance_id for i in rel.instances(path)]
    cfg.limit = cfg.per_package = None  # the release is the task set (the main job's slice does not apply)
    cfg.release = {"name": doc["name"], "path": str(path), "sha256": rel.sha256_of(path)}


def verify_release(path: Path) -> None:
    from impasse.tasks import release as rel

    if bad := rel.verify(path):
        raise ValueError(f"release {path.name} does not match this machine's cache, refusing to run: "
                         + "; ".join(map(str, bad)) + ". Import the release's archive again (`impasse tasks release "
                         "import FILE.tar.gz`: a good archive replaces every layer that differs), or use the "
                         "release that matches them.")


def pin_release(rd: Any, cfg: Any) -> None:
    """The run's pinned instances are the release's own rows (byte for byte)."""
    import shutil

    if cfg.release:
        shutil.copyfile(Path(cfg.release["path"]) / "instances.jsonl", rd.instances)
