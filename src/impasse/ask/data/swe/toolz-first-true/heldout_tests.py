from toolz.itertoolz import first_true


def test_truthiness():
    assert first_true([0, '', 3, 4]) == 3


def test_pred():
    assert first_true([1, 2, 3], pred=lambda x: x > 1) == 2


def test_default_is_false():
    assert first_true([0, None]) is False
    assert first_true([], default='d') == 'd'
