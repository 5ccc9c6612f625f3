from tabulate import totals_row


def test_sums_and_label():
    rows = [['apples', 3, 1.5], ['pears', 2, 2.0]]
    assert totals_row(rows) == ['Total', 5, 3.5]


def test_label_replaces_numeric_first_column():
    assert totals_row([[1, 2], [3, 4]]) == ['Total', 6]


def test_blank_is_empty_string():
    rows = [['a', 1, 'x'], ['b', 2, 3]]
    assert totals_row(rows) == ['Total', 3, '']


def test_bools_are_not_numbers():
    rows = [['a', True, 1], ['b', False, 2]]
    assert totals_row(rows) == ['Total', '', 3]
