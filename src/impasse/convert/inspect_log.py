"""inspect_ai eval logs (``.eval`` archives or ``.json``), read with inspect_ai's own reader.

Each sample is one episode: ``sample.messages`` holds the assistant's ``tool_calls``
(``id``, ``function``, ``arguments``) and the ``tool`` messages answering them
(``tool_call_id``, ``content``, ``error``). ``sample.metadata`` may name the task
(``instance_id``, a SWE-bench ``patch``, or impasse's own ``target_file`` / ``package``).
inspect's ``bash`` tool records no exit code. Needs ``impasse[inspect]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from impasse.convert.base import Call, ConvertError, Episode, safe_id, target_from_patch

PATTERNS = ("*.eval", "*.json")


def read(path: Path) -> list[Episode]:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as e:
        raise ConvertError("reading inspect_ai logs needs inspect_ai: pip install 'impasse[inspect]'") from e
    try:
        log = read_eval_log(str(path))
    except Exception as e:  # noqa: BLE001 - inspect raises many kinds; the message names the file
        raise ConvertError(f"{path}: not an inspect_ai eval log ({type(e).__name__}: {e})") from e
    model = getattr(log.eval, "model", "")
    return [_episode(path, s, model) for s in (log.samples or [])]


def _episode(path: Path, sample: Any, model: str) -> Episode:
    meta = dict(sample.metadata or {})
    iid = str(meta.get("instance_id") or sample.id)
    target = {k: str(meta[k]) for k in ("package", "target_file", "import_name") if meta.get(k)}
    target = target or target_from_patch(meta.get("patch"))
    ep = Episode(path, safe_id(f"inspect-{path.stem}-{sample.id}-{sample.epoch}"), instance_id=iid,
                 agent=f"inspect/{model}" if model else "inspect", target=target)
    calls: dict[str, Call] = {}
    for m in sample.messages:
        if m.role == "assistant":
            ep.message("assistant", m.text)
            for tc in m.tool_calls or []:
                args = dict(tc.arguments or {})
                name = f"{tc.function} {args['command']}" if tc.function == "text_editor" and "command" in args \
                    else tc.function
                calls[tc.id] = ep.call(Call(name, args))
        elif m.role == "tool":
            c = calls.get(m.tool_call_id or "")
            if c is not None:
                c.failed = m.error is not None
                c.output = m.error.message if m.error is not None else m.text
        else:
            ep.message(m.role, m.text)
    limit = getattr(sample, "limit", None)
    ep.status = "error" if sample.error else ("step_limit" if limit else "success")
    return ep
