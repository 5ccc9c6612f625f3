"""The handoff CLI's difficulty-bucket option and the reference profiles' reading depth."""

from typer.testing import CliRunner

from impasse.cli import app
from impasse.handoff.reference import Strong, Weak, defect_line


def test_unknown_bucket_is_named_with_the_choices(glom_task, tmp_path):
    res = CliRunner().invoke(app, ["handoff", "--tasks", glom_task.instance_id, "--buckets", "size",
                                   "--out", str(tmp_path)])
    assert res.exit_code != 0
    assert "--buckets 'size'" in res.output and "outcome" in res.output
    assert not (tmp_path / "episodes").exists()  # refused before any episode ran


def test_reading_steps_follow_the_defect_position(glom_task):
    line = defect_line(glom_task.patch)
    assert line > 1 and f"@@ -{line}," in glom_task.patch
    weak, strong = Weak(glom_task), Strong(glom_task)
    # weak: 300-line chunks from the top (1..4); strong: 1000-line chunks after the first (0..2)
    assert weak.slow_steps == max(1, min(4, -(-line // 300)))
    assert strong.slow_steps == max(0, min(2, -(-line // 1000) - 1))
    deep = glom_task.model_copy(update={"patch": glom_task.patch.replace(f"@@ -{line},", "@@ -2153,", 1)})
    assert (Weak(deep).slow_steps, Strong(deep).slow_steps) == (4, 2)
    shallow = glom_task.model_copy(update={"patch": glom_task.patch.replace(f"@@ -{line},", "@@ -83,", 1)})
    assert (Weak(shallow).slow_steps, Strong(shallow).slow_steps) == (1, 0)
