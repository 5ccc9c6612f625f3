"""``impasse serve openenv``: a suite's episodes as an OpenEnv environment server, for trainers.

Built on ``openenv-core``'s server types (``Environment``, ``CallToolAction``, ``Observation``,
``State``, ``HTTPEnvServer`` and its WebSocket sessions): each OpenEnv session is one
:class:`ImpasseEnvironment`, which holds one impasse ``Env`` at a time (its sandbox, its
trajectory under the server's run directory, its reward). Actions are OpenEnv's tool-call
actions (``{"type": "call_tool", "tool_name": ..., "arguments": {...}}``; ``list_tools`` answers
the tool schemas); an observation is the tool message the model would see, the messages its
history gains (a nudge, a notice), and on the last step the reward with its named terms in
``info``. ``state`` is the episode's public state, never the card or the task's hidden parts.

- A bare ``reset()`` draws the next (task, condition) (ask: task, mode) from a seeded order of the
  suite's episodes; ``reset(task=..., condition=...)`` (any of the suite's Env spec fields) takes
  them. ``reset(group="g", group_size=8)`` starts a **group**: the first member resets one Env and
  forks it ``group_size - 1`` times (``Env.fork``), the next sessions that reset with the same
  group take one fork each: rollouts from one identical start.
- Plain HTTP ``/reset``, ``/step``, ``/state`` keep one default session (openenv-core's own HTTP
  routes make a new environment per request), so a simple client works too.
- A session whose client disconnects is closed at once; one idle for ``session_timeout`` seconds
  is reaped (its trajectory stays, resumable like any interrupted episode).
- Binds 127.0.0.1 unless told. With a token, HTTP requests need ``Authorization: Bearer T`` and
  the same routes are also served under ``/token/T/`` for clients that cannot send headers
  (OpenEnv's ``GenericEnvClient(base_url="http://host:port/token/T")``).
"""

from __future__ import annotations

import hmac
import itertools
import json
import random
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.serialization import deserialize_action, serialize_observation
from openenv.core.env_server.types import ConcurrencyConfig, Observation, State
from pydantic import Field

RESERVED = ("group", "group_size")


class ImpasseObservation(Observation):
    text: str = Field("", description="The tool message the model sees (at reset: the task)")
    messages: list[dict[str, Any]] = Field(default_factory=list, description="What the model's history gains")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI tool schemas (reset, list_tools)")
    ending: str | None = None
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict, description="Step info; the last step's reward terms")


class ImpasseState(State):
    """The episode's public state (OpenEnv's episode_id and step_count, then impasse's)."""


@dataclass
class Hub:
    """What every session of one server shares: the suite, the defaults, the seeded order of
    episodes, the groups being formed, and the run directory trajectories go to."""

    suite: str
    out: Path
    defaults: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    order: list[dict[str, Any]] = field(default_factory=list)
    _next: itertools.count = field(default_factory=itertools.count)
    _groups: dict[str, list[Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    default: Any = None
    live: dict[str, Any] = field(default_factory=dict)
    """Episodes some session holds right now (a killed client's is closed and leaves)."""

    def __post_init__(self) -> None:
        if not self.order:
            self.order = episode_order(self.suite, self.defaults)
        random.Random(self.seed).shuffle(self.order)

    def draw(self) -> dict[str, Any]:
        if not self.order:
            raise ValueError(f"the {self.suite} suite has no episodes to draw: give reset() the task and condition")
        return dict(self.order[next(self._next) % len(self.order)])

    def make(self, options: dict[str, Any]) -> Any:
        """A fresh Env (reset) for these reset options (or the next drawn episode)."""
        import impasse.env

        picked = {k: v for k, v in options.items() if k not in RESERVED}
        spec = {**self.defaults, **(picked if {"task"} & set(picked) else {**self.draw(), **picked})}
        spec.setdefault("episode_id", f"openenv-{uuid.uuid4().hex[:12]}")
        env = impasse.env.make(self.suite, out=str(self.out), agent="openenv/client", agent_kind="external", **spec)
        env.reset()
        return env

    def member(self, options: dict[str, Any]) -> Any:
        """The Env of one member of a group: the first resets it and forks the rest."""
        key, size = str(options["group"]), int(options.get("group_size") or 1)
        with self._lock:
            parked = self._groups.get(key)
            if parked is None:
                root = self.make(options)
                self._groups[key] = [root.fork(episode_id=f"{root.episode_id}.g{i}") for i in range(1, size)]
                return root
            if not parked:
                raise ValueError(f"group {key!r} has had all its members; start another group")
            return parked.pop(0)

    def close(self) -> None:
        with self._lock:
            for parked in self._groups.values():
                for env in parked:
                    env.close()
            self._groups.clear()
        if self.default is not None:
            self.default.close()


def episode_order(suite: str, defaults: dict[str, Any]) -> list[dict[str, Any]]:
    """Every episode the suite would run by default, as reset options (before the shuffle). An
    unknown suite is refused by the suites' registry, naming the suites there are (a run's
    config would take it for an old-style package set and name those instead)."""
    from impasse.env.registry import SUITES
    from impasse.run.config import RunConfig
    from impasse.run.plan import suite_of

    SUITES.get(suite)

    cfg = RunConfig(suite=suite, agents=["oracle"] if suite == "blockers" else [],
                    interfaces=[defaults["interface"]] if "interface" in defaults else (
                        ["tool"] if suite == "blockers" else ["ask_human"]),
                    conditions=defaults.pop("conditions", "all"))
    specs, _ = suite_of(cfg).plan(cfg)
    seen, out = set(), []
    for s in specs:
        key = (s.instance_id, s.condition, s.interface)
        if key in seen:
            continue
        seen.add(key)
        out.append({"task": s.instance_id, "condition": s.condition} if suite == "blockers" else
                   {"task": s.instance_id, "mode": s.interface, "pass_index": int(s.condition.removeprefix("pass"))})
    return out


class ImpasseEnvironment(Environment[CallToolAction, ImpasseObservation, ImpasseState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, hub: Hub) -> None:
        super().__init__()
        self.hub = hub
        self.env: Any = None

    def reset(self, seed: int | None = None, episode_id: str | None = None, **options: Any) -> ImpasseObservation:
        self.close()
        if episode_id:
            options["episode_id"] = episode_id
        self.env = self.hub.member(options) if options.get("group") else self.hub.make(options)
        self.hub.live[self.env.episode_id] = self.env
        opening = {"messages": list(self.env.messages), "tools": self.env.schemas}
        first = next((m.get("content") or "" for m in reversed(opening["messages"]) if m.get("role") == "user"), "")
        return ImpasseObservation(text=first, messages=opening["messages"], tools=opening["tools"],
                                  info={"episode_id": self.env.episode_id, "step": self.env.steps,
                                        **({"group": options["group"]} if options.get("group") else {})})

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> ImpasseObservation:
        if self.env is None:
            raise ValueError("step before reset: call reset() first")
        if isinstance(action, ListToolsAction):
            return ImpasseObservation(tools=self.env.schemas)
        r = self.env.step({"name": action.tool_name, "arguments": action.arguments})
        return ImpasseObservation(text=r.observation, messages=r.messages, ending=r.ending, truncated=r.truncated,
                                  done=r.done, reward=r.reward, info=_jsonable(r.info))

    @property
    def state(self) -> ImpasseState:
        if self.env is None:
            return ImpasseState()
        return ImpasseState(**{**self.env.state(), "episode_id": self.env.episode_id, "step_count": self.env.steps})

    def close(self) -> None:
        if self.env is not None:
            env, self.env = self.env, None
            self.hub.live.pop(env.episode_id, None)
            env.close()


def _jsonable(info: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(info, default=str))


# ------------------------------------------------------------------------------------ the app


def build_app(hub: Hub, *, max_sessions: int = 16, session_timeout: float = 600.0, token: str | None = None) -> Any:
    """The FastAPI app: openenv-core's server (WebSocket sessions, /schema, /health, ...) with
    the HTTP reset/step/state routes kept on one default session, behind the token if given."""
    from fastapi import Body, FastAPI

    server = HTTPEnvServer(lambda: ImpasseEnvironment(hub), CallToolAction, ImpasseObservation,
                           concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                                session_timeout=session_timeout))
    app = FastAPI(title="impasse OpenEnv server", version="1")
    server.register_routes(app)
    app.router.routes = [r for r in app.router.routes if getattr(r, "path", None) not in ("/reset", "/step", "/state")]
    lock = threading.Lock()

    def default() -> ImpasseEnvironment:
        if hub.default is None:
            hub.default = ImpasseEnvironment(hub)
        return hub.default

    @app.post("/reset")
    def reset(body: dict[str, Any] = Body(default_factory=dict)) -> dict[str, Any]:  # noqa: B008 - FastAPI's way
        with lock:
            return serialize_observation(default().reset(**body))

    @app.post("/step")
    def step(body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        action = deserialize_action(body.get("action") or {}, CallToolAction)
        with lock:
            return serialize_observation(default().step(action))

    @app.get("/state")
    def state() -> dict[str, Any]:
        with lock:
            return default().state.model_dump()

    @app.get("/impasse/sessions")
    def sessions() -> dict[str, Any]:
        """The episodes sessions hold now, and the server's capacity."""
        return {"live": sorted(hub.live), "active_sessions": server.active_sessions, "max_sessions": max_sessions,
                "suite": hub.suite, "out": str(hub.out)}

    @app.on_event("shutdown")
    def _close() -> None:
        hub.close()

    return TokenGate(app, token) if token else app


class TokenGate:
    """ASGI: every request needs ``Authorization: Bearer <token>`` (the scheme in any case) or a
    path under ``/token/<token>/`` (for clients that cannot send headers); else 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.token, self.prefix = app, token, f"/token/{token}"

    def _allowed(self, scope: dict[str, Any]) -> bool:
        path = scope.get("path", "")
        if path == self.prefix or path.startswith(self.prefix + "/"):
            scope["path"] = path[len(self.prefix):] or "/"
            scope["raw_path"] = scope["path"].encode()
            return True
        given = dict(scope.get("headers") or []).get(b"authorization", b"").decode(errors="replace")
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and not self._allowed(scope):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            body = json.dumps({"error": "unauthorized", "detail": "send Authorization: Bearer <token>, or use "
                               "the /token/<token>/ prefix (impasse serve openenv --token)"}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
