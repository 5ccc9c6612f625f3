from collections import OrderedDict

import pytest
from toolz.dicttoolz import invert


def test_basic():
    d = {'a': 1, 'b': 2}
    assert invert(d) == {1: 'a', 2: 'b'}
    assert d == {'a': 1, 'b': 2}


def test_duplicate_values_raise():
    with pytest.raises(ValueError):
        invert({'a': 1, 'b': 1})


def test_factory():
    out = invert({'a': 1, 'b': 2}, factory=OrderedDict)
    assert isinstance(out, OrderedDict)
    assert list(out.items()) == [(1, 'a'), (2, 'b')]


def test_list_value_becomes_tuple():
    assert invert({'a': [1, 2], 'b': 3}) == {(1, 2): 'a', 3: 'b'}
