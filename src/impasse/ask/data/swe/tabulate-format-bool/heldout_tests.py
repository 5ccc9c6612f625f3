from tabulate import format_bool


def test_words():
    assert format_bool(True) == 'yes'
    assert format_bool(False) == 'no'


def test_unrecorded_is_blank():
    assert format_bool(None) == ''


def test_text_flags():
    assert format_bool('false') == 'no'
    assert format_bool('TRUE') == 'yes'
