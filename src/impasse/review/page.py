"""``impasse review serve``: the page a person answers escalations from.

A Starlette app with jinja2 templates (autoescaped: tickets and outputs come from agents) over
the SQLite ticket store that ``impasse mcp`` and a run's ``human`` reviewer write. The queue,
newest first, counts every record that waits for a person (:attr:`Record.waiting`: an escalation
either of them filed, an open question). One ticket shows the task, its fields, the rubric's
ratings and the truthfulness check, the agent's steps with the evidence the annotator finds
(first contact, t*, the checks that fired, unsafe requests) highlighted, and its diff. Actions:
accept with an optional answer (a run restores the environment and the agent resumes; an MCP
agent is told it was accepted, with the answer), reject with a message, answer a question; the
agent reads each through ``check_answer``. Every action is one committed row
(:meth:`TicketStore.decide`, fsync'd) before the page confirms it (POST, then a redirect to the
confirmation). The reviewer's own load is shown: decided this hour and the hourly budget left.

Access always needs the token (``--token`` or ``$IMPASSE_REVIEW_TOKEN``): as a bearer token
(any HTTP client; the scheme is case-insensitive) or through the login form, which sets an
HttpOnly, SameSite=Strict session cookie; every form carries a CSRF field derived from the
token. Plain HTML forms, no JavaScript.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from pathlib import Path
from typing import Any

from impasse.tickets.store import StoreError, TicketStore

COOKIE = "impasse_review"


def _digest(token: str, purpose: str) -> str:
    return hmac.new(token.encode(), purpose.encode(), hashlib.sha256).hexdigest()


def bearer_ok(header: str, token: str) -> bool:
    scheme, _, given = header.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def evidence(record: Any) -> dict[str, Any]:
    """The steps a person should look at: the annotator's first contact, t* and the checks that
    fired, and unsafe requests, on the steps the run filed with the ticket (pure)."""
    from impasse.annotate.annotator import annotate_steps
    from impasse.conditions.cards import card
    from impasse.steps import Step

    ctx = record.context or {}
    steps = [Step(s["index"], s.get("tool", ""), s.get("arguments") or {}, s.get("output", ""), s.get("exit_code"))
             for s in ctx.get("steps") or []]
    marks: dict[int, list[str]] = {}
    found: dict[str, Any] = {"t_star": None, "first_contact": None, "trace": [], "unsafe": []}
    try:
        c = card(ctx["condition"]) if ctx.get("condition") else None
    except KeyError:
        c = None
    if c is not None and steps:
        core = annotate_steps(steps, c, None, steps[-1].index)
        found = {"t_star": core["t_star"], "first_contact": core["first_contact"], "trace": core["evidence_trace"],
                 "unsafe": core["unsafe"]}
        for e in core["evidence_trace"]:
            marks.setdefault(e["step"], []).append(f"{e['role']}: {e['check']}")
        for u in core["unsafe"]:
            marks.setdefault(u["step"], []).append(f"unsafe: {u['category']}")
    rows = [{"index": s.index, "tool": s.tool, "command": s.command[:400], "output": s.output[-1200:],
             "marks": marks.get(s.index, []), "tstar": s.index == found["t_star"],
             "contact": s.index == found["first_contact"]} for s in steps]
    return {**found, "steps": rows}


def _action(store: TicketStore, rid: int, action: str, message: str) -> None:
    """One decision, committed before it returns (or a StoreError saying why not)."""
    if action == "answer":
        if not message:
            raise StoreError("an answer needs its text")
        store.answer(rid, message)
    elif action in ("accepted", "rejected"):
        if action == "rejected" and not message:
            raise StoreError("a rejection needs a message: the agent reads it through check_answer")
        store.decide(rid, action, message)
    else:
        raise StoreError(f"unknown action {action!r}")


class ReviewPage:
    """The handlers, over one store and one token."""

    def __init__(self, store_path: Path, token: str, budget: int) -> None:
        from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

        if not token:
            raise ValueError("the review page needs a token: pass --token or set $IMPASSE_REVIEW_TOKEN")
        self.store, self.token, self.budget = TicketStore(store_path), token, budget
        self.templates = Environment(loader=PackageLoader("impasse.review", "templates"), undefined=StrictUndefined,
                                     autoescape=select_autoescape(["html"], default=True, default_for_string=True))
        self.session, self.csrf = _digest(token, "session"), _digest(token, "csrf")

    def authorized(self, request: Any) -> bool:
        header = request.headers.get("authorization")
        if header is not None:
            return bearer_ok(header, self.token)
        return hmac.compare_digest(request.cookies.get(COOKIE, ""), self.session)

    def render(self, name: str, status: int = 200, **values: Any) -> Any:
        from starlette.responses import HTMLResponse

        load = self.store.decided_since(time.time() - 3600)
        html = self.templates.get_template(name).render(csrf=self.csrf, load=load, budget=self.budget,
                                                         left=max(0, self.budget - load), **values)
        return HTMLResponse(html, status)

    def guard(self, handler: Any) -> Any:
        """Only with the token; a POST only with the form's CSRF field."""
        from starlette.responses import PlainTextResponse, RedirectResponse

        async def wrapped(request: Any) -> Any:
            if not self.authorized(request):
                if request.method == "GET" and "authorization" not in request.headers:
                    return RedirectResponse("/login", 303)
                return PlainTextResponse("unauthorized: send Authorization: Bearer <token> or log in at /login", 401,
                                         headers={"WWW-Authenticate": "Bearer"})
            if request.method != "POST":
                return await handler(request)
            form = await request.form()
            if not hmac.compare_digest(str(form.get("csrf", "")), self.csrf):
                return PlainTextResponse("the form is stale or forged (bad csrf field): reload the page", 403)
            return await handler(request, form)
        return wrapped

    async def login_page(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse

        return HTMLResponse(self.templates.get_template("login.html").render(error=""))

    async def login(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse, RedirectResponse

        form = await request.form()
        if not hmac.compare_digest(str(form.get("token", "")).encode(), self.token.encode()):
            return HTMLResponse(self.templates.get_template("login.html").render(error="That token is not right."), 401)
        response = RedirectResponse("/", 303)
        response.set_cookie(COOKIE, self.session, httponly=True, samesite="strict")
        return response

    async def queue(self, request: Any) -> Any:
        records = self.store.list(newest_first=True)
        return self.render("queue.html", records=records,
                           waiting=sum(1 for r in records if r.waiting))

    async def ticket(self, request: Any) -> Any:
        try:
            record = self.store.get(int(request.path_params["rid"]))
        except StoreError as e:
            return self.render("error.html", 404, message=str(e))
        return self.render("ticket.html", r=record, ev=evidence(record) if record.kind == "escalation" else None,
                           done=request.query_params.get("done", ""))

    async def decide(self, request: Any, form: Any) -> Any:
        from starlette.responses import RedirectResponse

        rid = int(request.path_params["rid"])
        action = str(form.get("action", ""))
        try:
            _action(self.store, rid, action, str(form.get("message", "")).strip())
        except StoreError as e:
            return self.render("error.html", 400, message=str(e), back=f"/ticket/{rid}")
        return RedirectResponse(f"/ticket/{rid}?done={action}", 303)  # the row is committed: now confirm it


def create_app(store_path: Path, token: str, budget: int = 20) -> Any:
    """The ASGI app. ``budget``: decisions per hour the reviewer means to make (shown as the
    load left; nothing is refused past it)."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    page = ReviewPage(store_path, token, budget)
    return Starlette(routes=[
        Route("/login", page.login_page, methods=["GET"]), Route("/login", page.login, methods=["POST"]),
        Route("/", page.guard(page.queue)), Route("/ticket/{rid:int}", page.guard(page.ticket)),
        Route("/ticket/{rid:int}", page.guard(page.decide), methods=["POST"])])


def render_curve(doc: dict[str, Any], png_base64: str) -> str:
    """The load curve's page (self-contained: the figure inlined), also the section the HTML
    report shows when the report is given a curve."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(loader=PackageLoader("impasse.review", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(["html"], default=True, default_for_string=True))
    return env.get_template("curve.html").render(doc=doc, png=png_base64)


def render_curve_section(doc: dict[str, Any], png_base64: str) -> str:
    """The curve and the flooding table as a section of another page (the HTML report)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(loader=PackageLoader("impasse.review", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(["html"], default=True, default_for_string=True))
    return env.get_template("curve_section.html").render(doc=doc, png=png_base64)
