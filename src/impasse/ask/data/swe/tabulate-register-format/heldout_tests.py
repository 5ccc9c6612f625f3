import pytest
import tabulate as tb


def fmt():
    return tb.simple_separated_format(';')


def test_registered_and_used():
    tb.register_format('semi1', fmt())
    assert tb.tabulate([[1, 2]], tablefmt='semi1') == '1;2'


def test_listing_stays_sorted():
    tb.register_format('aaa_first', fmt())
    assert tb.tabulate_formats == sorted(tb.tabulate_formats)
    assert 'aaa_first' in tb.tabulate_formats


def test_existing_name_rejected():
    with pytest.raises(ValueError):
        tb.register_format('grid', fmt())
    tb.register_format('semi2', fmt())
    tb.register_format('semi2', fmt(), replace=True)


def test_non_tableformat_rejected():
    with pytest.raises(TypeError):
        tb.register_format('semi3', ';')
