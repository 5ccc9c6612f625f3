"""Runs: a suite's episodes (tasks x conditions x interfaces x agents), one trajectory each,
executed by an executor into a run directory, resumable.

- :mod:`impasse.run.config`: what decides a run (``RunConfig``); its episodes are ``EpisodeSpec``s
  planned by the suite (:mod:`impasse.suites`);
- :mod:`impasse.run.plan`: planning and the manifest;
- :mod:`impasse.run.executor`: executors (local process pool; Ray), summary and predictions;
- :mod:`impasse.run.episode`: one planned episode in a worker (its Env, its agent, the loop);
  :mod:`impasse.store.rundir`: the directory layout.
"""

from impasse.run.config import RunConfig
from impasse.run.episode import run_episode, summarize
from impasse.run.executor import execute
from impasse.run.plan import check, create_run, plan, read_run, suite_of
from impasse.suites.base import EpisodeSpec

__all__ = ["EpisodeSpec", "RunConfig", "check", "create_run", "execute", "plan", "read_run", "run_episode", "suite_of",
           "summarize"]
