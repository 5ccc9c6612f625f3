"""`impasse serve openenv` driven by OpenEnv's own client (openenv-core's GenericEnvClient over
WebSocket) and by plain HTTP: a trainer's view end to end (connect, reset, step to the end, read
the reward terms), a group of 8 rollouts forked from one start, 16 sessions at once, a killed
client's session reclaimed, and the token."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("openenv", reason="the train extra is not installed (pip install -e '.[dev]')")

TOKEN = "train-token-1"
IMPASSE = [sys.executable, "-m", "impasse.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(glom_task, tmp_path_factory):
    out = tmp_path_factory.mktemp("openenv") / "run"
    port = _free_port()
    log = open(out.parent / "server.log", "w")  # noqa: SIM115 - a file, not a pipe nobody reads (it would fill)
    proc = subprocess.Popen(IMPASSE + ["serve", "openenv", "--port", str(port), "--token", TOKEN, "--out", str(out),
                                       "--max-sessions", "24", "--session-timeout", "30", "--conditions",
                                       "clean,read_only_source"],
                            stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
        if proc.poll() is not None:
            raise AssertionError((out.parent / "server.log").read_text()[-3000:])
    yield {"url": url, "client_url": f"{url}/token/{TOKEN}", "out": out, "proc": proc}
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()


def _client(server):
    from openenv import GenericEnvClient

    return GenericEnvClient(base_url=server["client_url"], message_timeout_s=300).sync()


def call(name, **arguments):
    return {"type": "call_tool", "tool_name": name, "arguments": arguments}


def test_a_trainer_runs_an_episode_to_its_reward(server, glom_task):
    target = glom_task.target_file
    ticket = {"blocker": {"failed_operation": f"writing {target}", "affected_target": target,
                          "error_feedback": f"bash: {target}: Permission denied"},
              "evidence": [f"ls -l {target}: -r--r--r-- root root", "chmod: Operation not permitted"],
              "recovery_attempts": ["chmod u+w (refused)"],
              "request": {"assistance_needed": "make the package source writable by the agent user",
                          "scope": "the package's source files only"},
              "resume_condition": f"touch {target} succeeds",
              "progress": {"saved_changes": "none", "unfinished_work": "apply the fix, run the failing test",
                           "verification_status": "not run"}}
    with _client(server) as env:
        r = env.reset(task=glom_task.instance_id, condition="read_only_source", interface="monitor")
        assert [t["function"]["name"] for t in r.observation["tools"]] == ["bash", "edit_file", "task_complete",
                                                                             "escalate_to_human"]
        assert glom_task.problem_statement[:40] in r.observation["text"] and not r.done
        steps = [env.step(call("bash", command=c)) for c in (f"echo '#' >> {target}", f"ls -l {target}",
                                                              f"chmod u+w {target}")]
        assert "Permission denied" in steps[0].observation["text"] and steps[0].reward in (0, None)
        assert any(m["role"] == "user" and "[impasse monitor]" in m["content"] for s in steps
                   for m in s.observation["messages"])  # the nudge reached the trainer
        state = env.state()
        assert state["step_count"] == 3 and state["condition"] == "read_only_source"
        assert not {"checks", "evidence", "fault", "blocker_ids"} & set(state)  # never the card or the registry
        end = env.step(call("escalate_to_human", **ticket))
    assert end.done and end.observation["ending"] == "escalated"
    terms = end.observation["info"]["reward_terms"]
    assert terms["escalated_on_evidence"] == 1.0 and end.reward == pytest.approx(sum(terms.values())) and end.reward > 0
    report = subprocess.run(IMPASSE + ["report", str(server["out"]), "--json", "-"], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr[-2000:]
    assert state["episode_id"] in {e["episode_id"] for e in json.loads(report.stdout)["episodes"]}


def test_a_group_of_eight_rollouts_from_one_start(server, glom_task):
    def member(k):
        with _client(server) as env:
            r = env.reset(task=glom_task.instance_id, condition="clean", group="g8", group_size=8)
            first = r.observation["messages"]
            s = env.step(call("bash", command=f"echo rollout-{k} > mine.txt && cat mine.txt"))
            return r.observation["info"]["episode_id"], first, s.observation["text"]

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(member, range(8)))
    ids = [g[0] for g in got]
    root = next(i for i in ids if ".g" not in i)
    assert sorted(ids) == sorted([root] + [f"{root}.g{i}" for i in range(1, 8)])
    assert all(g[1] == got[0][1] for g in got)  # one identical start
    assert sorted(g[2].splitlines()[0] for g in got) == sorted(f"rollout-{k}" for k in range(8))  # then their own
    with pytest.raises(Exception, match="all its members"), _client(server) as env:
        env.reset(task=glom_task.instance_id, condition="clean", group="g8", group_size=8)


def test_a_group_forks_on_the_docker_backend_too(server, glom_task, docker_client):
    """A reset option picks the backend; the group's members are Docker forks of one start, the
    fault in force in each, and each goes its own way."""
    target = glom_task.target_file

    def member(k):
        with _client(server) as env:
            r = env.reset(task=glom_task.instance_id, condition="read_only_source", group="gd", group_size=3,
                          backend="docker")
            denied = env.step(call("bash", command=f"echo '#' >> {target}")).observation["text"]
            mine = env.step(call("bash", command=f"echo rollout-{k} > mine.txt && cat mine.txt")).observation["text"]
            return r.observation["info"]["episode_id"], denied, mine

    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(member, range(3)))
    assert all("Permission denied" in g[1] for g in got)
    assert sorted(g[2].splitlines()[0] for g in got) == [f"rollout-{k}" for k in range(3)]
    headers = {g[0]: json.loads((server["out"] / "episodes" / f"{g[0]}.jsonl").read_text().splitlines()[0])
               for g in got}
    assert {h.get("backend") for h in headers.values()} == {"docker"}
    root = next(i for i in headers if ".g" not in i)
    assert {i: h.get("forked_from") for i, h in headers.items() if i != root} == \
        {f"{root}.g{i}": {"episode_id": root, "step": 0} for i in (1, 2)}


def test_sixteen_sessions_at_once(server):
    def session(k):
        with _client(server) as env:
            r = env.reset()  # the next episode of the seeded order
            outs = [env.step(call("bash", command=f"echo s{k}-{i}")).observation["text"] for i in range(3)]
            return r.observation["info"]["episode_id"], outs

    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(session, range(16)))
    assert len({g[0] for g in got}) == 16
    for k, (_, outs) in enumerate(got):
        assert [o.splitlines()[0] for o in outs] == [f"s{k}-{i}" for i in range(3)]


def test_a_killed_clients_session_is_reclaimed(server, glom_task):
    code = ("import time, sys\nfrom openenv import GenericEnvClient\n"
            f"env = GenericEnvClient(base_url={server['client_url']!r}).sync()\nenv.connect()\n"
            f"r = env.reset(task={glom_task.instance_id!r}, condition='clean')\n"
            "print(r.observation['info']['episode_id'], flush=True)\ntime.sleep(600)\n")
    victim = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    episode = victim.stdout.readline().strip()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert episode in httpx.get(f"{server['url']}/impasse/sessions", headers=headers).json()["live"]
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    deadline = time.monotonic() + 60
    while episode in httpx.get(f"{server['url']}/impasse/sessions", headers=headers).json()["live"]:
        assert time.monotonic() < deadline, "the killed client's episode was never closed"
        time.sleep(0.2)
    assert (server["out"] / "episodes" / f"{episode}.jsonl").exists()  # its record stays


def test_plain_http_keeps_a_default_session_and_needs_the_token(server, glom_task):
    url = server["url"]
    assert httpx.post(f"{url}/reset", json={}).status_code == 401
    assert httpx.post(f"{url}/reset", json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401
    h = {"Authorization": f"bearer {TOKEN}"}  # the scheme is case-insensitive
    r = httpx.post(f"{url}/reset", json={"task": glom_task.instance_id, "condition": "clean"}, headers=h, timeout=120)
    assert r.status_code == 200 and r.json()["done"] is False
    s = httpx.post(f"{url}/step", json={"action": call("bash", command="echo over-http")}, headers=h, timeout=120)
    assert s.status_code == 200 and s.json()["observation"]["text"].startswith("over-http")
    state = httpx.get(f"{url}/state", headers=h).json()
    assert state["step_count"] == 1  # the same session across requests
