from toolz.itertoolz import most_common


def test_items_only():
    assert most_common('abracadabra', 2) == ['a', 'b']


def test_ties_sorted():
    assert most_common(['c', 'b', 'a', 'c', 'b', 'a', 'z']) == ['a', 'b', 'c', 'z']


def test_all():
    assert most_common([3, 1, 3]) == [3, 1]


def test_n_validation():
    import pytest
    assert most_common('aab', 0) == []
    with pytest.raises(ValueError):
        most_common('aab', -1)
