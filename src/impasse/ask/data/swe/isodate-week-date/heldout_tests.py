from datetime import date

from isodate.isodates import week_stamp


def test_compact_with_weekday():
    assert week_stamp(date(2024, 1, 31)) == '2024W053'


def test_week_year_at_boundary():
    assert week_stamp(date(2024, 12, 30)) == '2025W011'
    assert week_stamp(date(2021, 1, 1)) == '2020W535'


def test_aware_datetime_in_utc():
    from datetime import datetime, timedelta, timezone
    d = datetime(2024, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=2)))
    assert week_stamp(d) == '2023W527'
