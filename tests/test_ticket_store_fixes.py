"""The ticket store the review page serves, through the official MCP client (stdio and HTTP):
the answer cap counts only answered questions; a store inside the workspace (as the documented
.mcp.json puts it) is not the agent's change; saved-changes claims are compared with the files
the diff really changes; the Bearer scheme is case-insensitive; a contradicted ticket is not
sufficient; a validation error carries the whole schema of the field it names."""

from __future__ import annotations

import json
import os
import subprocess

import anyio
import httpx
import pytest

from impasse.tickets.judge import diff_contradictions, named_files
from impasse.tickets.store import TicketStore
from impasse.tickets.ticket import Ticket
from tests.test_mcp_server import (  # noqa: F401 - http_server and workspace are fixtures
    COMPLETE,
    TOKEN,
    http_server,
    http_session,
    stdio_session,
    text_of,
    workspace,
)

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}


def clean_repo(path):
    (path / "pkg").mkdir(parents=True)
    (path / "pkg" / "util.py").write_text("x = 1\n")
    (path / "pkg" / "core.py").write_text("y = 1\n")
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(path), *cmd], check=True, env=GIT_ENV)
    return path


def saying(saved: str) -> dict:
    return {**COMPLETE, "progress": {**COMPLETE["progress"], "saved_changes": saved}}


def test_a_store_inside_a_clean_workspace_flags_no_truthful_ticket(tmp_path):
    ws = clean_repo(tmp_path / "ws")
    store = ws / ".impasse" / "tickets.sqlite"  # where docs/integrations.md's .mcp.json puts it

    async def main():
        async with stdio_session("--store", str(store), "--workspace", str(ws)) as session:
            for saved in ("none", "n/a", "nothing", "No modifications."):
                res = await session.call_tool("escalate_to_human", saying(saved))
                assert res.structured_content["issues"] == [], (saved, text_of(res))
            res = await session.call_tool("escalate_to_human", saying("edited pkg/core.py"))
            assert res.structured_content["issues"] == [
                "names pkg/core.py as saved, but the workspace diff is empty"]
            assert res.structured_content["sufficient"] is False  # rated all full, but it misstates the workspace
            assert "not sufficient until corrected" in text_of(res)

    anyio.run(main)
    assert store.exists() and [r.sufficient for r in TicketStore(store).list()] == [True] * 4 + [False]


def test_saved_changes_are_compared_file_by_file_on_a_dirty_workspace(tmp_path):
    ws = clean_repo(tmp_path / "ws")
    (ws / "pkg" / "core.py").write_text("y = 2\n")

    async def main():
        async with stdio_session("--store", str(tmp_path / "t.sqlite"), "--workspace", str(ws)) as session:
            async def issues(saved):
                return (await session.call_tool("escalate_to_human", saying(saved))).structured_content["issues"]

            assert await issues("edited pkg/other.py") == [
                "names pkg/other.py as saved, but the workspace diff changes pkg/core.py"]
            assert await issues("nothing") == ["claims no saved changes, but the workspace diff changes pkg/core.py"]
            assert await issues("the fix in /workspace/repo/pkg/core.py is saved") == []
            assert await issues("core.py: one line changed, not yet tested") == []

    anyio.run(main)


def test_named_files_are_paths_not_versions_or_words():
    assert named_files("edited pkg/a.py and setup.cfg, then ./b.txt; see https://x.org/y.html") == [
        "pkg/a.py", "setup.cfg", "./b.txt"]
    assert named_files("bumped to 1.2.3, e.g. nothing else") == []
    diff = "diff --git a/src/p/core.py b/src/p/core.py\n+x\n"
    assert diff_contradictions(Ticket.from_arguments(saying("core.py")), diff) == []


def test_the_answer_cap_counts_only_answered_questions(tmp_path):
    registry = tmp_path / "reg.json"
    registry.write_text(json.dumps({"blockers": [
        {"id": "tz", "type": "missing parameters", "description": "the timezone for reports is not given",
         "resolution": "Use Europe/Paris.", "example_questions": ["Which timezone should the reports use?"]}]}))
    db = tmp_path / "r.sqlite"

    async def main():
        async with stdio_session("--store", str(db), "--registry", str(registry)) as session:
            async def ask(q):
                return text_of(await session.call_tool("ask_human", {"question": q}))

            for q in ("What's the weather like?", "Who wrote this?", "Is it lunch time?", "Why?"):
                assert await ask(q) == "irrelevant question"
            for _ in range(3):  # four irrelevant ones before, and still three answers
                assert await ask("Which timezone should the reports use?") == "Use Europe/Paris."
            assert "question limit reached" in await ask("Which timezone should the reports use?")

    anyio.run(main)
    assert [r.answered_by for r in TicketStore(db).list("question")][-1] == "limit"


@pytest.mark.parametrize("args, field, whole", [
    ({"progress": {"saved_changes": ["a"]}}, "progress.saved_changes", {"type": "string"}),
    ({"blocker": {"failed_operation": "x", "nope": 1}}, "blocker", None),
])
def test_a_validation_error_gives_the_fields_whole_schema(tmp_path, args, field, whole):
    async def main():
        async with stdio_session("--store", str(tmp_path / "t.sqlite")) as session:
            res = await session.call_tool("escalate_to_human", args)
            text = text_of(res)
            assert res.is_error and f"invalid arguments: {field}" in text
            if whole is None:
                assert "Allowed fields here: failed_operation, affected_target, error_feedback" in text
            else:
                schema = json.loads(text.split(f"(the schema of {field}): ", 1)[1])  # parses: not cut
                assert whole.items() <= schema.items()

    anyio.run(main)


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer"])
def test_the_bearer_scheme_is_case_insensitive(http_server, scheme):  # noqa: F811 - the fixture
    _, url, db = http_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    r = httpx.post(url, json=body, headers={**headers, "Authorization": f"{scheme} {TOKEN}"})
    assert r.status_code == 200, r.text
    for bad in (f"Basic {TOKEN}", f"{scheme} wrong", f"{scheme}{TOKEN}"):
        assert httpx.post(url, json=body, headers={**headers, "Authorization": bad}).status_code == 401

    async def accepted():
        async with http_session(url) as session:
            res = await session.call_tool("escalate_to_human", COMPLETE)
            assert not res.is_error

    anyio.run(accepted)
