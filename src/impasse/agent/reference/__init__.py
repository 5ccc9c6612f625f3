"""Reference agents (scripted baselines): ground truth for the annotator and the offline main job."""

from impasse.agent.reference.base import ReferenceAgent, fix_edits, observations
from impasse.agent.reference.profiles import PROFILES

__all__ = ["PROFILES", "ReferenceAgent", "fix_edits", "observations"]
