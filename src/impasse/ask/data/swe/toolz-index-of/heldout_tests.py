from toolz.itertoolz import index_of


def test_value():
    assert index_of('b', iter('abcb')) == 1


def test_not_found():
    assert index_of('z', 'abc') == -1


def test_predicate():
    assert index_of(lambda n: n > 2, [1, 2, 3, 4]) == 2


def test_class_is_a_value():
    assert index_of(str, [1, str]) == 1
