from toolz.dicttoolz import flatten_dict, get_in


def test_separator():
    assert flatten_dict({'a': {'b': 1}, 'c': 2}) == {'a/b': 1, 'c': 2}


def test_deep_and_nonstr_keys():
    assert flatten_dict({1: {2: {3: 'x'}}}) == {'1/2/3': 'x'}


def test_custom_sep():
    assert flatten_dict({'a': {'b': 1}}, sep='.') == {'a.b': 1}


def test_empty_mapping_kept():
    assert flatten_dict({'a': {}, 'b': {'c': {}}}) == {'a': {}, 'b/c': {}}


def test_get_in_roundtrip():
    flat = flatten_dict({'x': {'y': 5}})
    assert all(isinstance(k, str) for k in flat)
    assert get_in(['x/y'], flat) == 5
