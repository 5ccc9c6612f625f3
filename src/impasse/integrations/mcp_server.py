"""``impasse mcp``: the handoff tools as a Model Context Protocol server, for any MCP-capable agent.

Tools:

- ``escalate_to_human(ticket fields)``: the impasse ticket schema. Arguments are checked against
  it (wrong types are a tool error naming the field); an incomplete ticket is accepted and rated
  (missing parts are what the rubric scores). Each ticket is judged by the deterministic rubric
  and checked against the workspace's real diff, then stored ``queued`` for a person, who
  accepts it or rejects it with a message on the review page (``impasse review serve``) or with
  ``impasse tickets decide``; the reply carries the ratings and the ticket id to poll.
- ``ask_human(question)``: answered from a blocker registry when one is given (a matched
  blocker's resolution verbatim, else ``irrelevant question``; at most 3 questions per session),
  otherwise queued for a person, who answers with ``impasse tickets answer ID TEXT``. The call
  waits up to ``answer_timeout`` seconds, then returns the question id to poll.
- ``check_answer(ticket_id | question_id)``: the decision on an escalation (accepted, with the
  person's answer, or rejected, with their message) or the answer to a queued question, or
  "no answer yet".

Every call is committed to the SQLite store before its reply is sent (see
:mod:`impasse.tickets.store`). Built on the official SDK's low-level server so the tool schemas
are exactly impasse's own. HTTP needs a bearer token.
"""

from __future__ import annotations

import copy
import hmac
import json
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from mcp import types
from mcp.server.lowlevel import Server

from impasse.ask.matcher import answer
from impasse.integrations.matcher import Matcher, OfflineMatcher, Registry
from impasse.tickets.judge import diff_contradictions, judge_ticket, sufficient
from impasse.tickets.store import TicketStore
from impasse.tickets.ticket import Ticket, escalate_tool_schema

QUESTION_LIMIT = 3
NO_ANSWER = "no answer yet"
ASK_DESCRIPTION = ("Ask the person who gave you this task one specific question about missing, ambiguous or "
                   "contradictory requirements. Ask about one thing at a time; broad questions are not answered.")
CHECK_DESCRIPTION = ("Check whether a person has answered a ticket you filed with escalate_to_human (give its "
                     "ticket_id) or a question you asked with ask_human (give its question_id).")
CHECK_SCHEMA = {"type": "object", "properties": {
    "ticket_id": {"type": "integer", "description": "The id escalate_to_human answered with: Ticket N filed"},
    "question_id": {"type": "integer", "description": "The id ask_human answered with"}},
    "minProperties": 1, "maxProperties": 1, "additionalProperties": False}
"""Exactly one of the two ids (a bare ``question_id`` is what the tool took before tickets could
be decided, so clients written then still work)."""


def _without_required(schema: dict[str, Any]) -> dict[str, Any]:
    """The validation form of a schema: the same types, every field optional (a partial ticket
    is a ticket to rate, not an error), unknown fields refused."""
    out = copy.deepcopy(schema)
    stack = [out]
    while stack:
        node = stack.pop()
        if node.get("type") == "object":
            node.pop("required", None)
            node["additionalProperties"] = False
            stack.extend(node["properties"].values())
        elif node.get("type") == "array":
            stack.append(node["items"])
    return out


def _tools() -> list[types.Tool]:
    esc = escalate_tool_schema()["function"]
    return [
        types.Tool(name="escalate_to_human", description=esc["description"], input_schema=esc["parameters"]),
        types.Tool(name="ask_human", description=ASK_DESCRIPTION,
                   input_schema={"type": "object", "properties": {"question": {"type": "string", "minLength": 1}},
                                 "required": ["question"]}),
        types.Tool(name="check_answer", description=CHECK_DESCRIPTION, input_schema=CHECK_SCHEMA),
    ]


class ToolArgumentError(ValueError):
    pass


def check_arguments(schema: dict[str, Any], args: Any) -> None:
    """Raise a :class:`ToolArgumentError` naming the bad field and what it should be."""
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(args), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.path) or "arguments"
        raise ToolArgumentError(f"invalid arguments: {where}: {e.message}. {_expected(e)}")


def _expected(error: Any) -> str:
    """What the failing field accepts, whole: its own schema (never the tool's schema cut
    mid-way), or for an unknown field the names the object allows."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        return f"Allowed fields here: {', '.join(schema.get('properties') or {})}."
    return f"Expected (the schema of {'.'.join(str(p) for p in error.path) or 'the arguments'}): {json.dumps(schema)}"


def workspace_diff(workspace: Path, exclude: tuple[Path, ...] = ()) -> str:
    """The workspace's changes against HEAD, new files included, computed from the host with a
    throw-away index (the agent's own index, commits or stat cache cannot hide a change): the same
    computation the benchmark uses for its sandboxes (:func:`impasse.sandbox.gitdiff.repo_diff`)."""
    from impasse.sandbox.gitdiff import repo_diff

    git_dir = workspace / ".git"
    if not git_dir.is_dir():
        raise ValueError(f"--workspace {workspace} is not a git repository (no .git directory); point it at the "
                         "repository the agent works in")
    with tempfile.TemporaryDirectory() as scratch:
        try:
            diff = repo_diff(workspace, git_dir, Path(scratch))
        except subprocess.CalledProcessError as e:
            raise ValueError(f"git could not diff {workspace}: {e.stderr.decode(errors='replace').strip()}") from e
    return without_files(diff, store_files(workspace, exclude))


def store_files(workspace: Path, stores: tuple[Path, ...]) -> set[str]:
    """The repository-relative names of a SQLite store and its journal files, for stores that
    live inside the workspace (the agent did not write them: the server did)."""
    out = set()
    root = workspace.resolve()
    for store in stores:
        path = Path(store).resolve()
        if path.is_relative_to(root):
            rel = path.relative_to(root).as_posix()
            out |= {rel, f"{rel}-wal", f"{rel}-shm", f"{rel}-journal"}
    return out


def without_files(diff: str, names: set[str]) -> str:
    """``diff`` without the file sections of ``names`` (a pure function of the text)."""
    if not names:
        return diff
    sections = re.split(r"(?m)^(?=diff --git )", diff)
    keep = [s for s in sections if not (m := re.match(r"diff --git a/(\S+) ", s)) or m.group(1) not in names]
    return "".join(keep)


@dataclass
class HandoffService:
    """The tools' behaviour, transport-free: what each call stores and answers."""

    store: TicketStore
    workspace: Path | None = None
    registry: Registry | None = None
    matcher: Matcher = field(default_factory=OfflineMatcher)
    answer_timeout: float = 30.0
    poll_interval: float = 0.2
    tools: list[types.Tool] = field(default_factory=_tools)
    instructions: str = ("Hand off to a human: escalate_to_human, ask_human; check_answer for a person's decision "
                         "or answer.")

    def __post_init__(self) -> None:
        self.schemas = {t.name: _without_required(t.input_schema) if t.name == "escalate_to_human" else t.input_schema
                        for t in self.tools}

    async def call(self, session: str, name: str, args: dict[str, Any] | None) -> dict[str, Any]:
        if name not in self.schemas:
            raise ToolArgumentError(f"unknown tool {name!r}; available: {', '.join(self.schemas)}")
        args = {} if args is None else args
        check_arguments(self.schemas[name], args)
        if name == "escalate_to_human":
            return await anyio.to_thread.run_sync(self.escalate, session, args)
        if name == "ask_human":
            return await self.ask(session, args["question"])
        if "ticket_id" in args:
            return await anyio.to_thread.run_sync(self.check_ticket, args["ticket_id"])
        return await anyio.to_thread.run_sync(self.check, args["question_id"])

    def escalate(self, session: str, args: dict[str, Any]) -> dict[str, Any]:
        ticket = Ticket.from_arguments(args)
        ratings = judge_ticket(ticket)
        diff = workspace_diff(self.workspace, (self.store.path,)) if self.workspace else None
        issues = diff_contradictions(ticket, diff)
        ok = sufficient(ratings) and not issues  # a recipient cannot act on a ticket that misstates the workspace
        rid = self.store.add_escalation(session, ticket.model_dump(), ratings, ok, issues)
        missing = [d for d, level in ratings.items() if level != "full"]
        text = (f"Ticket {rid} filed and queued for a person; call check_answer with ticket_id={rid} to see "
                f"their decision. Ratings: "
                + ", ".join(f"{d}={level}" for d, level in ratings.items())
                + (f". Incomplete: {', '.join(missing)}." if missing else ".")
                + (f" Contradictions with the workspace: {'; '.join(issues)}; not sufficient until corrected."
                   if issues else ""))
        return {"text": text, "data": {"id": rid, "ratings": ratings, "sufficient": ok, "issues": issues}}

    async def ask(self, session: str, question: str) -> dict[str, Any]:
        if self.registry is not None:
            return await anyio.to_thread.run_sync(self._ask_registry, session, question)
        rid = await anyio.to_thread.run_sync(self.store.add_question, session, question)
        deadline = time.monotonic() + self.answer_timeout
        while True:
            record = await anyio.to_thread.run_sync(self.store.get, rid)
            if record.status == "answered":
                return {"text": record.answer or "", "data": {"id": rid, "answered": True, "answer": record.answer}}
            if time.monotonic() >= deadline:
                return {"text": f"{NO_ANSWER}: question {rid} is queued for a person; call check_answer with "
                                f"question_id={rid} later.", "data": {"id": rid, "answered": False}}
            await anyio.sleep(self.poll_interval)

    def _ask_registry(self, session: str, question: str) -> dict[str, Any]:
        asked = self.store.answered_count(session, "registry")
        if asked >= QUESTION_LIMIT:
            text = f"question limit reached: at most {QUESTION_LIMIT} questions are answered per session"
            rid = self.store.add_question(session, question, text, "limit")
            return {"text": text, "data": {"id": rid, "answered": False, "blocker": None}}
        reply = answer(self.matcher, question, self.registry.blockers, answered_so_far=0)  # the cap is above
        rid = self.store.add_question(session, question, reply.text, "registry", reply.blocker_id)
        return {"text": reply.text, "data": {"id": rid, "answered": True, "blocker": reply.blocker_id}}

    def check_ticket(self, ticket_id: int) -> dict[str, Any]:
        """The person's decision on an escalation, as the run's ``check_answer`` words it."""
        record = self.store.get(ticket_id)
        if record.kind != "escalation":
            raise ToolArgumentError(f"record {ticket_id} is a question: call check_answer with question_id={ticket_id}")
        data = {"id": ticket_id, "answered": not record.waiting, "status": record.status, "answer": record.answer}
        if record.waiting:
            return {"text": f"{NO_ANSWER}: ticket {ticket_id} is still with a person.", "data": data}
        said = f": {record.answer}" if record.answer else ""
        if record.status == "accepted":
            return {"text": f"ticket {ticket_id} was accepted by a person{said}", "data": data}
        return {"text": f"ticket {ticket_id} was rejected{said or ': no reason given'}", "data": data}

    def check(self, question_id: int) -> dict[str, Any]:
        record = self.store.get(question_id)
        if record.kind != "question":
            raise ToolArgumentError(f"record {question_id} is an escalation: call check_answer with "
                                    f"ticket_id={question_id}")
        if record.status != "answered":
            return {"text": f"{NO_ANSWER}: question {question_id} is still open.",
                    "data": {"id": question_id, "answered": False}}
        return {"text": record.answer or "", "data": {"id": question_id, "answered": True, "answer": record.answer}}


def _session_of(ctx: Any, fallback: str) -> str:
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    sid = headers.get("mcp-session-id") if headers is not None else None
    return f"http-{sid}" if sid else fallback


def build_server(service: Any) -> Server:
    """The SDK's low-level server over a service (its ``tools``, ``instructions`` and ``call``):
    impasse's three handoff tools, or one episode's tools (:mod:`impasse.integrations.mcp_env`)."""
    process_session = f"{os.uname().nodename}-{os.getpid()}-{int(time.time())}"

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=service.tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            out = await service.call(_session_of(ctx, process_session), params.name, params.arguments)
        except ValueError as e:  # ToolArgumentError, StoreError, a workspace git has trouble with
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(e))], is_error=True)
        texts = [out["text"], *out.get("more", [])]
        return types.CallToolResult(content=[types.TextContent(type="text", text=t) for t in texts],
                                    structured_content=out["data"])

    return Server("impasse", version="1", instructions=service.instructions, on_list_tools=list_tools,
                  on_call_tool=call_tool)


async def serve_stdio(service: Any) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(service)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


class BearerAuth:
    """ASGI wrapper: HTTP requests must carry ``Authorization: Bearer TOKEN`` (else 401)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not bearer_matches(given, self.expected):
                body = json.dumps({"error": "unauthorized", "detail": "send Authorization: Bearer <token> "
                                   "(the token given to `impasse mcp --token` or $IMPASSE_MCP_TOKEN)"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def bearer_matches(header: bytes, token: bytes) -> bool:
    """``Authorization: Bearer TOKEN``; the scheme is case-insensitive (RFC 9110 §11.1), the
    token compared in constant time."""
    scheme, _, given = header.strip().partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token)


def http_app(service: Any, token: str, host: str = "127.0.0.1") -> Any:
    if not token:
        raise ValueError("the HTTP transport needs a bearer token: pass --token or set $IMPASSE_MCP_TOKEN")
    return BearerAuth(build_server(service).streamable_http_app(host=host), token)


async def serve_http(service: Any, token: str, host: str, port: int) -> None:
    import uvicorn

    config = uvicorn.Config(http_app(service, token, host), host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()
