import tabulate
from tabulate import truncate


def test_short_unchanged():
    assert truncate('abc', 5) == 'abc'


def test_ellipsis_counts_in_width():
    assert truncate('hello world', 8) == 'hello w\u2026'
    assert len(truncate('hello world', 8)) == 8


def test_whitespace_follows_module_setting():
    assert truncate('  hi  ', 10) == 'hi'
    tabulate.PRESERVE_WHITESPACE = True
    try:
        assert truncate('  hi  ', 10) == '  hi  '
    finally:
        tabulate.PRESERVE_WHITESPACE = False


def test_numbers():
    assert truncate(123456, 4) == '123\u2026'
