"""The ask_human benchmark (HiL-Bench style): tasks whose blockers only a human can resolve.

Dataset: the SQL and SWE ask tasks (``impasse/ask/data``). Modes (the suite's interfaces):
``baseline`` (no way to ask), ``full_info`` (every blocker's description and resolution appended
to the statement, HiL-Bench's template), ``ask_human`` (the tool). Each (task, mode, agent) runs
``PASSES`` times (``pass`` in the episode id). Scorers: execution match (SQL) or held-out tests
(SWE); Ask-F1 from the recorded questions (:mod:`impasse.ask.annotate`). A pass whose judge failed
is invalid: never scored, rerun by ``--resume`` (:meth:`AskSuite.rerun`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from impasse.agent.agents import AgentSpec, run_agents, spec_for_label
from impasse.episode import EpisodeParts
from impasse.run.config import EpisodeSpec, RunConfig, slug
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
            from impasse.ask.taskdir import swe_not_runnable

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


class AskSuite:
    name = "ask"
    interfaces = MODES

    def check(self, cfg: RunConfig) -> None:
        if bad := [m for m in modes(cfg) if m not in MODES]:
            raise ValueError(f"unknown ask mode(s) {bad}; use --interfaces with {', '.join(MODES)}")
        agents(cfg)
        choose(cfg)

    def plan(self, cfg: RunConfig) -> tuple[list[EpisodeSpec], list[Any]]:
        rows = choose(cfg)
        specs = []
        for row in rows:
            for mode in modes(cfg):
                for agent in agents(cfg):
                    for k in range(1, PASSES + 1):
                        name = agent.label.split("/", 1)[-1]
                        eid = slug(f"{name}__{mode}__{row.task_id}__pass{k}")
                        specs.append(EpisodeSpec(eid, row.task_id, f"pass{k}", mode, agent.label))
        return specs, rows

    def episode_parts(self, spec: EpisodeSpec, cfg: RunConfig, rd: RunDir) -> EpisodeParts:
        from impasse.ask.asktool import ASK_TOOL, STATE, AskState
        from impasse.ask.domains import full_info_statement

        domain = open_domain(rd, spec.instance_id, cfg)
        agent = _agent_for(cfg, spec.agent)
        model = agent.make_model(domain, {"ask_key": domain.agent_key(), "model_config": cfg.model or {}})
        tools = domain.tools() + ([ASK_TOOL] if spec.interface == "ask_human" else [])
        statement = (full_info_statement(domain.statement, domain.blockers) if spec.interface == "full_info"
                     else domain.statement)
        header = {"episode_id": spec.episode_id, "instance_id": spec.instance_id, "condition": spec.condition,
                  "condition_class": "ask", "interface": spec.interface, "agent": spec.agent,
                  "agent_kind": model.kind, "step_limit": cfg.step_limit, "suite": self.name,
                  "domain": domain.name, "pass": int(spec.condition.removeprefix("pass")),
                  "n_blockers": len(domain.blockers), "blocker_ids": [b.id for b in domain.blockers]}
        opened: list[Any] = []
        hint = ASK_HINT_IF[spec.interface]

        def open_sandbox() -> Any:
            sb = domain.open()
            opened.append(sb)
            return sb

        return EpisodeParts(
            header=header, model=model, open_sandbox=open_sandbox, tools=tools,
            first_messages=lambda sb: [{"role": "system", "content": domain.system(sb) + hint},
                                       {"role": "user", "content": statement}],
            grade=lambda patch: domain.grade(patch, opened[-1]),
            tool_state={STATE: AskState(list(domain.blockers))})

    def annotate(self, trajectory: Any) -> dict[str, Any]:
        from impasse.ask.annotate import annotate

        return annotate(trajectory)

    def rerun(self, trajectory: Any) -> bool:
        """An invalid pass (its judge failed) is run again by ``--resume``."""
        from impasse.ask.annotate import is_invalid

        return is_invalid(trajectory)


def _ask_hints() -> dict[str, str]:
    from impasse.ask.domains import ASK_HINT

    return {"baseline": "", "full_info": "", "ask_human": ASK_HINT}


ASK_HINT_IF = _ask_hints()


def _agent_for(cfg: RunConfig, label: str) -> AgentSpec:
    for s in agents(cfg):
        if s.label == label:
            return s
    return spec_for_label(cfg, label)


def open_domain(rd: RunDir, task_id: str, cfg: RunConfig) -> Any:
    """The task as the run pinned it (``RUN/instances.jsonl``), opened in its domain."""
    from impasse.ask.domains import AskRow, SqlDomain, SweDomain

    rows = ([AskRow.model_validate_json(line) for line in rd.instances.read_text().splitlines() if line.strip()]
            if rd.instances.exists() else all_rows(cfg))
    row = next((r for r in rows if r.task_id == task_id), None)
    if row is None:
        raise ValueError(f"ask task {task_id} is not among the run's tasks ({rd.instances})")
    if not Path(row.path).is_dir():
        raise ValueError(f"ask task {task_id}: its directory {row.path} is gone")
    if row.domain == "sql":
        return SqlDomain(row)
    from impasse.sandbox.registry import get_backend

    return SweDomain(row, get_backend(cfg.backend))


SUITE = AskSuite()
