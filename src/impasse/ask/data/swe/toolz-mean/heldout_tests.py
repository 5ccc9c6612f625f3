from toolz.itertoolz import mean


def test_plain():
    assert mean([1, 2, 3, 4]) == 2.5


def test_missing_none_and_nan():
    assert mean([1, None, 3, float('nan')]) == 2.0


def test_all_missing_or_empty():
    assert mean([]) is None
    assert mean([None, float('nan')]) is None


def test_text_readings_parsed():
    assert mean(['1', ' ', 3]) == 2.0
