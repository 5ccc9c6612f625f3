from tabulate import escape_markdown_cell


def test_pipe_escaped():
    assert escape_markdown_cell('a|b') == 'a\\|b'


def test_emphasis_untouched():
    assert escape_markdown_cell('*bold* _it_') == '*bold* _it_'


def test_newline_becomes_br():
    assert escape_markdown_cell('one\ntwo') == 'one<br>two'
    assert escape_markdown_cell('a\r\nb') == 'a<br>b'


def test_backslash_doubled():
    assert escape_markdown_cell('C:\\dir') == 'C:\\\\dir'
    assert escape_markdown_cell('end\\|') == 'end\\\\\\|'


def test_none_is_blank():
    assert escape_markdown_cell(None) == ''
    assert escape_markdown_cell(3) == '3'
