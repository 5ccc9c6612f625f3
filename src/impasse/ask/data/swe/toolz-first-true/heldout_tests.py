from toolz.itertoolz import first_true


def test_truthiness():
    assert first_true([0, '', 3, 4]) == 3


def test_pred():
    assert first_true([1, 2, 3], pred=lambda x: x > 1) == 2


def test_default_is_false():
    assert first_true([0, None]) is False
    assert first_true([], default='d') == 'd'


def test_plain_value_pred_is_equality():
    assert first_true([1, 2, 3], pred=2) == 2
    assert first_true([3, int, 'x'], pred=int) is int


def test_mapping_searches_values():
    assert first_true({'a': 0, 'b': 5, 'c': 7}) == 5
