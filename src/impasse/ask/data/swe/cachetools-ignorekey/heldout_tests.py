import pytest
from cachetools.keys import hashkey, ignoring, typedkey


def test_ignored_kwarg():
    key = ignoring('timeout')
    assert key(1, timeout=5) == key(1, timeout=9) == hashkey(1)
    assert key(1, x=2, timeout=3) == hashkey(1, x=2)


def test_names_must_be_strings_and_given():
    with pytest.raises(TypeError):
        ignoring(42)
    with pytest.raises(TypeError):
        ignoring()


def test_typed_keyword():
    key = ignoring('timeout', typed=True)
    assert key(1, timeout=5) == typedkey(1)
    assert key(1, timeout=5) != key(1.0, timeout=5)
