from toolz.itertoolz import split_at


def is_header(line):
    return line.startswith('#')


def test_header_starts_chunk():
    lines = ['# a', 'x', 'y', '# b', 'z']
    assert list(split_at(is_header, lines)) == [['# a', 'x', 'y'], ['# b', 'z']]


def test_no_empty_chunks():
    assert list(split_at(lambda x: x == 0, [0, 1, 0, 0, 2])) == [[0, 1], [0], [0, 2]]


def test_empty_input():
    assert list(split_at(bool, [])) == []


def test_preamble_is_first_chunk():
    assert list(split_at(is_header, ['x', '# a', 'y'])) == [['x'], ['# a', 'y']]
