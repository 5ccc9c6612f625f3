import cachetools
from cachetools import LRUCache


def test_percentage():
    c = LRUCache(maxsize=8)
    c.update({1: 1, 2: 2})
    assert cachetools.fill(c) == 25.0


def test_size_units():
    c = LRUCache(maxsize=10, getsizeof=len)
    c['a'] = 'xxxx'
    assert cachetools.fill(c) == 40.0


def test_zero_maxsize():
    assert cachetools.fill(LRUCache(maxsize=0)) == 100.0
