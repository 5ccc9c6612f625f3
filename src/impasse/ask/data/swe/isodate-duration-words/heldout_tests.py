from datetime import timedelta

from isodate.isoduration import duration_words


def test_two_parts():
    assert duration_words(timedelta(days=1, hours=2)) == '1 day and 2 hours'


def test_three_parts():
    assert duration_words(timedelta(hours=3, minutes=1, seconds=5)) == '3 hours, 1 minute and 5 seconds'


def test_single():
    assert duration_words(timedelta(minutes=2)) == '2 minutes'


def test_zero():
    assert duration_words(timedelta(0)) == '0 seconds'
    assert duration_words(timedelta(microseconds=300)) == '0 seconds'


def test_negative():
    assert duration_words(timedelta(hours=-2)) == '2 hours ago'
