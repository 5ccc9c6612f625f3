"""Every command, every bad input: a clear message and exit 2, never a traceback.

A table of (command line, what the message must say) over every subcommand: wrong shapes, missing
and extra fields, wrong types, directories for files, empty files, binary files, bad numbers. The
commands run in-process (typer's runner), each against its own scratch directory; the cache the
commands see is a scratch cache too, with a broken task file in it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

CORPUS = Path(__file__).parent / "corpus"
BINARY = bytes(range(256)) * 4


def _scratch(root: Path) -> dict[str, str]:
    """Files of every bad kind, and the paths the table refers to by name."""
    (root / "dir.yaml").mkdir()
    (root / "x.jsonl").mkdir()
    (root / "empty.yaml").write_text("")
    (root / "binary.yaml").write_bytes(BINARY)
    (root / "list.yaml").write_text("- a\n- b\n")
    (root / "types.yaml").write_text("temperature: hot\n")
    (root / "strnum.yaml").write_text('max_tokens: "256"\n')  # a number written as text: never coerced
    (root / "unknown.yaml").write_text("api_key: sk-123\n")
    (root / "priced.yaml").write_text("input_cost_per_mtok: 1\n")
    (root / "prices-bad.yaml").write_text("m: {input: 1, output: 1, outptu: 2}\n")
    (root / "prices-str.yaml").write_text("m: {input: '1', output: 1}\n")
    run = root / "run"  # a run directory whose manifest is valid JSON of the wrong shape
    (run / "episodes").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"format": "impasse.run/1", "config": {"suite": "blockers"},
                                                   "episodes": [{"episode_id": 3}]}))
    notjson = root / "notjson"
    notjson.mkdir()
    (notjson / "manifest.json").write_bytes(BINARY)
    listrun = root / "listrun"
    listrun.mkdir()
    (listrun / "manifest.json").write_text("[1, 2]")
    typed = root / "typed"
    typed.mkdir()
    (typed / "manifest.json").write_text(json.dumps({"config": {"step_limit": "8"}, "episodes": []}))
    bad_traj = root / "badtraj" / "episodes"
    bad_traj.mkdir(parents=True)
    src = sorted(CORPUS.glob("*.jsonl"))[0].read_text().splitlines()
    (bad_traj / "steps-as-text.jsonl").write_text("\n".join([src[0], json.dumps(
        {"type": "ending", "steps": "8", "ending": "completed"})]) + "\n")
    (bad_traj / "binary.jsonl").write_bytes(BINARY)
    (root / "trajectory.jsonl").write_bytes(BINARY)
    (root / "ask").mkdir()
    corpus = root / "corpus"  # a copy: a report writes annotations beside the trajectories it reads
    shutil.copytree(CORPUS, corpus)
    return {k: str(v) for k, v in {"root": root, "run": run, "notjson": notjson, "listrun": listrun, "typed": typed,
                                   "badtraj": bad_traj.parent, "corpus": corpus}.items()}


CASES = [
    # impasse run
    (["run", "--jobs", "0"], "--jobs"),
    (["run", "--step-limit", "-1"], "--step-limit"),
    (["run", "--limit", "-1"], "--limit"),
    (["run", "--per-package", "0"], "--per-package"),
    (["run", "--rpm", "0"], "--rpm"),
    (["run", "--conditions", "nope"], "unknown condition or class 'nope'"),
    (["run", "--interfaces", "chat"], "unknown interface"),
    (["run", "--agent", "nobody"], "unknown reference agent 'nobody'"),
    (["run", "--suite", "ask", "--interfaces", "chat"], "unknown ask mode"),
    (["run", "--backend", "nowhere"], "unknown backend 'nowhere'"),
    (["serve", "openenv", "--suite", "nope"], "unknown suite 'nope'; known: blockers, ask"),
    (["run", "--executor", "nowhere"], "unknown executor 'nowhere'"),
    (["run", "--executor-option", "novalue"], "expected KEY=VALUE"),
    (["run", "--rerun", "invalid"], "--rerun needs --resume"),
    (["run", "--sweep", "{root}/nowhere.yaml"], "cannot read it"),
    (["run", "--sweep", "{root}/nowhere.yaml", "--model", "m"], "cannot be given with --sweep"),
    (["run", "--estimate-from", "{root}"], "--estimate-from is for --dry-run"),
    (["run", "--base-url", "http://127.0.0.1:9/v1"], "--base-url and --model-config configure a model"),
    (["status", "{root}/nowhere"], "no run directory there"),
    (["run", "--resume", "{root}/nowhere"], "is not a run directory"),
    (["run", "--resume", "{root}/x.jsonl"], "is not a run directory"),
    (["run", "--resume", "{run}"], "field 'episodes.0.episode_id': Input should be a valid string"),
    (["run", "--resume", "{notjson}"], "not valid JSON"),
    (["run", "--resume", "{listrun}"], "a manifest is a JSON object"),
    (["run", "--resume", "{typed}"], "field 'config.step_limit'"),
    (["run", "--resume", "{run}", "--agent", "oracle"], "cannot be given with it"),
    (["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--model-config", "{root}/dir.yaml"], "--model-config"),
    (["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--model-config", "{root}/binary.yaml"], "--model-config"),
    (["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--model-config", "{root}/list.yaml"], "a YAML mapping of ModelConfig fields"),
    (["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--model-config", "{root}/priced.yaml"], "prices live in the price table"),
    (["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--model-config", "{root}/types.yaml"], "temperature"),
    (["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--model-config", "{root}/strnum.yaml"],
     "max_tokens: Input should be a valid integer"),
    (["handoff", "--tasks", "x", "--prefix-model-config", "{root}/strnum.yaml"], "max_tokens"),
    (["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--model-config", "{root}/unknown.yaml"], "unknown settings ['api_key']"),
    (["run", "--prices", "{root}/nowhere.yaml"], "No such file or directory"),
    (["run", "--prices", "{root}/dir.yaml"], "price table"),
    (["run", "--prices", "{root}/binary.yaml"], "price table"),
    (["run", "--prices", "{root}/list.yaml"], "expected a mapping"),
    (["run", "--prices", "{root}/prices-bad.yaml"], "'m': outptu: Extra inputs are not permitted"),
    (["run", "--prices", "{root}/prices-str.yaml"], "'m': input: Input should be a valid number"),
    (["run", "--max-cost", "lots"], "--max-cost"),
    (["run", "--suite", "ask", "--task-dir", "{root}/empty.yaml"], "--task-dir"),
    (["run", "--task-dir", "{root}/ask"], "--task-dir is for --suite ask"),
    (["run", "--tasks", "no_such_task"], "unknown task 'no_such_task'"),
    (["run", "--release", "{root}/nowhere"], "release"),
    # annotate / report
    (["annotate", "{root}/nowhere"], "no trajectories"),
    (["annotate", "{root}/empty.yaml"], "no trajectories"),
    (["annotate", "{badtraj}"], "annotated nothing"),
    (["report", "{root}/nowhere"], "no trajectories"),
    (["report", "{badtraj}"], "no finished episodes"),
    (["report", "{corpus}", "--json", "{root}/dir.yaml"], "--json"),
    (["report", "{corpus}", "--json", "{root}/no/such/dir/r.json"], "--json"),
    (["report", "{corpus}", "--html", "{root}/dir.yaml"], "--html"),
    (["report", "{corpus}", "--compare", "{root}/nowhere"], "no trajectories"),
    # tasks, conditions, sandbox, cache, schema
    (["tasks", "show", "no_such_task"], "unknown task 'no_such_task'"),
    (["tasks", "list"], "broken-1.0/instances.jsonl:1: not a task instance"),
    (["tasks", "build", "not a package!"], "package"),
    (["tasks", "build", "--jobs", "0"], "--jobs"),
    (["tasks", "verify", "--jobs", "0"], "--jobs"),
    (["tasks", "release", "verify", "{root}/nowhere"], "release"),
    (["tasks", "release", "import", "{root}/binary.yaml"], "not an impasse release archive"),
    (["tasks", "release", "import", "{root}/nowhere.tar.gz"], "nowhere.tar.gz: no such file"),
    (["tasks", "release", "export", "{root}/nowhere", "{root}/r.tar.gz"], "no release"),
    (["cache", "list"], "broken-1.0/instances.jsonl:1: not a task instance"),
    (["conditions", "show", "nope"], "unknown condition 'nope'"),
    (["sandbox", "exec", "no_such_task", "--", "true"], "unknown task 'no_such_task'"),
    (["schema", "nope"], "unknown schema 'nope'"),
    # ask, handoff
    (["ask", "import", "{root}/nowhere", "--out", "{root}/out"], "no such directory"),
    (["ask", "import", "{root}/binary.yaml", "--out", "{root}/out"], "binary.yaml"),
    (["handoff", "--interfaces", "fax"], "unknown handoff interface 'fax'"),
    (["handoff", "--direction", "sideways"], "--direction 'sideways'"),
    (["handoff", "--switch", "soon", "--tasks", "x"], "switch point 'soon'"),
    (["handoff", "--step-limit", "0"], "--step-limit"),
    (["handoff", "--tasks", "x", "--backend", "plain"], "use --backend local"),
    (["handoff", "--tasks", "x", "--backend", "nowhere"], "unknown backend 'nowhere'"),
    (["handoff"], "give --tasks"),
    (["handoff", "--prices", "{root}/prices-bad.yaml", "--tasks", "x"], "outptu"),
    # integrations
    (["mcp", "--transport", "carrier-pigeon"], "--transport must be stdio or http"),
    (["mcp", "--env", "no-colon"], "expected SUITE:key=value"),
    (["mcp", "--env", "blockers:task=x,conditon=clean"], "field 'conditon'"),
    (["mcp", "--env", "@{root}/binary.yaml"], "--env"),
    (["mcp", "--registry", "{root}/binary.yaml"], "binary.yaml"),
    (["mcp", "--port", "0"], "--port"),
    (["monitor", "replay", "{root}/nowhere.jsonl"], "nowhere.jsonl"),
    (["monitor", "replay", "{root}/trajectory.jsonl"], "trajectory.jsonl"),
    (["monitor", "replay", "{root}/x.jsonl"], "x.jsonl"),
    (["tickets", "list", "--store", "{root}/nowhere.sqlite"], "no ticket store"),
    (["tickets", "list", "--store", "{root}/binary.yaml"], "binary.yaml"),
    (["tickets", "show", "7", "--store", "{root}/binary.yaml"], "binary.yaml"),
    (["export", "inspect", "{root}/nowhere"], "no episodes/ directory"),
    (["review", "curve", "{corpus}", "--out", "{root}/empty.yaml"], "{root}/empty.yaml: File exists (FileExistsError)"),
    (["review", "curve", "{root}/nowhere", "--out", "{root}/curve"], "no trajectories"),
    (["review", "curve", "{corpus}", "--out", "{root}/curve", "--capacity", "many"], "--capacity 'many'"),
]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    names = _scratch(root)
    cache = root / "cache"  # a cache holding one task file with a row that lacks a field
    (cache / "tasks" / "broken-1.0").mkdir(parents=True)
    (cache / "tasks" / "broken-1.0" / "instances.jsonl").write_text(json.dumps({"instance_id": "broken"}) + "\n")
    names["cache"] = str(cache)
    return names


BROKEN_CACHE = {"tasks list", "cache list"}
"""Cases run against a cache holding a task file whose row lacks a field (the others: an empty one)."""


@pytest.mark.parametrize("argv,message", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_input_is_a_clear_error_with_exit_2(scratch, argv, message, monkeypatch, tmp_path):
    from impasse.cli import app

    broken = " ".join(argv) in BROKEN_CACHE
    monkeypatch.setenv("IMPASSE_CACHE", scratch["cache"] if broken else str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    args = [a.format(**scratch) for a in argv]
    res = CliRunner().invoke(app, args)
    text = " ".join((res.output or "").split())  # rich wraps long lines
    assert "Traceback" not in text, text
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == 2, f"exit {res.exit_code}: {text[-600:]}"
    assert message.format(**scratch) in text or message.lower() in text.lower(), text[-800:]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), \
        "a refused run left a run directory behind"
    assert not Path(scratch["root"], "nowhere").exists(), f"{argv}: a refused command created the path it was given"


def test_exit_codes_are_documented():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("### Exit codes"):]
    for code in ("`0`", "`1`", "`2`", "`3`"):
        assert code in section[:1500]


def test_a_refused_preflight_leaves_no_run_behind(tmp_path, monkeypatch):
    """A dead endpoint: exit 2 before anything is written (the default run directory included)."""
    from impasse.cli import app

    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["run", "--suite", "ask", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"])
    assert res.exit_code == 2 and "cannot reach the model endpoint" in " ".join(res.output.split())
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


def test_sandbox_exec_keeps_each_argument_whole():
    from impasse.cli.conditions import calls_of, exit_status

    assert calls_of(["echo 'a b'", ";;", "ls", "-l", "my dir"]) == ["echo 'a b'", "ls -l 'my dir'"]
    assert calls_of(["a b", ";;", "c"]) == ["a b", "c"]
    assert calls_of(["ls ;; pwd"]) == ["ls", "pwd"]
    assert calls_of(["printf", "%s;;%s", "x"]) == ["printf '%s;;%s' x"]  # a ';;' inside an argument is data
    assert exit_status(-9) == 137 and exit_status(3) == 3


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("bwrap"), reason="needs the local sandbox")
def test_too_much_output_exits_like_a_killed_command(glom_task, capfd):
    from impasse.cli import app

    res = CliRunner().invoke(app, ["sandbox", "exec", glom_task.instance_id, "--", "yes"])
    assert res.exit_code in (137, 141, 0) and res.exit_code != 247


def test_the_reports_json_lists_the_trajectories_it_skipped(tmp_path):
    """A malformed trajectory among good ones: the report is made from the rest, and its JSON
    names the skipped file and why (the terminal is not the only place that says so)."""
    from impasse.cli import app

    run = tmp_path / "run"
    shutil.copytree(CORPUS, run / "episodes")
    good = sorted((run / "episodes").glob("*.jsonl"))[0]
    (run / "episodes" / "appended.jsonl").write_text(good.read_text() + good.read_text())
    res = CliRunner().invoke(app, ["report", str(run), "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output[-800:]
    doc = json.loads((tmp_path / "r.json").read_text())
    (skipped,) = doc["skipped"]
    assert "appended.jsonl" in skipped and "a second header" in skipped
