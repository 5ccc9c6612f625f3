from toolz.dicttoolz import deep_merge


def test_recursive():
    a = {'x': {'y': 1, 'z': 2}}
    b = {'x': {'z': 3}}
    assert deep_merge(a, b) == {'x': {'y': 1, 'z': 3}}
    assert a == {'x': {'y': 1, 'z': 2}}


def test_lists_concatenate():
    assert deep_merge({'p': [1, 2]}, {'p': [3]}) == {'p': [1, 2, 3]}


def test_none_does_not_overwrite():
    assert deep_merge({'a': 1, 'b': {'c': 2}}, {'a': None, 'b': {'c': None}, 'd': None}) == {
        'a': 1, 'b': {'c': 2}, 'd': None}


def test_single_sequence_argument():
    assert deep_merge([{'a': {'b': 1}}, {'a': {'c': 2}}]) == {'a': {'b': 1, 'c': 2}}
