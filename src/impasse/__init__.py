"""impasse: measure and fix the moment a coding agent should stop and hand off.

The pure-logic parts (``impasse.monitor``, ``impasse.tickets``, ``impasse.annotate``) import
nothing from the sandbox or the model clients, so a harness can use them on their own.
"""

__version__ = "0.1.0"
