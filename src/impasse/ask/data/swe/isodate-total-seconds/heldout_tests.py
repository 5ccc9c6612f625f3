from datetime import timedelta

import pytest
from isodate import Duration, parse_duration
from isodate.isoduration import duration_seconds


def test_timedelta():
    assert duration_seconds(parse_duration('P1DT2H')) == 93600


def test_fraction_kept():
    assert duration_seconds(parse_duration('PT1.5S')) == 1.5
    assert isinstance(duration_seconds(timedelta(seconds=3)), float)


def test_duration_without_months():
    assert duration_seconds(Duration(days=1)) == 86400


def test_months_rejected():
    with pytest.raises(ValueError):
        duration_seconds(Duration(months=1))
    with pytest.raises(ValueError):
        duration_seconds(parse_duration('P1Y'))


def test_negative_keeps_sign():
    assert duration_seconds(parse_duration('-PT5S')) == -5.0
