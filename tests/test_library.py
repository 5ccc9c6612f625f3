"""What an agent builder gets from `pip install impasse` without the benchmark extras."""

import subprocess
import sys

import pytest


def test_pure_parts_import_without_sandbox_or_model_clients():
    code = ("import sys\n"
            "import impasse.monitor.monitor, impasse.annotate.annotator, impasse.tickets.judge, impasse.store.trajectory\n"
            "heavy = ('impasse.sandbox', 'impasse.agent', 'openai', 'libcst', 'scipy', 'typer', 'rich', 'matplotlib')\n"
            "print([m for m in sys.modules if m.startswith(heavy)])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_escalate_schema_is_valid_openai_function_tool():
    from impasse.tickets.ticket import escalate_tool_schema

    tool = escalate_tool_schema()
    assert tool["type"] == "function" and tool["function"]["name"] == "escalate_to_human"

    def walk(node):
        assert node["type"] in ("object", "string", "array")
        if node["type"] == "object":
            assert set(node["required"]) == set(node["properties"])
            for child in node["properties"].values():
                walk(child)
        if node["type"] == "array":
            walk(node["items"])

    walk(tool["function"]["parameters"])


@pytest.mark.slow
def test_runtime_library_works_in_a_venv_with_only_the_core_dependencies(tmp_path):
    """An agent builder's install: the core dependencies only (no benchmark extras)."""
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    core = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", *core], check=True, capture_output=True)
    code = ("import sys\n"
            "import impasse.monitor.monitor, impasse.tickets.judge, impasse.annotate.annotator, impasse.store.trajectory\n"
            "from impasse.monitor.monitor import Monitor\n"
            "nudge = None\n"
            "m = Monitor()\n"
            "for out in ['Permission denied', '-r--r--r-- 1 root root 10 a.py']:\n"
            "    nudge = m.observe({'name': 'bash', 'arguments': {'command': 'ls -l a.py'}}, out, 1) or nudge\n"
            "heavy = ('impasse.sandbox', 'impasse.agent', 'openai', 'libcst', 'scipy', 'typer', 'rich', 'matplotlib')\n"
            "print(bool(nudge), [m for m in sys.modules if m.startswith(heavy)])\n")
    out = subprocess.run([py, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(root / "src")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True []"
    assert not re.search(r"openai|scipy|libcst", subprocess.run(
        [py, "-m", "pip", "list"], capture_output=True, text=True).stdout)
