"""Runs: a suite's episodes (tasks x conditions x interfaces x agents), one trajectory each,
executed by an executor into a run directory, resumable.

- :mod:`impasse.run.config`: what decides a run (``RunConfig``) and its episodes (``EpisodeSpec``);
- :mod:`impasse.run.plan`: planning and the manifest;
- :mod:`impasse.run.executor`: executors (local process pool; Ray), summary and predictions;
- :mod:`impasse.episode`: one episode in phases; :mod:`impasse.store.rundir`: the directory layout.
"""

from impasse.episode import run_episode, summarize
from impasse.run.config import EpisodeSpec, RunConfig
from impasse.run.executor import execute
from impasse.run.plan import check, create_run, plan, read_run

__all__ = ["EpisodeSpec", "RunConfig", "check", "create_run", "execute", "plan", "read_run", "run_episode",
           "summarize"]
