"""Reference agents (scripted baselines): ground truth for the annotator and the offline main job."""

from impasse.agent.reference.base import ReferenceAgent, fix_edits, observations
from impasse.agent.reference.profiles import PROFILES
from impasse.handoff import reference as _handoff_profiles  # noqa: F401 - registers weak/strong

__all__ = ["PROFILES", "ReferenceAgent", "fix_edits", "observations"]
