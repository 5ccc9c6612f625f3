import pytest
from toolz.itertoolz import windowed


def test_step_two():
    assert list(windowed(3, range(7), step=2)) == [(0, 1, 2), (2, 3, 4), (4, 5, 6)]


def test_tail_emitted():
    assert list(windowed(3, range(8), step=2)) == [(0, 1, 2), (2, 3, 4), (4, 5, 6), (6, 7)]


def test_bad_step():
    with pytest.raises(ValueError):
        windowed(2, [1, 2, 3], step=0)


def test_step_beyond_n_skips():
    assert list(windowed(2, range(8), step=3)) == [(0, 1), (3, 4), (6, 7)]
