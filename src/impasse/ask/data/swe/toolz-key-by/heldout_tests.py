from toolz.itertoolz import key_by


def test_function_key():
    assert key_by(len, ['a', 'bb']) == {1: 'a', 2: 'bb'}


def test_first_wins():
    assert key_by(len, ['a', 'b', 'cc']) == {1: 'a', 2: 'cc'}


def test_non_callable_key_is_getter():
    people = [{'id': 1, 'n': 'x'}, {'id': 2, 'n': 'y'}]
    assert key_by('id', people) == {1: people[0], 2: people[1]}


def test_none_key_left_out():
    rows = [{'id': None, 'n': 'x'}, {'id': 1, 'n': 'y'}]
    assert key_by('id', rows) == {1: rows[1]}
