"""An approval policy as a ``before_step`` hook: calls that match a rule wait for a reviewer.

The rules are data (``approvals.yaml``: protected paths, sudo, network, ...). A held call is
given to the episode's reviewer (:meth:`impasse.env.Env.submit_review`, kind ``approval``):

- a synchronous reviewer (``oracle``, the default) decides inside the step: the call runs, or
  the model is told it was not approved (recorded as the step's ``decision``);
- an asynchronous one (``--reviewer queue``/``llm``) answers later: the call does not run, the
  model is told ``held for approval (#N), no answer yet`` and may ``check_answer``; once
  approved, the same call runs when the agent makes it again; until then it is refused again
  without a new request.

Approval load is measured like escalations: the review events (or, with ``oracle``, the steps'
decisions) count held calls, answers and the steps spent waiting
(:func:`impasse.annotate.review.approval_facts`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict

from impasse.env.hooks import Decision


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    description: str
    tool: Literal["bash", "edit_file", "any"] = "any"
    pattern: str
    allowed: bool

    def matches(self, name: str, text: str) -> bool:
        return (self.tool in ("any", name)) and re.search(self.pattern, text, re.I) is not None


@cache
def policies() -> dict[str, list[Rule]]:
    data = yaml.safe_load(resources.files("impasse.review").joinpath("approvals.yaml").read_text())
    out = {name: [Rule.model_validate(r) for r in rules] for name, rules in (data.get("policies") or {}).items()}
    for name, rules in out.items():
        for r in rules:
            try:
                re.compile(r.pattern)
            except re.error as e:
                raise ValueError(f"approvals.yaml: policy {name!r}, rule {r.id!r}: bad pattern: {e}") from None
    return out


def policy(name: str) -> list[Rule]:
    known = policies()
    if name not in known:
        raise ValueError(f"unknown approval policy {name!r}; known (review/approvals.yaml): {', '.join(known)}")
    return known[name]


def call_text(call: dict[str, Any]) -> str:
    args = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
    return str(args.get("command") or args.get("path") or "")


def held_by(rules: list[Rule], call: dict[str, Any]) -> Rule | None:
    """The first rule that holds ``call`` (pure)."""
    text = call_text(call)
    return next((r for r in rules if r.matches(call.get("name", ""), text)), None)


@dataclass
class ApprovalHook:
    """The ``before_step`` hook of one policy; stateless (what was asked and answered is the
    Env's own review record, so resume and fork need nothing from it)."""

    name: str = "default"

    def __post_init__(self) -> None:
        self.rules = policy(self.name)

    def before_step(self, env: Any, call: dict[str, Any]) -> Decision | None:
        from impasse.env.core import as_call

        plain = as_call(call)
        args = plain["arguments"]
        if not isinstance(args, dict):
            import json

            try:
                args = json.loads(args or "{}")
            except (TypeError, ValueError):
                return None
        plain = {"name": plain["name"], "arguments": args}
        rule = held_by(self.rules, plain)
        if rule is None:
            return None
        if not getattr(env.reviewer, "asynchronous", False):
            by = f"approval:{rule.id}:oracle"
            return Decision("approve", by=by) if rule.allowed else Decision(
                "reject", f"not approved: this call {rule.description} (approval policy {self.name!r})", by=by)
        return self._asynchronous(env, plain, rule)

    def _asynchronous(self, env: Any, call: dict[str, Any], rule: Rule) -> Decision:
        by = f"approval:{rule.id}"
        asked = next((e for e in reversed(env.events) if e.get("type") == "review" and e.get("event") == "submitted"
                      and e.get("kind") == "approval" and _same(e.get("call"), call)), None)
        status = env.reviews.get(asked["id"], {}).get("status") if asked else None
        if status == "accepted":
            return Decision("approve", by=f"{by}:#{asked['id']}")
        if status == "queued":
            return Decision("reject", f"still held for approval (#{asked['id']}), no answer yet; call check_answer with "
                                      f"ticket_id={asked['id']}", by=by)
        if status == "rejected":
            reply = env.reviews[asked["id"]].get("reply") or "no reason given"
            return Decision("reject", f"not approved (#{asked['id']}): {reply}", by=by)
        rid = env.submit_review("approval", rule.allowed, call={**call, "rule": rule.id})
        return Decision("reject", f"held for approval (#{rid}), no answer yet: this call {rule.description}. Call "
                                  f"check_answer with ticket_id={rid}; once it is approved, make the same call again.",
                        by=by)


def _same(asked: dict[str, Any] | None, call: dict[str, Any]) -> bool:
    return bool(asked) and asked.get("name") == call["name"] and asked.get("arguments") == call["arguments"]
