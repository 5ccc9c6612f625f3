from toolz.dicttoolz import zip_dicts


def test_equal_values_left_out():
    assert list(zip_dicts({'a': 1, 'b': 2}, {'a': 1, 'b': 3})) == [('b', 2, 3)]


def test_common_keys_only():
    a = {'x': 1, 'y': 2, 'z': 3}
    b = {'z': 30, 'x': 10}
    assert list(zip_dicts(a, b)) == [('x', 1, 10), ('z', 3, 30)]


def test_first_dict_order():
    a = {'b': 1, 'a': 2}
    b = {'a': 3, 'b': 4}
    assert list(zip_dicts(a, b)) == [('b', 1, 4), ('a', 2, 3)]


def test_no_dicts():
    assert list(zip_dicts()) == []
