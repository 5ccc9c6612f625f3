import pytest
from toolz.functoolz import retry


def flaky(fail_times, exc=ValueError):
    calls = []

    def f(x):
        calls.append(x)
        if len(calls) <= fail_times:
            raise exc(len(calls))
        return x * 2
    return f, calls


def test_n_counts_all_calls():
    f, calls = flaky(2)
    assert retry(3, f)(5) == 10
    assert len(calls) == 3
    g, gcalls = flaky(3)
    with pytest.raises(ValueError):
        retry(3, g)(1)
    assert len(gcalls) == 3


def test_restrict_exceptions():
    f, calls = flaky(1, KeyError)
    with pytest.raises(KeyError):
        retry(5, f, on=(ValueError,))(1)
    assert len(calls) == 1
    g, _ = flaky(1, ValueError)
    assert retry(5, g, on=(ValueError,))(2) == 4


def test_zero_attempts_rejected():
    f, calls = flaky(0)
    with pytest.raises(ValueError):
        retry(0, f)
    assert calls == []
