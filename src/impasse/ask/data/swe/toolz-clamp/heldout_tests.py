import pytest
from toolz.utils import clamp


def test_basic():
    assert clamp(0, 10, 12) == 10
    assert clamp(0, 10, -3) == 0
    assert clamp(0, 10, 5) == 5


def test_inverted_bounds_raise():
    with pytest.raises(ValueError):
        clamp(10, 0, 5)


def test_nan_rejected():
    with pytest.raises(ValueError):
        clamp(0, 10, float('nan'))


def test_open_bounds_are_none():
    assert clamp(None, 10, 12) == 10
    assert clamp(0, None, 99) == 99
    assert clamp(None, None, -7) == -7
