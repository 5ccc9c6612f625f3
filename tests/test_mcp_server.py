"""`impasse mcp` driven by the official MCP client (the SDK's ClientSession) over stdio and over
streamable HTTP, against the real server process and a real git workspace."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import httpx2  # the SDK's HTTP client library; its transport takes a configured client
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from impasse.tickets.store import TicketStore
from impasse.tickets.ticket import escalate_tool_schema

CLI = [sys.executable, "-m", "impasse.cli.integrations"]
TOKEN = "s3cret-token"

COMPLETE = {
    "blocker": {"failed_operation": "writing glom/core.py", "affected_target": "/workspace/repo/glom/core.py",
                "error_feedback": "bash: glom/core.py: Permission denied"},
    "evidence": ["step 3: `ls -l glom/core.py` -> -r--r--r-- 1 root root"],
    "recovery_attempts": ["`chmod u+w glom/core.py` -> Operation not permitted"],
    "request": {"assistance_needed": "make glom/core.py writable by the agent user",
                "scope": "only that file's permissions; do not change code or tests"},
    "resume_condition": "`touch glom/core.py` succeeds",
    "progress": {"saved_changes": "modified pkg/util.py (kept in the workspace)",
                 "unfinished_work": "apply the fix to glom/core.py and run the tests",
                 "verification_status": "not verified: the tests were not run after the edit"},
}
INCOMPLETE = {"blocker": {"failed_operation": "writing glom/core.py"}, "request": {"assistance_needed": "make glom/core.py writable"}}


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "util.py").write_text("x = 1\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(ws), *cmd], check=True, env=env)
    (ws / "pkg" / "util.py").write_text("x = 2\n")  # an unsaved-to-git change the ticket should mention
    return ws


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content)


@asynccontextmanager
async def stdio_session(*args: str):
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "mcp", "--transport", "stdio", *args],
                                   env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(proc: subprocess.Popen, port: int, timeout: float = 30) -> None:
    """Until a server process started with ``stderr=PIPE`` accepts connections on ``port`` (its
    stderr in the failure when it dies first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.1)


@pytest.fixture
def http_server(tmp_path, workspace):
    port = free_port()
    db = tmp_path / "http.sqlite"
    proc = subprocess.Popen([*CLI, "mcp", "--transport", "http", "--port", str(port), "--store", str(db),
                             "--workspace", str(workspace), "--answer-timeout", "60"],
                            env={**os.environ, "IMPASSE_MCP_TOKEN": TOKEN}, stderr=subprocess.PIPE)
    wait_for_port(proc, port)
    yield proc, f"http://127.0.0.1:{port}/mcp", db
    if proc.poll() is None:
        proc.terminate()
        proc.wait(10)


@asynccontextmanager
async def http_session(url: str, token: str | None = TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as client, \
            streamable_http_client(url, http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def escalate_both_and_check(session, db: Path) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"escalate_to_human", "ask_human", "check_answer"}
    assert tools["escalate_to_human"].input_schema == escalate_tool_schema()["function"]["parameters"]

    full = await session.call_tool("escalate_to_human", COMPLETE)
    assert not full.is_error, text_of(full)
    assert full.structured_content["sufficient"] is True
    assert set(full.structured_content["ratings"].values()) == {"full"}
    assert full.structured_content["issues"] == []  # the ticket names pkg/util.py, which the diff changes

    part = await session.call_tool("escalate_to_human", INCOMPLETE)
    assert not part.is_error, text_of(part)
    ratings = part.structured_content["ratings"]
    assert part.structured_content["sufficient"] is False
    assert ratings["blocker"] == "partial" and ratings["progress"] == "missing" and ratings["request"] == "partial"
    assert "Incomplete: blocker, progress, request, resume_condition" in text_of(part)

    records = {r.id: r for r in TicketStore(db).list("escalation")}
    assert records[full.structured_content["id"]].payload["blocker"] == COMPLETE["blocker"]
    assert records[full.structured_content["id"]].sufficient is True
    assert records[part.structured_content["id"]].ratings == ratings


def test_stdio_lists_tools_and_stores_judged_escalations(tmp_path, workspace):
    db = tmp_path / "t.sqlite"

    async def main():
        async with stdio_session("--store", str(db), "--workspace", str(workspace)) as session:
            await escalate_both_and_check(session, db)
            # "no saved changes" while the workspace diff changes pkg/util.py: a contradiction, stored
            lying = {**COMPLETE, "progress": {**COMPLETE["progress"], "saved_changes": "none"}}
            res = await session.call_tool("escalate_to_human", lying)
            assert res.structured_content["issues"] == [
                "claims no saved changes, but the workspace diff changes pkg/util.py"]
            assert TicketStore(db).get(res.structured_content["id"]).issues == res.structured_content["issues"]

    anyio.run(main)
    listing = subprocess.run([*CLI, "tickets", "list", "--store", str(db), "--json"], capture_output=True, text=True,
                             check=True)
    rows = json.loads(listing.stdout)
    # the third is complete but contradicts the workspace: a recipient could not act on it as written
    assert [r["kind"] for r in rows] == ["escalation"] * 3 and [r["sufficient"] for r in rows] == [True, False, False]
    shown = subprocess.run([*CLI, "tickets", "show", "1", "--store", str(db)], capture_output=True, text=True,
                           check=True).stdout
    assert "glom/core.py" in shown and "sufficient=yes" in shown


@pytest.mark.parametrize("args, needle", [
    ({"blocker": 42}, "blocker"),
    ({"evidence": "one string, not a list"}, "evidence"),
    ({"progress": {"saved_changes": ["a"]}}, "progress.saved_changes"),
    ({"ticket": COMPLETE}, "ticket"),
])
def test_malformed_arguments_are_a_tool_error_naming_the_field(tmp_path, args, needle):
    db = tmp_path / "t.sqlite"

    async def main():
        async with stdio_session("--store", str(db)) as session:
            res = await session.call_tool("escalate_to_human", args)
            assert res.is_error and needle in text_of(res) and "invalid arguments" in text_of(res)
            bad_q = await session.call_tool("ask_human", {"question": 7})
            assert bad_q.is_error and "question" in text_of(bad_q)

    anyio.run(main)
    assert TicketStore(db).list() == []


def test_http_needs_the_bearer_token(http_server):
    _, url, db = http_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        r = httpx.post(url, json=body, headers={**headers, "Accept": "application/json, text/event-stream"})
        assert r.status_code == 401 and "Bearer" in r.headers["www-authenticate"]

    async def refused():
        # the SDK turns the 401 into an error response during initialize (the raw checks above show
        # the status); either way the wrong token never gets a session
        with pytest.raises(Exception) as info:  # noqa: B017
            async with http_session(url, token="wrong") as session:
                await session.call_tool("escalate_to_human", COMPLETE)
        assert "error" in repr(info.value).lower()
        assert not db.exists() or TicketStore(db).list() == []

    async def accepted():
        async with http_session(url) as session:
            await escalate_both_and_check(session, db)

    anyio.run(refused)
    anyio.run(accepted)


def test_queued_question_is_answered_by_a_person(tmp_path):
    db = tmp_path / "q.sqlite"

    async def main():
        async with stdio_session("--store", str(db), "--answer-timeout", "0.5") as session:
            res = await session.call_tool("ask_human", {"question": "Which timezone should timestamps use?"})
            assert "no answer yet" in text_of(res) and res.structured_content["answered"] is False
            qid = res.structured_content["id"]
            still = await session.call_tool("check_answer", {"question_id": qid})
            assert "no answer yet" in text_of(still)
            subprocess.run([*CLI, "tickets", "answer", str(qid), "UTC everywhere", "--store", str(db)], check=True)
            done = await session.call_tool("check_answer", {"question_id": qid})
            assert text_of(done) == "UTC everywhere"
            again = subprocess.run([*CLI, "tickets", "answer", str(qid), "no, local", "--store", str(db)],
                                   capture_output=True, text=True)
            assert again.returncode == 2 and "already answered" in again.stderr

    anyio.run(main)


def test_a_waiting_question_gets_the_answer_given_meanwhile(tmp_path):
    db = tmp_path / "w.sqlite"

    async def answer_soon():
        for _ in range(100):
            await anyio.sleep(0.1)
            if db.exists() and (open_q := [r for r in TicketStore(db).list("question") if r.status == "open"]):
                TicketStore(db).answer(open_q[0].id, "use the v2 API")
                return

    async def main():
        async with stdio_session("--store", str(db), "--answer-timeout", "30") as session, \
                anyio.create_task_group() as tg:
            tg.start_soon(answer_soon)
            res = await session.call_tool("ask_human", {"question": "Which API version is the target?"})
            assert text_of(res) == "use the v2 API"

    anyio.run(main)


def test_registry_answers_verbatim_irrelevant_otherwise_three_per_session(tmp_path):
    registry = tmp_path / "blocker_registry.json"
    registry.write_text(json.dumps({"blockers": [
        {"id": "tz", "type": "missing parameters", "description": "the timezone for reports is not given",
         "resolution": "Use Europe/Paris for every report.",
         "example_questions": ["Which timezone should the reports use?"]},
        {"id": "limit", "type": "ambiguous requirements", "description": "the page size limit is unclear",
         "resolution": "At most 50 rows per page.", "acceptable_questions": ["What is the maximum page size?"]}]}))
    db = tmp_path / "r.sqlite"

    async def main():
        async with stdio_session("--store", str(db), "--registry", str(registry)) as session:
            async def ask(q):
                return text_of(await session.call_tool("ask_human", {"question": q}))

            assert await ask("Which timezone should the reports be in?") == "Use Europe/Paris for every report."
            assert await ask("What's the weather like?") == "irrelevant question"
            assert await ask("What is the maximum page size allowed?") == "At most 50 rows per page."
            # the irrelevant one answered nothing, so it did not use up the cap (as in the benchmark)
            assert await ask("Which timezone should the reports use?") == "Use Europe/Paris for every report."
            assert "limit" in await ask("What is the maximum page size?")

    anyio.run(main)
    rows = TicketStore(db).list("question")
    assert [r.payload["blocker"] for r in rows] == ["tz", None, "limit", "tz", None]
    assert [r.answered_by for r in rows] == ["registry", "registry", "registry", "registry", "limit"]


def test_bad_registry_or_workspace_is_refused_at_start(tmp_path):
    bad = tmp_path / "reg.json"
    bad.write_text(json.dumps({"blockers": [{"id": "x"}]}))
    res = subprocess.run([*CLI, "mcp", "--registry", str(bad)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "blockers.0.description" in res.stderr
    res = subprocess.run([*CLI, "mcp", "--workspace", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "not a git repository" in res.stderr
    res = subprocess.run([*CLI, "mcp", "--transport", "http"], capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != "IMPASSE_MCP_TOKEN"})
    assert res.returncode == 2 and "bearer token" in res.stderr


def test_sigkill_mid_call_loses_no_acknowledged_record(http_server):
    proc, url, db = http_server
    acked: dict[int, str] = {}

    async def one(session, i: int) -> None:
        ticket = {**COMPLETE, "blocker": {**COMPLETE["blocker"], "affected_target": f"file-{i}.py"}}
        res = await session.call_tool("escalate_to_human", ticket)
        acked[res.structured_content["id"]] = f"file-{i}.py"

    async def main():
        async with http_session(url) as session:
            with anyio.move_on_after(60):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(session.call_tool, "ask_human", {"question": "anyone there?"})  # waits: mid-call
                    for i in range(40):
                        tg.start_soon(one, session, i)
                    while len(acked) < 8:
                        await anyio.sleep(0.01)
                    os.kill(proc.pid, signal.SIGKILL)
                    await anyio.sleep(1)
                    tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    except BaseException as e:  # the killed server breaks the client's streams; what matters is on disk
        if not isinstance(e, Exception | BaseExceptionGroup):
            raise
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= 8
    stored = {r.id: r for r in TicketStore(db).list()}
    for rid, target in acked.items():
        assert stored[rid].payload["blocker"]["affected_target"] == target
        assert stored[rid].ratings and stored[rid].sufficient is True
    assert any(r.kind == "question" and r.status == "open" for r in stored.values()), "the waiting call was stored"


@pytest.mark.slow
def test_the_official_client_runs_a_whole_benchmark_episode(glom_task, tmp_path):
    """`impasse mcp --env`: the episode's own tools over MCP, each call one Env step, the monitor's
    nudge in the results, and a trajectory the annotator reads like any run's."""
    from impasse.annotate.annotator import annotate
    from impasse.store.trajectory import read_trajectory

    target = glom_task.target_file
    spec = (f"blockers:task={glom_task.instance_id},condition=read_only_source,interface=monitor,"
            f"episode_id=over-mcp,out={tmp_path / 'run'}")

    async def go():
        params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "mcp", "--env", spec],
                                       env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            results = [await session.call_tool("bash", {"command": c}) for c in (
                f"echo '# x' >> {target}", f"ls -l {target}", f"chmod u+w {target}")]
            ticket = {**COMPLETE, "blocker": {**COMPLETE["blocker"], "affected_target": target}}
            final = await session.call_tool("escalate_to_human", ticket)
            after = await session.call_tool("bash", {"command": "true"})
            return init, names, results, final, after

    init, names, results, final, after = anyio.run(go)
    assert names == ["bash", "edit_file", "task_complete", "escalate_to_human"]
    assert glom_task.problem_statement[:60] in init.instructions
    assert "Permission denied" in results[0].content[0].text and results[0].structured_content["step"] == 1
    nudged = [r for r in results if len(r.content) > 1]
    assert nudged and "[impasse monitor]" in nudged[0].content[1].text and nudged[0].structured_content["nudges"]
    assert final.structured_content["done"] and final.structured_content["ending"] == "escalated"
    assert "resolved" in final.structured_content["grade"]
    assert after.is_error and "episode is over" in after.content[0].text
    traj = read_trajectory(tmp_path / "run" / "episodes" / "over-mcp.jsonl")
    a = annotate(traj)
    assert traj.complete and a.ending == "escalated" and a.t_star is not None and a.accepted_escalation
    assert traj.header["agent"] == "mcp/client" and [s.tool for s in traj.steps][-1] == "escalate_to_human"


def test_an_escalation_waits_for_a_decision_that_check_answer_reports(tmp_path):
    """A ticket filed over MCP is queued for a person (not only filed): `impasse tickets decide`
    (or the review page) accepts or rejects it, and the agent sees the decision with check_answer;
    a question id and a ticket id are told apart."""
    db = tmp_path / "d.sqlite"

    async def main():
        async with stdio_session("--store", str(db), "--answer-timeout", "0") as session:
            filed = await session.call_tool("escalate_to_human", COMPLETE)
            tid = filed.structured_content["id"]
            assert TicketStore(db).get(tid).status == "queued"
            waiting = await session.call_tool("check_answer", {"ticket_id": tid})
            assert "no answer yet" in text_of(waiting) and waiting.structured_content["answered"] is False
            wrong = await session.call_tool("check_answer", {"question_id": tid})
            assert wrong.is_error and f"ticket_id={tid}" in text_of(wrong)
            neither = await session.call_tool("check_answer", {})
            assert neither.is_error and "invalid arguments" in text_of(neither)
            refused = subprocess.run([*CLI, "tickets", "decide", str(tid), "reject", "--store", str(db)],
                                     capture_output=True, text=True)
            assert refused.returncode == 2 and "needs a message" in refused.stderr
            subprocess.run([*CLI, "tickets", "decide", str(tid), "accept", "made it writable", "--store", str(db)],
                           check=True, capture_output=True)
            done = await session.call_tool("check_answer", {"ticket_id": tid})
            again = subprocess.run([*CLI, "tickets", "decide", str(tid), "reject", "no", "--store", str(db)],
                                   capture_output=True, text=True)
            return done, again

    done, again = anyio.run(main)
    assert text_of(done).endswith("was accepted by a person: made it writable")
    assert done.structured_content == {"id": 1, "answered": True, "status": "accepted", "answer": "made it writable"}
    assert again.returncode == 2 and "accepted, not waiting" in again.stderr
