"""Command effects: what a tool call does to files, programs and the import path, whichever
program does it (see :mod:`impasse.effects.model` for the vocabulary, :mod:`.shell` for the
parser and :mod:`.python` for inline Python)."""

from impasse.effects.edits import FileDiff, diff_edits, sed_edits
from impasse.effects.model import Edit, Effect, Effects, resolve
from impasse.effects.shell import effects_of

__all__ = ["Edit", "Effect", "Effects", "FileDiff", "diff_edits", "effects_of", "resolve", "sed_edits"]
