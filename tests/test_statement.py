"""Problem statements: reproductions are whole statements that parse (and, in the sandbox, run as
shown), and nothing points into the package source."""

import ast
import re
import textwrap

import pytest

from impasse.tasks.statement import statement_problems, write_statement

TEST_SRC = textwrap.dedent('''\
    import json
    import os
    from pkg.core import parse, render, unused_name

    SAMPLE = {"a": [1, 2, 3]}


    def helper(x):
        return json.dumps(x)


    def test_round_trip():
        """Docstring."""
        data = parse(helper(SAMPLE))
        other = 1
        assert render(data) == (
            "a: 1, 2, 3"
        )
        assert other == 1


    class TestThing:
        def setup_method(self):
            self.value = 3

        def test_method(self, tmp_path):
            result = parse(str(self.value))
            assert result == 3
    ''')
CORE_SRC = textwrap.dedent('''\
    def parse(text):
        """Parse.

        >>> parse('1')
        1
        >>> x = parse('2')
        >>> x + 1
        3
        """
        return int(text)
    ''')
OUTPUT = textwrap.dedent('''\
    ____________________________ test_round_trip ____________________________
    tests/test_core.py:17: in test_round_trip
        assert render(data) == (
    pkg/core.py:12: in render
        return ", ".join(x)
    E   TypeError: sequence item 0: expected str instance, int found
    E     File "/workspace/repo/pkg/core.py", line 12, in render
    E   raised in pkg/core.py:12
    ========================= short test summary info =========================
    ''')
TEST_FILES = {"tests/test_core.py"}
SOURCE = {"pkg/core.py", "pkg/__init__.py"}


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests" / "test_core.py").write_text(TEST_SRC)
    (tmp_path / "pkg" / "core.py").write_text(CORE_SRC)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    return tmp_path


def code_of(statement):
    (block,) = re.findall(r"```python\n(.*?)```", statement, re.S)
    return block


def test_failing_line_inside_a_multiline_statement_keeps_the_whole_statement(repo):
    st = write_statement("pkg", "1.0", ["tests/test_core.py::test_round_trip", "pkg/core.py::pkg.core.parse"],
                         OUTPUT, repo, TEST_FILES)
    code = code_of(st)
    ast.parse(code)
    assert '"a: 1, 2, 3"\n)' in code                      # not cut mid-expression
    assert "assert other == 1" not in code                 # stops at the failing statement
    assert "from pkg.core import parse, render\n" in code  # the imports it uses, narrowed
    assert "def helper(x):" in code and "SAMPLE = " in code and "import json" in code
    assert "TypeError: sequence item 0" in st
    assert statement_problems(st, SOURCE) == []
    assert "pkg/core.py" not in st and "line 12" not in st and "1 documented example" in st


def test_methods_name_self_and_fixtures_in_a_sentence(repo):
    st = write_statement("pkg", "1.0", ["tests/test_core.py::TestThing::test_method"], "", repo, TEST_FILES)
    ast.parse(code_of(st))
    assert "`self` is an instance of the suite's test class `TestThing`" in st
    assert "pytest fixtures `tmp_path`" in st


def test_doctest_only_tasks_use_the_examples_without_naming_the_file(repo):
    st = write_statement("pkg", "1.0", ["pkg/core.py::pkg.core.parse"], "", repo, TEST_FILES)
    code = code_of(st)
    assert code.startswith("from pkg import *") and "x = parse('2')" in code
    assert statement_problems(st, SOURCE) == []


def test_the_checker_catches_what_the_old_writer_produced():
    old = "x\n```python\n    raise ValueError()\n\nclass A:\n```\nsee pkg/core.py:12\n"
    problems = statement_problems(old, SOURCE)
    assert any("does not parse" in p for p in problems) and any("pkg/core.py" in p for p in problems)


@pytest.mark.slow
def test_built_statements_parse_run_and_hide_the_source(glom_tasks, inflection_tasks, backend):
    """On real packages: a fresh F2P run feeds the writer; the reproduction parses, names no source
    path, and (when it needs no fixture) runs in the buggy sandbox without failing on itself."""
    from impasse.tasks.build import HARNESS_OUTPUT
    from impasse.tasks.image import load_image, test_command
    from impasse.tasks.layer import instance_layer

    ran = []
    for inst in glom_tasks + inflection_tasks:
        image = load_image(inst.image)
        repo = image.layer / "workspace" / "repo"
        with backend.create([instance_layer(inst, image), image.layer]) as sb:
            res = sb.exec(test_command(image.spec, [*inst.FAIL_TO_PASS, "--tb=short"]), timeout=300,
                          output_limit=HARNESS_OUTPUT)
            st = write_statement(image.package, image.version, inst.FAIL_TO_PASS, res.output, repo,
                                 set(image.test_files))
            assert statement_problems(st, set(image.source_files) - set(image.test_files)) == [], st
            if "fixtures" in st or "`self`" in st:
                continue
            out = sb.exec(f"python -c {_quote(code_of(st))}", timeout=120).output
            ran.append(out)
            assert "SyntaxError" not in out and "ImportError" not in out and "ModuleNotFoundError" not in out, out
            frames = re.findall(r'File "([^"]+)", line \d+', out)
            if "NameError" in out:  # the bug may be a NameError, but not in the snippet itself
                assert frames and frames[-1] != "<string>", out
    assert ran, "no reproduction was self-contained enough to run"


def _quote(code: str) -> str:
    import shlex

    return shlex.quote(code)
