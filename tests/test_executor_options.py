"""``--executor-option KEY=VALUE``: values read as JSON when they parse; bad items named."""

import pytest

from impasse.cli.run import executor_settings
from impasse.run.ray import with_aliases


def test_values_are_json_when_they_parse():
    got = executor_settings(["cpus_per_episode=2", 'resources={"impasse": 1}', "image_cache=/nfs/impasse"])
    assert got == {"cpus_per_episode": 2, "resources": {"impasse": 1}, "image_cache": "/nfs/impasse"}


@pytest.mark.parametrize("bad", ["cpus_per_episode", "=2"])
def test_an_item_without_key_and_value_is_named(bad):
    with pytest.raises(ValueError, match="expected KEY=VALUE"):
        executor_settings([bad])


def test_image_aliases_replace_only_the_pinned_refs():
    rows = b'{"instance_id": "a", "image": "p-1@x"}\n{"instance_id": "b", "image": "q-1@y"}\n'
    out = with_aliases(rows, {"p-1@x": "p-1@z"})
    assert out == b'{"instance_id": "a", "image": "p-1@z"}\n{"instance_id": "b", "image": "q-1@y"}\n'
    assert with_aliases(rows, {}) == rows
