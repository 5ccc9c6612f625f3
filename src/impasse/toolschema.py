"""OpenAI function-tool schemas generated from pydantic models: the argument model is the single
source of a tool's schema and of its validation. Pure (pydantic only)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = _inline(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
            return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return {k: _inline(v, defs) for k, v in node.items() if k not in ("title", "default", "$defs")}
    if isinstance(node, list):
        return [_inline(x, defs) for x in node]
    return node


def _require_all(node: dict[str, Any]) -> dict[str, Any]:
    if node.get("type") == "object" and "properties" in node:
        node["required"] = list(node["properties"])
        for child in node["properties"].values():
            _require_all(child)
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        _require_all(node["items"])
    return node


def parameters_schema(model: type[BaseModel], *, require_all: bool = False) -> dict[str, Any]:
    """The model's JSON Schema with sub-models inlined and pydantic's titles removed (what
    OpenAI-compatible endpoints accept). ``require_all`` lists every property as required,
    for tools whose arguments are judged rather than refused (the ticket)."""
    schema = model.model_json_schema()
    out = _inline(schema, schema.get("$defs", {}))
    out.setdefault("required", [])
    return _require_all(out) if require_all else out


def function_tool(name: str, description: str, model: type[BaseModel], *, require_all: bool = False) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": parameters_schema(model, require_all=require_all)}}
