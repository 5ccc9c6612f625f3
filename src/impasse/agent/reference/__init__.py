"""Reference agents (scripted baselines): ground truth for the annotator and the offline main job."""

from impasse.agent.reference.base import ReferenceAgent, fix_edits, observations
from impasse.agent.reference.profiles import PROFILES
from impasse.handoff import reference as _handoff_profiles  # noqa: F401 - registers weak/strong

for _name, _cls in (("targeted-asker", "TargetedAsker"), ("silent-guesser", "SilentGuesser"), ("spammer", "Spammer"),
                    ("broad-asker", "BroadAsker"), ("obvious-only", "ObviousOnly")):
    PROFILES.add(_name, f"impasse.ask.agents:{_cls}")  # the ask suite's reference agents (both domains)

__all__ = ["PROFILES", "ReferenceAgent", "fix_edits", "observations"]
