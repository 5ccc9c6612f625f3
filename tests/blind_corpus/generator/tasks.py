"""Invented repair tasks (package, target file, bug, tests) used by gen.py."""


class Task:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.dep = kw.get("dep")  # (import_name, dist, version) or None
        self.pkg_dir = self.target_file.rsplit("/", 1)[0] if "/" in self.target_file else ""
        self.src_layout = self.target_file.startswith("src/")
        self.tests_all = [(f, n) for f, names in self.tests for n in names]
        self.n_tests = len(self.tests_all)
        self.fail_file = self.failing.split("::")[0]
        self.fail_name = self.failing.split("::")[1]
        self.test_dir = self.fail_file.rsplit("/", 1)[0] if "/" in self.fail_file else "."
        self.fixed_src = self.target_src.replace(self.old, self.new, 1)
        assert self.old in self.target_src, self.package
        self.target_size = len(self.target_src.encode())
        self.target_abs = "/workspace/repo/" + self.target_file
        self.fail_abs = "/workspace/repo/" + self.fail_file


TASKS = []


def T(**kw):
    TASKS.append(Task(**kw))


T(package="tinylib", import_name="tinylib", version="0.3.1",
  target_file="tinylib/core.py", func="clamp",
  top=["LICENSE", "README.md", "pyproject.toml", "tests", "tinylib"],
  pkg_files=[("__init__.py", 118), ("core.py", None), ("_compat.py", 402)],
  issue="clamp() returns the lower bound when x is above the range: clamp(9, 0, 5) gives 0, expected 5.",
  target_src='''"""Small numeric helpers."""


def clamp(x, lo, hi):
    """Return x limited to the closed range [lo, hi]."""
    if lo > hi:
        raise ValueError("lo must not exceed hi")
    if x < lo:
        return lo
    if x > hi:
        return lo
    return x


def chunk(seq, n):
    """Split seq into lists of length n (the last may be shorter)."""
    if n <= 0:
        raise ValueError("n must be positive")
    return [list(seq[i:i + n]) for i in range(0, len(seq), n)]
''',
  old="    if x > hi:\n        return lo", new="    if x > hi:\n        return hi",
  tests=[("tests/test_core.py", ["test_clamp_inside", "test_clamp_low", "test_clamp_high", "test_clamp_bad_range",
                                 "test_chunk_even", "test_chunk_rest", "test_chunk_zero"])],
  failing="tests/test_core.py::test_clamp_high",
  test_import="from tinylib import chunk, clamp", init_import="from .core import chunk, clamp",
  fail_block='''    def test_clamp_high():
>       assert clamp(9, 0, 5) == 5
E       assert 0 == 5
E        +  where 0 = clamp(9, 0, 5)''', fail_line=14, fail_exc="AssertionError",
  fail_short="assert 0 == 5",
  test_src='''import pytest

from tinylib import chunk, clamp


def test_clamp_inside():
    assert clamp(3, 0, 5) == 3


def test_clamp_low():
    assert clamp(-2, 0, 5) == 0


def test_clamp_high():
    assert clamp(9, 0, 5) == 5


def test_clamp_bad_range():
    with pytest.raises(ValueError):
        clamp(1, 5, 0)


def test_chunk_even():
    assert chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]


def test_chunk_rest():
    assert chunk([1, 2, 3], 2) == [[1, 2], [3]]


def test_chunk_zero():
    with pytest.raises(ValueError):
        chunk([1], 0)
''',
  assert_line="    assert clamp(9, 0, 5) == 5", weak_line="    assert clamp(9, 0, 5) is not None",
  fixture_name="bounds", fixture_body="    return (0, 5)")

T(package="quillparse", import_name="quillparse", version="0.6.1",
  target_file="src/quillparse/lexer.py", func="tokenize",
  top=["CHANGELOG.md", "LICENSE", "README.rst", "pyproject.toml", "src", "tests"],
  pkg_files=[("__init__.py", 211), ("lexer.py", None), ("tokens.py", 688), ("format.py", 2140)],
  issue="tokenize() keeps tab and newline characters as PUNCT tokens; all whitespace should be dropped.",
  target_src='''import re

from .tokens import Token, TokenType

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def tokenize(text):
    """Split SQL-ish text into tokens, dropping whitespace."""
    pos = 0
    out = []
    while pos < len(text):
        ch = text[pos]
        if ch == " ":
            pos += 1
            continue
        m = _WORD.match(text, pos)
        if m:
            out.append(Token(TokenType.NAME, m.group()))
            pos = m.end()
            continue
        out.append(Token(TokenType.PUNCT, ch))
        pos += 1
    return out
''',
  old='        if ch == " ":', new="        if ch.isspace():",
  tests=[("tests/test_lexer.py", ["test_simple_names", "test_punct", "test_spaces_skipped", "test_tabs_and_newlines_skipped", "test_empty"]),
         ("tests/test_format.py", ["test_upper_keywords", "test_indent", "test_strip_comments", "test_roundtrip"])],
  failing="tests/test_lexer.py::test_tabs_and_newlines_skipped",
  test_import="from quillparse.lexer import tokenize", init_import="from .lexer import tokenize",
  fail_block='''    def test_tabs_and_newlines_skipped():
>       assert [t.value for t in tokenize("a\\tb\\nc")] == ["a", "b", "c"]
E       AssertionError: assert ['a', '\\t', 'b', '\\n', 'c'] == ['a', 'b', 'c']
E         
E         At index 1 diff: '\\t' != 'b'
E         Left contains 2 more items, first extra item: 'b'
E         Use -v to get more diff''', fail_line=22, fail_exc="AssertionError",
  fail_short="AssertionError: assert ['a', '\\t', 'b', '\\n', 'c'] == ['a', 'b', 'c']",
  test_src='''from quillparse.lexer import tokenize


def values(text):
    return [t.value for t in tokenize(text)]


def test_simple_names():
    assert values("select a") == ["select", "a"]


def test_punct():
    assert values("a,b") == ["a", ",", "b"]


def test_spaces_skipped():
    assert values("  a  ") == ["a"]


def test_tabs_and_newlines_skipped():
    assert [t.value for t in tokenize("a\\tb\\nc")] == ["a", "b", "c"]


def test_empty():
    assert tokenize("") == []
''',
  assert_line='    assert [t.value for t in tokenize("a\\tb\\nc")] == ["a", "b", "c"]',
  weak_line='    assert tokenize("a\\tb\\nc")',
  fixture_name="sample_sql", fixture_body='    return "select a,\\tb from t"')

T(package="cachebox", import_name="cachebox", version="8.0.2",
  target_file="src/cachebox/lru.py", func="LRUCache",
  top=["LICENSE", "README.md", "pyproject.toml", "setup.cfg", "src", "tests", "tox.ini"],
  pkg_files=[("__init__.py", 164), ("lru.py", None), ("ttl.py", 1730), ("keys.py", 512)],
  issue="LRUCache evicts the most recently inserted key instead of the least recently used one.",
  target_src='''from collections import OrderedDict


class LRUCache:
    def __init__(self, maxsize=128):
        self.maxsize = maxsize
        self._data = OrderedDict()

    def __getitem__(self, key):
        value = self._data[key]
        self._data.move_to_end(key)
        return value

    def __setitem__(self, key, value):
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self.maxsize:
            self._data.popitem(last=True)

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        return key in self._data
''',
  old="            self._data.popitem(last=True)", new="            self._data.popitem(last=False)",
  tests=[("tests/test_lru.py", ["test_get_set", "test_len", "test_evicts_least_recent", "test_get_refreshes", "test_contains"]),
         ("tests/test_ttl.py", ["test_expire", "test_timer", "test_ttl_len"]),
         ("tests/test_keys.py", ["test_hashkey", "test_typedkey"])],
  failing="tests/test_lru.py::test_evicts_least_recent",
  test_import="from cachebox import LRUCache", init_import="from .lru import LRUCache",
  fail_block='''    def test_evicts_least_recent():
        c = LRUCache(maxsize=2)
        c["a"] = 1
        c["b"] = 2
        c["c"] = 3
>       assert "a" not in c
E       AssertionError: assert 'a' not in <cachebox.lru.LRUCache object at 0x7f2c1a9e3d50>''', fail_line=21,
  fail_exc="AssertionError",
  fail_short="AssertionError: assert 'a' not in <cachebox.lru.LRUCache object at 0x7f2c1a9e3d50>",
  test_src='''from cachebox import LRUCache


def test_get_set():
    c = LRUCache(maxsize=2)
    c["a"] = 1
    assert c["a"] == 1


def test_len():
    c = LRUCache(maxsize=2)
    c["a"] = 1
    c["b"] = 2
    assert len(c) == 2


def test_evicts_least_recent():
    c = LRUCache(maxsize=2)
    c["a"] = 1
    c["b"] = 2
    c["c"] = 3
    assert "a" not in c
    assert "c" in c
''',
  assert_line='    assert "a" not in c', weak_line='    assert len(c) == 2',
  fixture_name="small_cache", fixture_body="    return LRUCache(maxsize=2)")

T(package="datespan", import_name="datespan", version="2.1.0",
  target_file="datespan/parser.py", func="parse_duration",
  top=["README.md", "pyproject.toml", "datespan", "tests"],
  pkg_files=[("__init__.py", 96), ("parser.py", None), ("fmt.py", 1204)],
  dep=("six", "six", "1.17.0"), dep_line=3,
  issue="parse_duration('2h') returns 120 seconds; hours should count 3600 seconds each.",
  target_src='''import re

import six

_UNITS = {"s": 1, "m": 60, "h": 60, "d": 86400}
_PART = re.compile(r"(\\d+)([smhd])")


def parse_duration(text):
    """Parse '1h30m' style strings into seconds."""
    if not isinstance(text, six.string_types):
        raise TypeError("duration must be a string")
    total = 0
    for amount, unit in _PART.findall(text.strip().lower()):
        total += int(amount) * _UNITS[unit]
    return total
''',
  old='"h": 60,', new='"h": 3600,',
  tests=[("tests/test_parser.py", ["test_seconds", "test_minutes", "test_hours", "test_mixed", "test_type_error"]),
         ("tests/test_fmt.py", ["test_format_short", "test_format_long", "test_zero"])],
  failing="tests/test_parser.py::test_hours",
  test_import="from datespan import parse_duration", init_import="from .parser import parse_duration",
  fail_block='''    def test_hours():
>       assert parse_duration("2h") == 7200
E       assert 120 == 7200
E        +  where 120 = parse_duration('2h')''', fail_line=13, fail_exc="AssertionError",
  fail_short="assert 120 == 7200",
  test_src='''import pytest

from datespan import parse_duration


def test_seconds():
    assert parse_duration("45s") == 45


def test_minutes():
    assert parse_duration("3m") == 180


def test_hours():
    assert parse_duration("2h") == 7200


def test_mixed():
    assert parse_duration("1d1s") == 86401
''',
  assert_line='    assert parse_duration("2h") == 7200', weak_line='    assert parse_duration("2h") > 0',
  fixture_name="durations", fixture_body='    return ["45s", "3m", "2h"]')

T(package="tomlette", import_name="tomlette", version="0.15.2",
  target_file="tomlette/items.py", func="render_value",
  top=["LICENSE", "README.md", "pyproject.toml", "tests", "tomlette"],
  pkg_files=[("__init__.py", 140), ("items.py", None), ("parser.py", 5311), ("container.py", 2980)],
  issue="render_value(True) produces 'True'; TOML booleans must be lowercase.",
  target_src='''def render_value(value):
    """Render a Python value as a TOML literal."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\\\", "\\\\\\\\").replace('"', '\\\\"')
        return f'"{escaped}"'
    if isinstance(value, list):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    raise TypeError(f"cannot render {type(value).__name__}")
''',
  old="        return str(value)", new='        return "true" if value else "false"',
  tests=[("tests/test_items.py", ["test_render_int", "test_render_float", "test_render_bool", "test_render_str", "test_render_list", "test_render_bad"]),
         ("tests/test_parser.py", ["test_parse_table", "test_parse_array", "test_parse_inline", "test_parse_comment"]),
         ("tests/test_container.py", ["test_setitem", "test_delitem"])],
  failing="tests/test_items.py::test_render_bool",
  test_import="from tomlette.items import render_value", init_import="from .items import render_value",
  fail_block='''    def test_render_bool():
>       assert render_value(True) == "true"
E       AssertionError: assert 'True' == 'true'
E         
E         - true
E         ? ^
E         + True
E         ? ^''', fail_line=12, fail_exc="AssertionError",
  fail_short="AssertionError: assert 'True' == 'true'",
  test_src='''from tomlette.items import render_value


def test_render_int():
    assert render_value(3) == "3"


def test_render_float():
    assert render_value(1.5) == "1.5"


def test_render_bool():
    assert render_value(True) == "true"
    assert render_value(False) == "false"


def test_render_str():
    assert render_value('a"b') == '"a\\\\"b"'
''',
  assert_line='    assert render_value(True) == "true"', weak_line='    assert render_value(True) in ("true", "True")',
  fixture_name="doc", fixture_body='    return {"a": 1, "b": [1, 2]}')

T(package="slugwise", import_name="slugwise", version="9.2.0",
  target_file="slugwise/slugify.py", func="slugify",
  top=["LICENSE", "README.md", "setup.py", "setup.cfg", "slugwise", "tests"],
  pkg_files=[("__init__.py", 77), ("slugify.py", None), ("special.py", 903)],
  dep=("text_unidecode", "text-unidecode", "1.3"), dep_line=3,
  issue="slugify() joins words with '_' by default; the documented default separator is '-'.",
  target_src='''import re

from text_unidecode import unidecode

_STRIP = re.compile(r"[^a-z0-9]+")


def slugify(text, separator="_", max_length=0):
    text = unidecode(text).lower()
    slug = _STRIP.sub(separator, text).strip(separator)
    if max_length:
        slug = slug[:max_length].rstrip(separator)
    return slug
''',
  old='separator="_"', new='separator="-"',
  tests=[("tests/test_slugify.py", ["test_default_separator", "test_custom_separator", "test_unicode", "test_max_length", "test_strip"]),
         ("tests/test_special.py", ["test_pre_translations", "test_stopwords"])],
  failing="tests/test_slugify.py::test_default_separator",
  test_import="from slugwise import slugify", init_import="from .slugify import slugify",
  fail_block='''    def test_default_separator():
>       assert slugify("Hello World") == "hello-world"
E       AssertionError: assert 'hello_world' == 'hello-world'
E         
E         - hello-world
E         ?      ^
E         + hello_world
E         ?      ^''', fail_line=5, fail_exc="AssertionError",
  fail_short="AssertionError: assert 'hello_world' == 'hello-world'",
  test_src='''from slugwise import slugify


def test_default_separator():
    assert slugify("Hello World") == "hello-world"


def test_custom_separator():
    assert slugify("Hello World", separator=".") == "hello.world"


def test_unicode():
    assert slugify("Café crème") == "cafe-creme"
''',
  assert_line='    assert slugify("Hello World") == "hello-world"', weak_line='    assert slugify("Hello World")',
  fixture_name="titles", fixture_body='    return ["Hello World", "Café crème"]')

T(package="mdlite", import_name="mdlite", version="4.3.0",
  target_file="mdlite/inline.py", func="escape_html",
  top=["LICENSE", "README.md", "mdlite", "pyproject.toml", "tests"],
  pkg_files=[("__init__.py", 203), ("inline.py", None), ("block.py", 4127), ("renderer.py", 2260)],
  dep=("mdurl", "mdurl", "0.1.2"), dep_line=1,
  issue="escape_html() leaves '&' unescaped, so 'a & b' renders as invalid HTML.",
  target_src='''import mdurl

_ESCAPES = {"<": "&lt;", ">": "&gt;", '"': "&quot;"}


def escape_html(text):
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def render_link(label, href):
    url = mdurl.encode(href)
    return f'<a href="{escape_html(url)}">{escape_html(label)}</a>'
''',
  old='_ESCAPES = {"<": "&lt;",', new='_ESCAPES = {"&": "&amp;", "<": "&lt;",',
  tests=[("tests/test_inline.py", ["test_escape_lt", "test_escape_ampersand", "test_escape_quote", "test_link"]),
         ("tests/test_block.py", ["test_paragraph", "test_heading", "test_list", "test_code_fence", "test_blockquote"])],
  failing="tests/test_inline.py::test_escape_ampersand",
  test_import="from mdlite.inline import escape_html, render_link", init_import="from .inline import render_link",
  fail_block='''    def test_escape_ampersand():
>       assert escape_html("a & b") == "a &amp; b"
E       AssertionError: assert 'a & b' == 'a &amp; b'
E         
E         - a &amp; b
E         ?    ----
E         + a & b''', fail_line=9, fail_exc="AssertionError",
  fail_short="AssertionError: assert 'a & b' == 'a &amp; b'",
  test_src='''from mdlite.inline import escape_html, render_link


def test_escape_lt():
    assert escape_html("<b>") == "&lt;b&gt;"


def test_escape_ampersand():
    assert escape_html("a & b") == "a &amp; b"


def test_link():
    assert render_link("x", "/a b") == '<a href="/a%20b">x</a>'
''',
  assert_line='    assert escape_html("a & b") == "a &amp; b"', weak_line='    assert "&" in escape_html("a & b")',
  fixture_name="md_text", fixture_body='    return "# Title\\n\\nsome *text*"')

T(package="glomlet", import_name="glomlet", version="25.12.0",
  target_file="glomlet/core.py", func="glom",
  top=["LICENSE", "README.md", "glomlet", "pyproject.toml", "tox.ini"],
  pkg_files=[("__init__.py", 88), ("core.py", None), ("mutation.py", 3311), ("test", None)],
  dep=("attr", "attrs", "26.1.0"), dep_line=1,
  issue="glom(target, spec, default=...) returns None on a missing path instead of the given default.",
  target_src='''import attr


@attr.s(frozen=True)
class Path:
    parts = attr.ib(converter=tuple)

    @classmethod
    def from_text(cls, text):
        return cls(text.split("."))


def glom(target, spec, default=None):
    path = Path.from_text(spec) if isinstance(spec, str) else spec
    cur = target
    for part in path.parts:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return None
    return cur
''',
  old="            return None", new="            return default",
  tests=[("glomlet/test/test_basic.py", ["test_simple", "test_nested", "test_default_returned", "test_path_obj"]),
         ("glomlet/test/test_mutation.py", ["test_assign", "test_delete", "test_assign_missing"])],
  failing="glomlet/test/test_basic.py::test_default_returned",
  test_import="from glomlet import glom", init_import="from .core import Path, glom",
  fail_block='''    def test_default_returned():
>       assert glom({"a": {}}, "a.b", default=0) == 0
E       assert None == 0
E        +  where None = glom({'a': {}}, 'a.b', default=0)''', fail_line=13, fail_exc="AssertionError",
  fail_short="assert None == 0",
  test_src='''from glomlet import Path, glom


def test_simple():
    assert glom({"a": 1}, "a") == 1


def test_nested():
    assert glom({"a": {"b": 2}}, "a.b") == 2


def test_default_returned():
    assert glom({"a": {}}, "a.b", default=0) == 0
''',
  assert_line='    assert glom({"a": {}}, "a.b", default=0) == 0', weak_line='    glom({"a": {}}, "a.b", default=0)',
  fixture_name="target", fixture_body='    return {"a": {"b": 2}}')

T(package="inflectr", import_name="inflectr", version="7.6.0",
  target_file="inflectr/plural.py", func="plural",
  top=["LICENSE", "README.md", "inflectr", "pyproject.toml", "tests"],
  pkg_files=[("__init__.py", 131), ("plural.py", None), ("numbers.py", 2875), ("py.typed", 0)],
  dep=("more_itertools", "more-itertools", "11.2.1"), dep_line=1,
  issue="plural('day') gives 'daies'; words ending in vowel + 'y' should just add 's'.",
  target_src='''from more_itertools import always_iterable

_VOWELS = set("aeiou")


def plural(word):
    if word.endswith("y"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def plural_all(words):
    return [plural(w) for w in always_iterable(words)]
''',
  old='    if word.endswith("y"):', new='    if word.endswith("y") and word[-2:-1] not in _VOWELS:',
  tests=[("tests/test_plural.py", ["test_regular", "test_consonant_y", "test_vowel_y", "test_sibilant", "test_plural_all"]),
         ("tests/test_numbers.py", ["test_ordinal", "test_number_to_words", "test_group"])],
  failing="tests/test_plural.py::test_vowel_y",
  test_import="from inflectr import plural, plural_all", init_import="from .plural import plural, plural_all",
  fail_block='''    def test_vowel_y():
>       assert plural("day") == "days"
E       AssertionError: assert 'daies' == 'days'
E         
E         - days
E         + daies
E         ?   ++''', fail_line=13, fail_exc="AssertionError",
  fail_short="AssertionError: assert 'daies' == 'days'",
  test_src='''from inflectr import plural, plural_all


def test_regular():
    assert plural("cat") == "cats"


def test_consonant_y():
    assert plural("city") == "cities"


def test_vowel_y():
    assert plural("day") == "days"
    assert plural("key") == "keys"
''',
  assert_line='    assert plural("day") == "days"', weak_line='    assert plural("day").startswith("da")',
  fixture_name="words", fixture_body='    return ["cat", "city", "day"]')

T(package="tabgrid", import_name="tabgrid", version="0.10.0",
  target_file="tabgrid/formats.py", func="pad_cell",
  top=["LICENSE", "README.md", "setup.py", "tabgrid", "test"],
  pkg_files=[("__init__.py", 255), ("formats.py", None), ("core.py", 8817), ("widths.py", 1460)],
  issue="pad_cell('ab', 5) returns 4 characters; cells must be padded to exactly the requested width.",
  target_src='''def pad_cell(text, width, align="left"):
    """Pad text to width; width counts characters."""
    gap = width - len(text) - 1
    if gap <= 0:
        return text
    if align == "right":
        return " " * gap + text
    if align == "center":
        left = gap // 2
        return " " * left + text + " " * (gap - left)
    return text + " " * gap
''',
  old="    gap = width - len(text) - 1", new="    gap = width - len(text)",
  tests=[("test/test_output.py", ["test_plain", "test_pad_left", "test_pad_right", "test_pad_center", "test_grid", "test_headers"]),
         ("test/test_widths.py", ["test_min_width", "test_multiline"]),
         ("test/test_api.py", ["test_signature", "test_formats_list"])],
  failing="test/test_output.py::test_pad_left",
  test_import="from tabgrid.formats import pad_cell", init_import="from .core import tabulate",
  fail_block='''    def test_pad_left():
>       assert pad_cell("ab", 5) == "ab   "
E       AssertionError: assert 'ab  ' == 'ab   '
E         
E         - ab   
E         ?     -
E         + ab  ''', fail_line=10, fail_exc="AssertionError",
  fail_short="AssertionError: assert 'ab  ' == 'ab   '",
  test_src='''from tabgrid import tabulate
from tabgrid.formats import pad_cell


def test_plain():
    assert tabulate([[1, 2]], tablefmt="plain") == "1  2"


def test_pad_left():
    assert pad_cell("ab", 5) == "ab   "


def test_pad_right():
    assert pad_cell("ab", 5, align="right") == "   ab"
''',
  assert_line='    assert pad_cell("ab", 5) == "ab   "', weak_line='    assert pad_cell("ab", 5).startswith("ab")',
  fixture_name="rows", fixture_body='    return [["a", 1], ["bb", 22]]')

T(package="isoduration", import_name="isoduration", version="0.7.2",
  target_file="src/isoduration/parse.py", func="parse_duration",
  top=["LICENSE", "README.rst", "pyproject.toml", "src", "tests"],
  pkg_files=[("__init__.py", 150), ("parse.py", None), ("format.py", 1633)],
  issue="parse_duration('P2W') gives 10 days; a week is 7 days.",
  target_src='''import re
from datetime import timedelta

_RX = re.compile(
    r"^P(?:(?P<weeks>\\d+)W)?(?:(?P<days>\\d+)D)?"
    r"(?:T(?:(?P<hours>\\d+)H)?(?:(?P<minutes>\\d+)M)?(?:(?P<seconds>\\d+)S)?)?$"
)


def parse_duration(text):
    m = _RX.match(text)
    if not m:
        raise ValueError(f"not an ISO 8601 duration: {text!r}")
    parts = {k: int(v) for k, v in m.groupdict().items() if v}
    days = parts.get("days", 0) + parts.get("weeks", 0) * 5
    return timedelta(days=days, hours=parts.get("hours", 0),
                     minutes=parts.get("minutes", 0), seconds=parts.get("seconds", 0))
''',
  old='parts.get("weeks", 0) * 5', new='parts.get("weeks", 0) * 7',
  tests=[("tests/test_parse.py", ["test_days", "test_weeks", "test_time", "test_invalid"]),
         ("tests/test_format.py", ["test_format_days", "test_format_time", "test_roundtrip"])],
  failing="tests/test_parse.py::test_weeks",
  test_import="from isoduration import parse_duration", init_import="from .parse import parse_duration",
  fail_block='''    def test_weeks():
>       assert parse_duration("P2W") == timedelta(days=14)
E       AssertionError: assert datetime.timedelta(days=10) == datetime.timedelta(days=14)
E        +  where datetime.timedelta(days=10) = parse_duration('P2W')
E        +  and   datetime.timedelta(days=14) = timedelta(days=14)''', fail_line=11, fail_exc="AssertionError",
  fail_short="AssertionError: assert datetime.timedelta(days=10) == datetime.timedelta(days=14)",
  test_src='''from datetime import timedelta

from isoduration import parse_duration


def test_days():
    assert parse_duration("P3D") == timedelta(days=3)


def test_weeks():
    assert parse_duration("P2W") == timedelta(days=14)


def test_time():
    assert parse_duration("PT1H2M") == timedelta(hours=1, minutes=2)
''',
  assert_line='    assert parse_duration("P2W") == timedelta(days=14)', weak_line='    assert parse_duration("P2W") > timedelta(0)',
  fixture_name="week", fixture_body="    return timedelta(days=7)")

T(package="jsonpatchlet", import_name="jsonpatchlet", version="1.48",
  target_file="jsonpatchlet.py", func="apply_patch",
  top=["AUTHORS", "COPYING", "README.md", "jsonpatchlet.py", "pyproject.toml", "tests.py"],
  pkg_files=[],
  dep=("jsonpointer", "jsonpointer", "3.0.0"), dep_line=3,
  issue="An 'add' operation with path '/a/-' raises ValueError instead of appending to the list.",
  target_src='''import copy

from jsonpointer import JsonPointer


def apply_patch(doc, patch):
    doc = copy.deepcopy(doc)
    for op in patch:
        ptr = JsonPointer(op["path"])
        parent, key = ptr.to_last(doc)
        if op["op"] == "add":
            if isinstance(parent, list):
                parent.insert(int(key), op["value"])
            else:
                parent[key] = op["value"]
        elif op["op"] == "remove":
            del parent[key]
        elif op["op"] == "replace":
            parent[key] = op["value"]
    return doc
''',
  old='                parent.insert(int(key), op["value"])',
  new='                parent.insert(len(parent) if key == "-" else int(key), op["value"])',
  tests=[("tests.py", ["test_add_key", "test_add_index", "test_add_append", "test_remove", "test_replace", "test_nested", "test_copy"])],
  failing="tests.py::test_add_append",
  test_import="from jsonpatchlet import apply_patch", init_import=None,
  fail_block="""    def test_add_append():
>       assert apply_patch({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}]) == {"a": [1, 2]}

tests.py:13: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

doc = {'a': [1]}, patch = [{'op': 'add', 'path': '/a/-', 'value': 2}]

    def apply_patch(doc, patch):
        doc = copy.deepcopy(doc)
        for op in patch:
            ptr = JsonPointer(op["path"])
            parent, key = ptr.to_last(doc)
            if op["op"] == "add":
                if isinstance(parent, list):
>                   parent.insert(int(key), op["value"])
E                   ValueError: invalid literal for int() with base 10: '-'""", fail_line=None,
  fail_loc="jsonpatchlet.py:13: ValueError", fail_exc="ValueError",
  fail_short="ValueError: invalid literal for int() with base 10: '-'",
  test_src='''from jsonpatchlet import apply_patch


def test_add_key():
    assert apply_patch({}, [{"op": "add", "path": "/a", "value": 1}]) == {"a": 1}


def test_add_index():
    assert apply_patch({"a": [1]}, [{"op": "add", "path": "/a/0", "value": 0}]) == {"a": [0, 1]}


def test_add_append():
    assert apply_patch({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}]) == {"a": [1, 2]}
''',
  assert_line='    assert apply_patch({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}]) == {"a": [1, 2]}',
  weak_line='    apply_patch({"a": [1]}, [{"op": "add", "path": "/a/0", "value": 2}])',
  fixture_name="doc", fixture_body='    return {"a": [1]}')

T(package="toolbelt", import_name="toolbelt", version="1.2.0",
  target_file="toolbelt/itertoolz.py", func="partition_all",
  top=["LICENSE.txt", "README.rst", "setup.cfg", "setup.py", "toolbelt"],
  pkg_files=[("__init__.py", 310), ("itertoolz.py", None), ("dicttoolz.py", 4410), ("functoolz.py", 6120), ("tests", None)],
  issue="partition_all(2, [1, 2, 3]) drops the trailing partial tuple (3,).",
  target_src='''def partition_all(n, seq):
    """Partition seq into tuples of length n; the final tuple may be shorter."""
    it = iter(seq)
    while True:
        block = []
        for _ in range(n):
            try:
                block.append(next(it))
            except StopIteration:
                return
        yield tuple(block)
''',
  old="            except StopIteration:\n                return",
  new="            except StopIteration:\n                if block:\n                    yield tuple(block)\n                return",
  tests=[("toolbelt/tests/test_itertoolz.py", ["test_partition_all", "test_partition_all_exact", "test_take", "test_drop", "test_unique"]),
         ("toolbelt/tests/test_dicttoolz.py", ["test_merge", "test_valmap", "test_keyfilter"]),
         ("toolbelt/tests/test_functoolz.py", ["test_compose", "test_curry", "test_pipe"])],
  failing="toolbelt/tests/test_itertoolz.py::test_partition_all",
  test_import="from toolbelt.itertoolz import partition_all", init_import="from .itertoolz import partition_all",
  fail_block='''    def test_partition_all():
>       assert list(partition_all(2, [1, 2, 3])) == [(1, 2), (3,)]
E       assert [(1, 2)] == [(1, 2), (3,)]
E         
E         Right contains one more item: (3,)
E         Use -v to get more diff''', fail_line=6, fail_exc="AssertionError",
  fail_short="assert [(1, 2)] == [(1, 2), (3,)]",
  test_src='''from toolbelt.itertoolz import drop, partition_all, take, unique


def test_partition_all():
    assert list(partition_all(2, [1, 2, 3])) == [(1, 2), (3,)]


def test_partition_all_exact():
    assert list(partition_all(2, [1, 2])) == [(1, 2)]
''',
  assert_line="    assert list(partition_all(2, [1, 2, 3])) == [(1, 2), (3,)]",
  weak_line="    assert list(partition_all(2, [1, 2, 3]))",
  fixture_name="seq", fixture_body="    return [1, 2, 3]")

T(package="humanizr", import_name="humanizr", version="4.17.0",
  target_file="src/humanizr/number.py", func="intcomma",
  top=["LICENSE", "README.md", "pyproject.toml", "src", "tests"],
  pkg_files=[("__init__.py", 233), ("number.py", None), ("time.py", 5520), ("filesize.py", 1310)],
  issue="intcomma(-1234567) loses the minus sign and returns '1,234,567'.",
  target_src='''def intcomma(value, sep=","):
    """Format an integer with thousands separators: 1234567 -> '1,234,567'."""
    text = str(int(value))
    head, digits = "", text
    if text.startswith("-"):
        head, digits = "-", text[1:]
    groups = []
    while digits:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    return sep.join(groups)
''',
  old="    return sep.join(groups)", new="    return head + sep.join(groups)",
  tests=[("tests/test_number.py", ["test_intcomma", "test_intcomma_small", "test_intcomma_negative", "test_intcomma_sep"]),
         ("tests/test_time.py", ["test_naturaldelta", "test_naturaltime", "test_precisedelta"]),
         ("tests/test_filesize.py", ["test_naturalsize", "test_binary"])],
  failing="tests/test_number.py::test_intcomma_negative",
  test_import="from humanizr import intcomma", init_import="from .number import intcomma",
  fail_block='''    def test_intcomma_negative():
>       assert intcomma(-1234567) == "-1,234,567"
E       AssertionError: assert '1,234,567' == '-1,234,567'
E         
E         - -1,234,567
E         ? -
E         + 1,234,567''', fail_line=13, fail_exc="AssertionError",
  fail_short="AssertionError: assert '1,234,567' == '-1,234,567'",
  test_src='''from humanizr import intcomma


def test_intcomma():
    assert intcomma(1234567) == "1,234,567"


def test_intcomma_small():
    assert intcomma(12) == "12"


def test_intcomma_negative():
    assert intcomma(-1234567) == "-1,234,567"
''',
  assert_line='    assert intcomma(-1234567) == "-1,234,567"', weak_line='    assert intcomma(-1234567).endswith("567")',
  fixture_name="big", fixture_body="    return 1234567")

T(package="termtable", import_name="termtable", version="0.4.2",
  target_file="termtable/render.py", func="ljust",
  top=["README.md", "pyproject.toml", "termtable", "tests"],
  pkg_files=[("__init__.py", 95), ("render.py", None), ("borders.py", 1180)],
  dep=("wcwidth", "wcwidth", "0.2.13"), dep_line=1,
  issue="ljust() pads East Asian wide characters by code points, so columns with CJK text are misaligned.",
  target_src='''from wcwidth import wcswidth


def display_width(text):
    width = wcswidth(text)
    return len(text) if width < 0 else width


def ljust(text, width):
    return text + " " * (width - len(text))
''',
  old="    return text + \" \" * (width - len(text))", new="    return text + \" \" * (width - display_width(text))",
  tests=[("tests/test_render.py", ["test_width_ascii", "test_width_wide", "test_ljust_ascii", "test_ljust_wide"]),
         ("tests/test_borders.py", ["test_ascii_border", "test_box_border"])],
  failing="tests/test_render.py::test_ljust_wide",
  test_import="from termtable.render import display_width, ljust", init_import="from .render import ljust",
  fail_block='''    def test_ljust_wide():
>       assert ljust("日本", 6) == "日本  "
E       AssertionError: assert '日本    ' == '日本  '
E         
E         - 日本  
E         + 日本    
E         ?     ++''', fail_line=17, fail_exc="AssertionError",
  fail_short="AssertionError: assert '日本    ' == '日本  '",
  test_src='''from termtable.render import display_width, ljust


def test_width_ascii():
    assert display_width("abc") == 3


def test_width_wide():
    assert display_width("日本") == 4


def test_ljust_ascii():
    assert ljust("ab", 4) == "ab  "


def test_ljust_wide():
    assert ljust("日本", 6) == "日本  "
''',
  assert_line='    assert ljust("日本", 6) == "日本  "', weak_line='    assert ljust("日本", 6).startswith("日本")',
  fixture_name="cells", fixture_body='    return ["ab", "日本"]')

T(package="dateroll", import_name="dateroll", version="1.1.3",
  target_file="dateroll/rolling.py", func="month_end",
  top=["LICENSE", "README.md", "dateroll", "pyproject.toml", "tests"],
  pkg_files=[("__init__.py", 140), ("rolling.py", None), ("calendars.py", 2711)],
  dep=("dateutil", "python-dateutil", "2.9.0.post0"), dep_line=1,
  issue="month_end(date(2024, 2, 10)) returns 2024-03-01 instead of 2024-02-29.",
  target_src='''from dateutil.relativedelta import relativedelta


def add_months(d, n):
    return d + relativedelta(months=n)


def month_end(d):
    nxt = add_months(d.replace(day=1), 1)
    return nxt.replace(day=1)
''',
  old="    return nxt.replace(day=1)", new="    return nxt - relativedelta(days=1)",
  tests=[("tests/test_rolling.py", ["test_add_months", "test_add_months_clamp", "test_month_end", "test_month_end_dec"]),
         ("tests/test_calendars.py", ["test_weekend", "test_holiday", "test_business_days"])],
  failing="tests/test_rolling.py::test_month_end",
  test_import="from dateroll import add_months, month_end", init_import="from .rolling import add_months, month_end",
  fail_block='''    def test_month_end():
>       assert month_end(date(2024, 2, 10)) == date(2024, 2, 29)
E       AssertionError: assert datetime.date(2024, 3, 1) == datetime.date(2024, 2, 29)
E        +  where datetime.date(2024, 3, 1) = month_end(datetime.date(2024, 2, 10))
E        +    where datetime.date(2024, 2, 10) = date(2024, 2, 10)
E        +  and   datetime.date(2024, 2, 29) = date(2024, 2, 29)''', fail_line=15, fail_exc="AssertionError",
  fail_short="AssertionError: assert datetime.date(2024, 3, 1) == datetime.date(2024, 2, 29)",
  test_src='''from datetime import date

from dateroll import add_months, month_end


def test_add_months():
    assert add_months(date(2024, 1, 15), 1) == date(2024, 2, 15)


def test_add_months_clamp():
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)


def test_month_end():
    assert month_end(date(2024, 2, 10)) == date(2024, 2, 29)
''',
  assert_line="    assert month_end(date(2024, 2, 10)) == date(2024, 2, 29)",
  weak_line="    assert month_end(date(2024, 2, 10)).year == 2024",
  fixture_name="leap_day", fixture_body="    return date(2024, 2, 29)")

T(package="inifmt", import_name="inifmt", version="0.9.0",
  target_file="inifmt/parser.py", func="parse_line",
  top=["README.md", "inifmt", "pyproject.toml", "tests"],
  pkg_files=[("__init__.py", 120), ("parser.py", None), ("writer.py", 1502)],
  issue="parse_line('name = demo  ') keeps the whitespace around the value.",
  target_src='''def parse_line(line):
    """Parse 'key = value' into a (key, value) pair; comments start with ; or #."""
    line = line.strip()
    if not line or line[0] in ";#":
        return None
    key, _, value = line.partition("=")
    return key.strip(), value
''',
  old="    return key.strip(), value", new="    return key.strip(), value.strip()",
  tests=[("tests/test_parser.py", ["test_comment", "test_blank", "test_key_value", "test_value_stripped", "test_no_equals"]),
         ("tests/test_writer.py", ["test_write_section", "test_write_escape"])],
  failing="tests/test_parser.py::test_value_stripped",
  test_import="from inifmt.parser import parse_line", init_import="from .parser import parse_line",
  fail_block='''    def test_value_stripped():
>       assert parse_line("name = demo  ") == ("name", "demo")
E       AssertionError: assert ('name', ' demo') == ('name', 'demo')
E         
E         At index 1 diff: ' demo' != 'demo'
E         Use -v to get more diff''', fail_line=17, fail_exc="AssertionError",
  fail_short="AssertionError: assert ('name', ' demo') == ('name', 'demo')",
  test_src='''from inifmt.parser import parse_line


def test_comment():
    assert parse_line("; note") is None


def test_blank():
    assert parse_line("   ") is None


def test_key_value():
    assert parse_line("a=b") == ("a", "b")


def test_value_stripped():
    assert parse_line("name = demo  ") == ("name", "demo")
''',
  assert_line='    assert parse_line("name = demo  ") == ("name", "demo")',
  weak_line='    assert parse_line("name = demo  ")[0] == "name"',
  fixture_name="ini_text", fixture_body='    return "[main]\\nname = demo\\n"')

T(package="signedtok", import_name="signedtok", version="2.2.0",
  target_file="src/signedtok/encoding.py", func="b64decode",
  top=["CHANGES.rst", "LICENSE.txt", "README.md", "pyproject.toml", "src", "tests"],
  pkg_files=[("__init__.py", 301), ("encoding.py", None), ("signer.py", 6102), ("serializer.py", 3377)],
  issue="b64decode() fails with 'Incorrect padding' for inputs whose length is not a multiple of 3.",
  target_src='''import base64


def b64encode(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def b64decode(data: bytes) -> bytes:
    pad = b"=" * (-len(data) % 3)
    return base64.urlsafe_b64decode(data + pad)
''',
  old="(-len(data) % 3)", new="(-len(data) % 4)",
  tests=[("tests/test_encoding.py", ["test_encode", "test_decode", "test_roundtrip_lengths"]),
         ("tests/test_signer.py", ["test_sign", "test_unsign", "test_bad_signature", "test_key_derivation"]),
         ("tests/test_serializer.py", ["test_dumps_loads", "test_salt"])],
  failing="tests/test_encoding.py::test_roundtrip_lengths",
  test_import="from signedtok.encoding import b64decode, b64encode", init_import="from .signer import Signer",
  fail_block='''    def test_roundtrip_lengths():
        for n in range(10):
            raw = bytes(range(n))
>           assert b64decode(b64encode(raw)) == raw

tests/test_encoding.py:15: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 
src/signedtok/encoding.py:10: in b64decode
    return base64.urlsafe_b64decode(data + pad)
/usr/lib/python3.11/base64.py:134: in urlsafe_b64decode
    return b64decode(s)
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

s = b'AAE=', altchars = None, validate = False

    def b64decode(s, altchars=None, validate=False):
        ...
        s = _bytes_from_decode_data(s)
        if altchars is not None:
            altchars = _bytes_from_decode_data(altchars)
            assert len(altchars) == 2, repr(altchars)
            s = s.translate(bytes.maketrans(altchars, b'+/'))
>       return binascii.a2b_base64(s, strict_mode=validate)
E       binascii.Error: Incorrect padding''', fail_line=None,
  fail_loc="/usr/lib/python3.11/base64.py:88: Error", fail_exc="Error",
  fail_short="binascii.Error: Incorrect padding",
  test_src='''from signedtok.encoding import b64decode, b64encode


def test_encode():
    assert b64encode(b"ab") == b"YWI"


def test_decode():
    assert b64decode(b"YWI") == b"ab"


def test_roundtrip_lengths():
    for n in range(10):
        raw = bytes(range(n))
        assert b64decode(b64encode(raw)) == raw
''',
  assert_line="        assert b64decode(b64encode(raw)) == raw", weak_line="        b64encode(raw)",
  fixture_name="raw_bytes", fixture_body="    return bytes(range(7))")

BY_NAME = {t.package: t for t in TASKS}
DEP_TASKS = [t for t in TASKS if t.dep]
