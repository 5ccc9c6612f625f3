"""Command effects: what a tool call does to files, programs and the import path, whichever
program does it (see :mod:`impasse.effects.model` for the vocabulary, :mod:`.shell` for the
parser and :mod:`.python` for inline Python)."""

from impasse.effects.model import Edit, Effect, Effects, resolve
from impasse.effects.shell import effects_of, sed_edits

__all__ = ["Edit", "Effect", "Effects", "effects_of", "resolve", "sed_edits"]
