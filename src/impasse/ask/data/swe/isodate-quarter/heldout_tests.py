from datetime import date

from isodate.isodates import quarter_stamp


def test_label_format():
    assert quarter_stamp(date(2024, 5, 10)) == '2024-Q1'


def test_fiscal_year_starts_april():
    assert quarter_stamp(date(2024, 3, 31)) == '2023-Q4'
    assert quarter_stamp(date(2024, 12, 1)) == '2024-Q3'
