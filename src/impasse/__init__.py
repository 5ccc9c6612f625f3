"""impasse: measure and fix the moment a coding agent should stop and hand off.

The pure-logic parts (``impasse.monitor``, ``impasse.tickets``, ``impasse.annotate``) import
nothing from the sandbox or the model clients, so a harness can use them on their own.
"""

__version__ = "0.1.0"


def git_commit() -> str:
    """The commit this installation runs from (empty outside a git checkout): recorded in every
    manifest and release, so a result can be traced to the code that made it."""
    import subprocess
    from pathlib import Path

    try:
        out = subprocess.run(["git", "-C", str(Path(__file__).parent), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip()
    except OSError:
        return ""
