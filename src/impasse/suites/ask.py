"""The ask_human benchmark (HiL-Bench style): tasks whose blockers only a human can resolve.

Dataset: the SQL and SWE ask tasks (``impasse/ask/data``). Modes (the suite's interfaces):
``baseline`` (no way to ask), ``full_info`` (every blocker's description and resolution appended
to the statement, HiL-Bench's template), ``ask_human`` (the tool). Each (task, mode, agent) runs
``PASSES`` times (``pass`` in the episode id). Scorers: execution match (SQL) or held-out tests
(SWE); Ask-F1 from the recorded questions (:mod:`impasse.ask.annotate`). A pass whose judge failed
is invalid: never scored, rerun by ``--resume`` (:meth:`AskSuite.rerun`).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from impasse.agent.agents import AgentSpec, run_agents
from impasse.env.core import Env, EnvParts
from impasse.env.spec import EnvSpec, SpecError, validate_spec
from impasse.suites.base import EpisodeSpec, slug

if TYPE_CHECKING:
    from impasse.run.config import RunConfig
    from impasse.store.rundir import RunDir

MODES = ("baseline", "full_info", "ask_human")
PASSES = 3
ASK_AGENTS = ("targeted-asker", "silent-guesser", "spammer", "broad-asker", "obvious-only")
BLOCKERS_DEFAULT_INTERFACES = ["baseline", "tool", "monitor"]
DOMAINS = ("sql", "swe")


def all_rows(cfg: RunConfig | None = None) -> list[Any]:
    """Every runnable ask task: SQL first, then SWE, each sorted by id; with ``cfg.task_dir``, the
    tasks in that directory instead."""
    from impasse.ask.domains import AskRow

    if cfg is not None and cfg.task_dir:
        return dir_rows(Path(cfg.task_dir))
    from impasse.ask.sql.validate import builtin_task_dirs
    from impasse.ask.swe.tasks import task_dirs

    sql = [AskRow(task_id=d.name, domain="sql", path=str(d)) for d in builtin_task_dirs()]
    swe = [AskRow(task_id=d.name, domain="swe", path=str(d)) for d in task_dirs()]
    return sql + swe


def dir_rows(root: Path) -> list[Any]:
    """The tasks under ``root`` (one task directory or a folder of them): SQL tasks in the public
    layout (ours or imported) and our own SWE tasks. A task that cannot run here (no database, an
    imported SWE task needing its authors' image) stops the run with its reason."""
    from impasse.ask.domains import AskRow
    from impasse.ask.taskdir import load_task, task_dirs

    if not root.is_dir():
        raise ValueError(f"--task-dir {root}: no such directory (write one with `impasse ask import`)")
    rows = []
    for d in task_dirs(root):
        t = load_task(d)
        if t.domain == "swe" and (d / "heldout_tests.py").exists():  # one of our SWE tasks
            rows.append(AskRow(task_id=d.name, domain="swe", path=str(d.resolve())))
            continue
        if t.domain == "swe" and t.runnable:
            from impasse.ask.importer import swe_not_runnable

            image = t.swe.image if t.swe else None
            t = t.model_copy(update={"runnable": False, "not_runnable_reason": swe_not_runnable(image)})
        if t.domain == "sql" and t.runnable and not t.sql.database_path:
            from impasse.ask.sql.database import available

            if t.sql.database not in available():
                t = t.model_copy(update={"runnable": False, "not_runnable_reason":
                                         f"needs the database {t.sql.database!r}: import the task with "
                                         "`impasse ask import DIR --database PATH`"})
        if not t.runnable:
            raise ValueError(f"ask task {t.task_id} ({d}) is not runnable here: {t.not_runnable_reason}. "
                             "Leave it out of --task-dir (`impasse ask import` writes only runnable tasks).")
        rows.append(AskRow(task_id=t.task_id, domain="sql", path=str(d.resolve())))
    if not rows:
        raise ValueError(f"--task-dir {root}: no task directory (metadata.json) under it")
    return sorted(rows, key=lambda r: (r.domain != "sql", r.task_id))


def modes(cfg: RunConfig) -> list[str]:
    """The run's modes; the CLI's blockers-suite default interface list means all of them."""
    return list(MODES) if cfg.interfaces == BLOCKERS_DEFAULT_INTERFACES else list(cfg.interfaces)


def agents(cfg: RunConfig) -> list[AgentSpec]:
    """The run's agents; when every named reference profile is a blockers-suite one (the CLI
    default), the ask reference agents."""
    from impasse.agent.agents import AGENT_KINDS

    specs = run_agents(cfg)
    if specs and all(s.kind == "reference" and s.arg not in ASK_AGENTS for s in specs):
        specs = [AgentSpec("reference", a) for a in ASK_AGENTS]
    for s in specs:
        AGENT_KINDS.get(s.kind).check(s)
    return specs


def choose(cfg: RunConfig) -> list[Any]:
    """``--tasks`` (ids or unique prefixes) or a slice: with ``--limit N``, N tasks taken from the
    two domains in turn (N-1 SQL and 1 SWE for N >= 2 keeps the slice fast but covers both)."""
    rows = all_rows(cfg)
    if cfg.task_dir and not cfg.tasks:
        return rows[: cfg.limit] if cfg.limit else rows
    if cfg.tasks:
        out = []
        for t in cfg.tasks:
            hits = [r for r in rows if r.task_id == t] or [r for r in rows if r.task_id.startswith(t)]
            if len(hits) != 1:
                raise ValueError(f"ask task {t!r} matches {len(hits)} tasks; known: "
                                 f"{', '.join(r.task_id for r in rows[:8])}, ... (`ls src/impasse/ask/data/*`)")
            out.append(hits[0])
        return out[: cfg.limit] if cfg.limit else out
    if not cfg.limit:
        return rows
    sql = [r for r in rows if r.domain == "sql"]
    swe = [r for r in rows if r.domain == "swe"]
    n_swe = 1 if cfg.limit >= 2 and swe else 0
    return sql[: cfg.limit - n_swe] + swe[:n_swe]


class AskSpec(EnvSpec):
    """One episode of the ask suite (one pass of one task in one mode)."""

    task: str = Field(description="Ask task id (or a unique prefix)")
    mode: Literal["baseline", "full_info", "ask_human"] = "ask_human"
    pass_index: int = Field(1, ge=1, description="Which pass of the task (HiL-Bench runs 3)")
    task_dir: Path | str | None = Field(None, description="A directory of task directories (e.g. written by "
                                                          "`impasse ask import`) instead of the built-in tasks")
    backend: str = Field("local", description="Where SWE tasks' sandboxes live")
    instances: Path | str | None = Field(None, description="A run's pinned task rows (default: "
                                                           "<out>/instances.jsonl if it exists)")
    matcher: str = Field("offline", description="Who judges ask_human questions (impasse.ask.judge.MATCHER_KINDS; "
                                                "offline: the best offline matcher installed)")
    matcher_model: dict[str, Any] | None = Field(None, description="--matcher llm: ModelConfig fields of the "
                                                                   "judge's OpenAI-compatible endpoint")


class AskSuite:
    name = "ask"
    interfaces = MODES

    def make_env(self, *, store: Any = None, before_step: Any = (), after_step: Any = (), **fields: Any) -> Env:
        from impasse.ask.asktool import ASK_TOOL, STATE, AskState
        from impasse.ask.domains import full_info_statement
        from impasse.ask.judge import make_matcher
        from impasse.store.rundir import RunDir
        from impasse.store.sink import LocalStore

        spec = validate_spec(AskSpec, self.name, fields)
        try:
            matcher = make_matcher(spec.matcher, spec.matcher_model)
        except ValueError as e:
            raise SpecError(str(e)) from e
        out = RunDir(Path(spec.out or "runs/env"))
        domain = open_domain(Path(spec.instances) if spec.instances else out.instances, spec.task,
                             spec.task_dir, spec.backend)
        tools = domain.tools() + ([ASK_TOOL] if spec.mode == "ask_human" else [])
        statement = (full_info_statement(domain.statement, domain.blockers) if spec.mode == "full_info"
                     else domain.statement)
        header = {"instance_id": domain.task_id, "condition": f"pass{spec.pass_index}", "condition_class": "ask",
                  "interface": spec.mode, "agent": spec.agent, "agent_kind": spec.agent_kind, "suite": self.name,
                  "domain": domain.name, "pass": spec.pass_index, "n_blockers": len(domain.blockers),
                  "blocker_ids": [b.id for b in domain.blockers], **spec.header}
        hint = ASK_HINT_IF[spec.mode]
        eid = spec.episode_id or slug(f"{spec.mode}__{domain.task_id}__pass{spec.pass_index}__{uuid.uuid4().hex[:8]}")
        parts = EnvParts(
            header=header, task=domain, open_sandbox=domain.open, tools=tools,
            first_messages=lambda sb: [{"role": "system", "content": domain.system(sb) + hint},
                                       {"role": "user", "content": statement}],
            grade=lambda sb, patch: domain.grade(patch, sb),
            tool_state=lambda: {STATE: AskState(list(domain.blockers), matcher)}, reward=ask_reward)
        return Env(parts, episode_id=eid, store=store or LocalStore(out), step_limit=spec.step_limit,
                   command_timeout=spec.command_timeout, output_chars=spec.output_chars, before_step=before_step,
                   after_step=after_step)

    def env_spec(self, spec: EpisodeSpec, cfg: RunConfig) -> dict[str, Any]:
        return {"task": spec.instance_id, "mode": spec.interface, "pass_index": int(spec.condition.removeprefix("pass")),
                "episode_id": spec.episode_id, "agent": spec.agent, "step_limit": cfg.step_limit,
                "command_timeout": cfg.command_timeout, "task_dir": cfg.task_dir, "backend": cfg.backend,
                "matcher": cfg.matcher, "matcher_model": cfg.matcher_model}

    def agents(self, cfg: RunConfig) -> list[AgentSpec]:
        return agents(cfg)

    def agent_context(self, env: Env) -> dict[str, Any]:
        return {"ask_key": env.task.agent_key()}

    def image_of(self, rd: RunDir, instance_id: str) -> tuple[str, str, str] | None:
        domain = open_domain(rd.instances, instance_id, None, "local")
        return domain.image() if hasattr(domain, "image") else None

    def check(self, cfg: RunConfig) -> None:
        """Also pins the judge: ``offline`` becomes the offline matcher installed here (``hybrid`` or
        ``lexical``), so the manifest records which one judged and ``--resume`` uses the same."""
        from impasse.ask.judge import make_matcher, resolve_kind

        if bad := [m for m in modes(cfg) if m not in MODES]:
            raise ValueError(f"unknown ask mode(s) {bad}; use --interfaces with {', '.join(MODES)}")
        cfg.matcher = resolve_kind(cfg.matcher)
        make_matcher(cfg.matcher, cfg.matcher_model)
        agents(cfg)
        choose(cfg)

    def plan(self, cfg: RunConfig) -> tuple[list[EpisodeSpec], list[Any]]:
        """The episodes, and the judge pinned (as :meth:`check` does: a run made without it records
        which offline matcher judged too)."""
        from impasse.ask.judge import resolve_kind

        cfg.matcher = resolve_kind(cfg.matcher)
        rows = choose(cfg)
        specs = []
        for row in rows:
            for mode in modes(cfg):
                for agent in agents(cfg):
                    for k in range(1, (cfg.repeats or PASSES) + 1):
                        name = agent.label.split("/", 1)[-1]
                        eid = slug(f"{name}__{mode}__{row.task_id}__pass{k}")
                        specs.append(EpisodeSpec(eid, row.task_id, f"pass{k}", mode, agent.label))
        return specs, rows

    def annotate(self, trajectory: Any) -> dict[str, Any]:
        from impasse.ask.annotate import annotate

        if not trajectory.complete:
            raise ValueError("not finished (harness error or interrupted): `impasse run --resume` the run")
        return annotate(trajectory)

    def report(self, rows: list[dict[str, Any]], sources: list[str], *, compare: list[dict[str, Any]] | None = None,
               judge_model: str | None = None, judge_base_url: str | None = None) -> dict[str, Any]:
        """HiL-Bench's Table 1 per agent and domain (Ask-F1, pass@k), invalid passes listed."""
        from impasse.ask.report import build

        if compare is not None or judge_model:
            raise ValueError("--compare and --judge-model are for the blockers suite's escalation tickets; an ask "
                             "run is reported on its own")
        return build(rows, sources)

    def show(self, report: dict[str, Any], console: Any) -> None:
        from impasse.ask.report import print_terminal

        print_terminal(report, console)

    def html(self, report: dict[str, Any]) -> str:
        from impasse.ask.report import render_html

        return render_html(report)

    def rerun(self, trajectory: Any) -> bool:
        """An invalid pass (its judge failed) is run again by ``--resume``."""
        from impasse.ask.annotate import is_invalid

        return is_invalid(trajectory)


def _ask_hints() -> dict[str, str]:
    from impasse.ask.domains import ASK_HINT

    return {"baseline": "", "full_info": "", "ask_human": ASK_HINT}


ASK_HINT_IF = _ask_hints()


def open_domain(instances: Path, task: str, task_dir: Path | str | None, backend: str) -> Any:
    """The task as a run pinned it (``instances``, a run's ``instances.jsonl``) or, without that
    file, among the built-in tasks (or those of ``task_dir``), opened in its domain."""
    from impasse.ask.domains import AskRow, SqlDomain, SweDomain

    if instances.exists():
        rows = [AskRow.model_validate_json(line) for line in instances.read_text().splitlines() if line.strip()]
    else:
        rows = dir_rows(Path(task_dir)) if task_dir else all_rows()
    hits = [r for r in rows if r.task_id == task] or [r for r in rows if r.task_id.startswith(task)]
    if len(hits) != 1:
        where = f"the run's tasks ({instances})" if instances.exists() else "the ask tasks here"
        raise SpecError(f"ask task {task!r} matches {len(hits)} of {where}; known: "
                        f"{', '.join(r.task_id for r in rows[:8])}{', ...' if len(rows) > 8 else ''}")
    row = hits[0]
    if not Path(row.path).is_dir():
        row = relocated(row)
    if row.domain == "sql":
        return SqlDomain(row)
    from impasse.sandbox.registry import get_backend

    return SweDomain(row, get_backend(backend))


def ask_reward(grade: dict[str, Any], trajectory: Any) -> Any:
    """HiL-Bench's shaped question reward and solving the task (``rewards/ask.yaml``); Ask-F1,
    precision and recall beside them as metrics."""
    from impasse.ask.annotate import annotate
    from impasse.rewards import weigh

    row = annotate(trajectory)
    metrics = {k: row[k] for k in ("ask_f1", "precision", "recall") if row.get(k) is not None}
    return weigh("ask", {"solved": float(bool(grade.get("resolved"))), "shaped_questions": row["shaped_reward"]},
                 metrics)


def relocated(row: Any) -> Any:
    """A built-in task pinned by a run on another machine (whose install path differs): the same
    task from this installation's package data."""
    for known in all_rows():
        if known.task_id == row.task_id and known.domain == row.domain:
            return known
    raise SpecError(f"ask task {row.task_id}: its directory {row.path} is gone (a --task-dir must be visible "
                    "at the same path on every machine that runs the episode)")


SUITE = AskSuite()
