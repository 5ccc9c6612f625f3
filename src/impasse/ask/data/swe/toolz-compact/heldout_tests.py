from toolz.itertoolz import compact


def test_only_none_removed():
    assert list(compact([0, None, 1, '', None, False, 2.5])) == [0, 1, '', False, 2.5]
