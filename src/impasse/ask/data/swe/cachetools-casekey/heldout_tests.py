from cachetools.keys import casekey


def test_case_insensitive():
    assert casekey('Hello', x='WORLD') == casekey('hello', x='world')
    assert casekey(1, 'A') != casekey(2, 'a')


def test_casefold():
    assert casekey('STRASSE') == casekey('straße')


def test_nested_tuples():
    assert casekey(('A', ('B', 1))) == casekey(('a', ('b', 1)))


def test_bytes_folded():
    assert casekey(b'ABC') == casekey(b'abc')
