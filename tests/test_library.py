"""What an agent builder gets from `pip install impasse` without the benchmark extras."""

import subprocess
import sys


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
