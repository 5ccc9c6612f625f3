import pytest
from toolz import curry
from toolz.dicttoolz import pick


def test_data_last():
    assert pick(['b', 'a'], {'a': 1, 'b': 2, 'c': 3}) == {'b': 2, 'a': 1}
    assert list(pick(['b', 'a'], {'a': 1, 'b': 2}).keys()) == ['b', 'a']


def test_curried():
    assert curry(pick)(['a'])({'a': 1, 'b': 2}) == {'a': 1}


def test_missing_key_raises():
    with pytest.raises(KeyError):
        pick(['a', 'z'], {'a': 1})


def test_bare_string_is_one_key():
    assert pick('id', {'id': 1, 'i': 2, 'd': 3}) == {'id': 1}
