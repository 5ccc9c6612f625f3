"""The ask suite: tasks whose blockers can only be resolved by asking a (simulated) human.

Tasks use HiL-Bench's public per-task layout (see :mod:`impasse.ask.taskdir`); our own tasks add a
``kind`` (missing | ambiguous | contradictory) and a ``location`` to every blocker. Ask-F1, pass@k
and the shaped reward are in :mod:`impasse.ask.scoring` (pure). The text-to-SQL domain lives in
:mod:`impasse.ask.sql`.
"""
