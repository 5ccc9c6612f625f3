"""Model clients. Any OpenAI-compatible chat-completions endpoint with tool calling.

Configuration alone points impasse at a real model: ``--model NAME --base-url URL`` and the API
key in ``$IMPASSE_API_KEY`` (or the variable ``api_key_env`` names). ``$OPENAI_API_KEY`` stands in
for an unset ``$IMPASSE_API_KEY`` only where the request goes to OpenAI's own API (no base URL, or
api.openai.com): the user's OpenAI key is never sent to another endpoint (:func:`key_for`).
Retries with exponential backoff on 429, 5xx, timeouts and connection errors; token accounting per call (costs come from the one price
table, :mod:`impasse.prices`, applied by the run's meter).

Failures of the *service* (unreachable, key refused, unknown model, still failing after the
retries) raise :class:`EndpointError`: the harness's problem, so the episode is rerun by
``--resume``. A request the model itself makes impossible (HTTP 400, e.g. its context is full)
is an :class:`AgentError` that ends the episode. :func:`preflight` checks an endpoint with one
request before a run spends anything on it.
"""

from __future__ import annotations

import os
import random
import time
import typing
from dataclasses import dataclass, field
from typing import Any

from impasse.agent.endings import AgentError, EndpointError
from impasse.agent.loop import ModelResponse

DEFAULT_KEY_ENV = "IMPASSE_API_KEY"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
OPENAI_API_HOST = "api.openai.com"


@dataclass
class ModelConfig:
    model: str
    """Model name as the endpoint knows it."""
    base_url: str | None = None
    """OpenAI-compatible base URL, e.g. http://localhost:8000/v1; None = api.openai.com."""
    api_key_env: str = "IMPASSE_API_KEY"
    """Environment variable holding the key (the default one, unset, falls back to OPENAI_API_KEY
    for OpenAI's own API only; a variable of the model's own never does)."""
    temperature: float | None = 0.0
    max_tokens: int | None = 4096
    timeout: float = 120.0
    """Seconds per HTTP request."""
    max_retries: int = 6
    """Retries on 429/5xx/timeouts/connection errors, with exponential backoff and jitter."""
    backoff_base: float = 1.0
    extra_body: dict[str, Any] = field(default_factory=dict)


SETTING_HINTS = {
    "api_key": "the key is read from the variable api_key_env names, never written here",
    "input_cost_per_mtok": "prices live in the price table now: --prices FILE",
    "output_cost_per_mtok": "prices live in the price table now: --prices FILE",
}


PRICE_SETTINGS = ("input_cost_per_mtok", "output_cost_per_mtok")


def check_settings(data: Any, source: str, reserved: tuple[str, ...] = (), price_hint: str | None = None
                   ) -> dict[str, Any]:
    """A YAML mapping of ModelConfig fields, checked: an unknown key (``api_key:``, a typo) or a
    wrong type is a ValueError naming ``source``, the key and the known ones, never a TypeError
    deep in a run. ``reserved`` fields are set elsewhere (a sweep file's model has its own
    ``base_url``), so they are refused here too; ``price_hint`` says where a price goes instead
    (a sweep model's ``price:``; default: ``--prices FILE``). Strict: a number written as text is
    refused, not coerced (the mapping is returned as it is, so what is used is what was checked)."""
    import dataclasses

    from pydantic import TypeAdapter, ValidationError

    known = {f.name for f in dataclasses.fields(ModelConfig)} - set(reserved)
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a model config is a YAML mapping of ModelConfig fields ({', '.join(sorted(known))})")
    if bad := sorted(set(data) - known):
        hints = {**SETTING_HINTS, **{k: f"{k} is the model's own field" for k in reserved},
                 **({k: price_hint for k in PRICE_SETTINGS} if price_hint else {})}
        why = "; ".join(dict.fromkeys(hints[b] for b in bad if b in hints))
        raise ValueError(f"{source}: unknown settings {bad}{f' ({why})' if why else ''}; known: {', '.join(sorted(known))}")
    hints = typing.get_type_hints(ModelConfig)
    for key, value in data.items():  # strict, field by field: "256" is not 256
        try:
            TypeAdapter(hints[key]).validate_python(value, strict=True)
        except ValidationError as e:
            err = e.errors()[0]
            raise ValueError(f"{source}: {'.'.join(map(str, (key, *err['loc'])))}: {err['msg']}") from None
    return data


def is_openai_api(base_url: str | None) -> bool:
    """Whether requests go to OpenAI's own API: no base URL (the SDK's default), or https on
    api.openai.com or one of its regional hosts (``eu.api.openai.com``). Pure."""
    if not base_url:
        return True
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    return parts.scheme == "https" and (host == OPENAI_API_HOST or host.endswith("." + OPENAI_API_HOST))


def key_for(config: ModelConfig, environ: typing.Mapping[str, str]) -> tuple[str | None, str]:
    """The key a model's requests carry and where it came from, or None and why none is sent
    (pure). ``$OPENAI_API_KEY`` stands in only for the default variable and only for OpenAI's own
    API: sent to any other endpoint (a local server, someone's proxy, a typo'd host) it would hand
    the user's OpenAI key to whoever runs it. A model given its own variable never falls back."""
    if key := environ.get(config.api_key_env):
        return key, f"${config.api_key_env}"
    if config.api_key_env != DEFAULT_KEY_ENV:
        return None, f"${config.api_key_env} is not set"
    if environ.get(OPENAI_KEY_ENV):
        if is_openai_api(config.base_url):
            return environ[OPENAI_KEY_ENV], f"${OPENAI_KEY_ENV}"
        return None, (f"${DEFAULT_KEY_ENV} is not set, and ${OPENAI_KEY_ENV} is sent only to OpenAI's own API "
                      f"({OPENAI_API_HOST}), not to {config.base_url}")
    return None, f"${DEFAULT_KEY_ENV} is not set"


NO_KEY = "not-needed"
"""What the client sends when no key is configured (local servers take any; the SDK needs one,
and given none it would read $OPENAI_API_KEY itself)."""


class OpenAIModel:
    kind = "model"

    def __init__(self, config: ModelConfig, api_key: str | None = None) -> None:
        """``api_key`` overrides the environment variable: a key minted per episode by the driver
        (verifiers' interception secret), never part of the recorded config."""
        from openai import OpenAI

        self.config = config
        self.name = config.model
        key, self.key_source = (api_key, "given by the driver") if api_key else key_for(config, os.environ)
        # The client's own retries are off: ours are visible, bounded and logged per step.
        self.client = OpenAI(api_key=key or NO_KEY, base_url=config.base_url, timeout=config.timeout, max_retries=0)
        self.sends_key = key is not None
        self.totals = {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "retries": 0}

    @property
    def where(self) -> str:
        return f"{self.config.base_url or self.client.base_url} (model {self.config.model!r})"

    def key_advice(self) -> str:
        """What to do when the endpoint refuses the key: which key was sent, or why none was."""
        if self.sends_key:
            return f"the key sent came from {self.key_source}; set ${self.config.api_key_env} to this endpoint's key"
        return f"no key was sent ({self.key_source}); set ${self.config.api_key_env} to this endpoint's key"

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages}
        if tools:  # a plain completion (e.g. the ask_human judge) sends none: endpoints refuse "tools": []
            kwargs["tools"] = tools
        if self.config.temperature is not None:
            kwargs["temperature"] = self.config.temperature
        if self.config.max_tokens:
            kwargs["max_tokens"] = self.config.max_tokens
        if self.config.extra_body:
            kwargs["extra_body"] = self.config.extra_body
        return kwargs

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
        import openai

        kwargs = self._request(messages, tools)
        retries = 0
        while True:
            started = time.monotonic()
            try:
                resp = self.client.chat.completions.create(**kwargs)
                break
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                    openai.APIConnectionError) as e:
                if retries >= self.config.max_retries:
                    raise EndpointError(f"model endpoint {self.where} failed after {retries} retries: "
                                        f"{type(e).__name__}: {e}") from e
                delay = self.config.backoff_base * (2 ** retries) * (0.5 + random.random() / 2)
                retries += 1
                self.totals["retries"] += 1
                time.sleep(delay)
            except openai.APIStatusError as e:  # 4xx other than 429: do not retry
                if e.status_code in (401, 403, 404):  # the key or the model name: configuration
                    advice = f"; {self.key_advice()}" if e.status_code in (401, 403) else ""
                    raise EndpointError(f"model endpoint {self.where} refused the request "
                                        f"(HTTP {e.status_code}): {e.message}{advice}") from e
                raise AgentError(f"model endpoint refused the request (HTTP {e.status_code}): {e.message}") from e
        if not resp.choices:
            raise AgentError("model endpoint returned no choices")
        msg = resp.choices[0].message
        message: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
        if msg.tool_calls:
            message["tool_calls"] = [{"id": tc.id, "type": "function",
                                      "function": {"name": tc.function.name, "arguments": tc.function.arguments}}
                                     for tc in msg.tool_calls]
        usage = {"latency_s": round(time.monotonic() - started, 3), "retries": retries}
        if resp.usage:
            p, c = resp.usage.prompt_tokens or 0, resp.usage.completion_tokens or 0
            usage.update(prompt_tokens=p, completion_tokens=c)
            usage.update(_cached_tokens(resp.usage))
            self.totals["prompt_tokens"] += p
            self.totals["completion_tokens"] += c
        self.totals["calls"] += 1
        return ModelResponse(message, usage)


def _cached_tokens(usage: Any) -> dict[str, int]:
    """Prompt tokens the endpoint served from its cache (priced apart by some providers)."""
    cached = int(getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0)
    return {"cached_tokens": cached} if cached else {}


_PING = {"type": "function", "function": {"name": "ping", "description": "Answer the health check.",
                                          "parameters": {"type": "object", "properties": {}, "required": []}}}


def preflight(config: ModelConfig, needs_tools: bool = True) -> str | None:
    """One cheap request before a run: the endpoint is reachable, accepts the key, knows the model
    and (``needs_tools``) takes tool definitions. Raises :class:`EndpointError` naming the URL and
    the problem; returns a warning (or None) when the model answered without calling the tool it
    was asked to. A judge (``needs_tools=False``) is asked a plain completion."""
    import openai

    model = OpenAIModel(ModelConfig(**{**config.__dict__, "max_retries": 0, "timeout": min(config.timeout, 30.0),
                                       "max_tokens": 32}))
    try:
        tools = {"tools": [_PING]} if needs_tools else {}
        resp = model.client.chat.completions.create(
            model=config.model, messages=[{"role": "user", "content": "Health check: call the ping tool." if needs_tools
                                           else "Health check: reply OK."}], max_tokens=32, **tools)
    except openai.APIConnectionError as e:
        raise EndpointError(f"cannot reach the model endpoint at {model.where}: {e}") from e
    except openai.AuthenticationError as e:
        raise EndpointError(f"the model endpoint at {model.where} refused the API key (HTTP 401): {e.message}; "
                            f"{model.key_advice()}") from e
    except openai.NotFoundError as e:
        raise EndpointError(f"the model endpoint at {model.where} does not know this model or path (HTTP 404): "
                            f"{e.message}; check --model and --base-url (it usually ends in /v1)") from e
    except openai.APIStatusError as e:
        if "tool" in str(e.message).lower():
            raise EndpointError(f"the model at {model.where} does not accept tool definitions (HTTP "
                                f"{e.status_code}): {e.message}; impasse needs tool calling") from e
        raise EndpointError(f"the model endpoint at {model.where} answered HTTP {e.status_code}: {e.message}") from e
    message = resp.choices[0].message if resp.choices else None
    if not needs_tools:
        return None if message is not None else f"the model at {model.where} returned no choices to the health check"
    if message is None or not message.tool_calls:
        return f"the model at {model.where} answered the health check without calling the tool it was asked to"
    return None
