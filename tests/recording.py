"""What a trajectory file holds as durably recorded: its complete lines (a torn last line, a write
a kill interrupted, is not recorded). Crash tests compare these before and after a resume."""

from __future__ import annotations

from pathlib import Path


def complete_lines(path: Path) -> list[str]:
    text = path.read_text()
    lines = text.splitlines()
    return lines[:-1] if text and not text.endswith("\n") else lines


def recorded(run_dir: Path) -> dict[str, list[str]]:
    """episode id -> its recorded lines."""
    return {p.stem: complete_lines(p) for p in (run_dir / "episodes").glob("*.jsonl")}
