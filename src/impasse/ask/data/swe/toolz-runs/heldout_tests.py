from toolz.itertoolz import runs


def test_counts_first():
    assert list(runs('aaabcc')) == [(3, 'a'), (1, 'b'), (2, 'c')]


def test_empty():
    assert list(runs([])) == []


def test_key_representative_is_last():
    words = ['apple', 'avocado', 'banana', 'blueberry', 'cherry']
    assert list(runs(words, key=lambda w: w[0])) == [(2, 'avocado'), (2, 'blueberry'), (1, 'cherry')]


def test_long_run_split():
    assert list(runs('a' * 300 + 'b')) == [(255, 'a'), (45, 'a'), (1, 'b')]
