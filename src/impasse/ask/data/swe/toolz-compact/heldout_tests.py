from toolz.itertoolz import compact


def test_only_none_removed():
    assert list(compact([0, None, 1, '', None, False, 2.5])) == [0, 1, '', False, 2.5]


def test_failed_reads_removed():
    assert list(compact([1.5, float('nan'), None, 0.0])) == [1.5, 0.0]


def test_stays_lazy():
    result = compact(iter([1, None, 2]))
    assert iter(result) is result
    assert next(result) == 1
