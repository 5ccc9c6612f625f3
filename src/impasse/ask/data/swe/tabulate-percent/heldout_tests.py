from tabulate import format_percent


def test_ratio_scaled():
    assert format_percent(0.425) == '42.5%'


def test_default_digits():
    assert format_percent(0.5) == '50.0%'
    assert format_percent(1) == '100.0%'


def test_digits_override():
    assert format_percent(0.12345, digits=2) == '12.35%'


def test_decimal_input():
    from decimal import Decimal
    assert format_percent(Decimal('0.425')) == '42.5%'
