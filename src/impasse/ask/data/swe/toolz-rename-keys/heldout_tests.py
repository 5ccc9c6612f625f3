import pytest
from toolz.dicttoolz import rename_keys


def test_rename_returns_new_dict():
    d = {'a': 1, 'b': 2}
    out = rename_keys(d, {'a': 'x'})
    assert out == {'x': 1, 'b': 2}
    assert d == {'a': 1, 'b': 2}


def test_collision_raises():
    with pytest.raises(ValueError):
        rename_keys({'a': 1, 'b': 2}, {'a': 'b'})


def test_callable_mapping():
    assert rename_keys({'a': 1, 'b': 2}, str.upper) == {'A': 1, 'B': 2}
