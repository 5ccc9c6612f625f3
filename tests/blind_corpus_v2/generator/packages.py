"""Invented toy packages used as repair targets (not real projects' code).

Each package: files (buggy state), target file, the fix (old, new), tests that fail
before the fix, an optional third-party runtime dependency, and an issue text.
"""
import textwrap

D = textwrap.dedent

PKGS = {}


def pkg(**kw):
    PKGS[kw["name"]] = kw
    return kw


# ---------------------------------------------------------------- ledgerline
pkg(
    name="ledgerline", layout="src", dep=None,
    target="src/ledgerline/totals.py",
    fix=("    for i in range(1, len(entries)):\n", "    for i in range(len(entries)):\n"),
    test_file="tests/test_totals.py",
    failing=["test_running_balance_single_entry", "test_running_balance_with_opening",
             "test_running_balance_length_matches"],
    func="running_balance",
    issue="running_balance() drops the first ledger entry: `running_balance([Entry('rent', Decimal('-700'))])` returns `[]` instead of `[Decimal('-700')]`. With an opening balance the first balance is also missing.",
    files={
        ".env.example": "LEDGER_DB_URL=sqlite:///ledger.db\nLEDGER_DB_PASSWORD=example-password\n",
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "ledgerline"
            version = "0.4.1"
            description = "Running balances over simple ledger entries"
            requires-python = ">=3.9"

            [tool.setuptools.packages.find]
            where = ["src"]

            [tool.pytest.ini_options]
            testpaths = ["tests"]
            '''),
        "README.md": D('''\
            # ledgerline

            Tiny helpers for running balances over ledger entries.

            ```python
            >>> from decimal import Decimal
            >>> from ledgerline import Entry, running_balance
            >>> running_balance([Entry("pay", Decimal("10")), Entry("rent", Decimal("-4"))])
            [Decimal('10'), Decimal('6')]
            ```

            Run the tests with `python -m pytest`.
            '''),
        "src/ledgerline/__init__.py": D('''\
            """ledgerline: tiny helpers for running balances over ledger entries."""
            from .entries import Entry, parse_entry
            from .totals import net_total, running_balance

            __all__ = ["Entry", "parse_entry", "net_total", "running_balance"]
            __version__ = "0.4.1"
            '''),
        "src/ledgerline/entries.py": D('''\
            from dataclasses import dataclass
            from decimal import Decimal


            @dataclass(frozen=True)
            class Entry:
                label: str
                amount: Decimal


            def parse_entry(line: str) -> Entry:
                """Parse ``"label: 12.50"`` into an Entry."""
                label, _, raw = line.partition(":")
                if not raw.strip():
                    raise ValueError(f"no amount in {line!r}")
                return Entry(label.strip(), Decimal(raw.strip()))
            '''),
        "src/ledgerline/totals.py": D('''\
            from decimal import Decimal
            from typing import Iterable, List

            from .entries import Entry


            def net_total(entries: Iterable[Entry]) -> Decimal:
                """Sum of all entry amounts."""
                return sum((e.amount for e in entries), Decimal("0"))


            def running_balance(entries: List[Entry], opening: Decimal = Decimal("0")) -> List[Decimal]:
                """Return the balance after each entry, starting from ``opening``."""
                balances = []
                current = opening
                for i in range(1, len(entries)):
                    current += entries[i].amount
                    balances.append(current)
                return balances
            '''),
        "tests/__init__.py": "",
        "tests/test_entries.py": D('''\
            from decimal import Decimal

            import pytest

            from ledgerline import parse_entry


            def test_parse_entry():
                e = parse_entry("coffee: 3.20")
                assert e.label == "coffee"
                assert e.amount == Decimal("3.20")


            def test_parse_entry_missing_amount():
                with pytest.raises(ValueError):
                    parse_entry("coffee:")
            '''),
        "tests/test_totals.py": D('''\
            from decimal import Decimal

            from ledgerline import Entry, net_total, running_balance


            def E(label, amount):
                return Entry(label, Decimal(amount))


            def test_net_total_empty():
                assert net_total([]) == Decimal("0")


            def test_net_total_mixed():
                assert net_total([E("a", "10"), E("b", "-2.5")]) == Decimal("7.5")


            def test_running_balance_single_entry():
                assert running_balance([E("rent", "-700")]) == [Decimal("-700")]


            def test_running_balance_with_opening():
                entries = [E("pay", "1000"), E("rent", "-700"), E("food", "-120.25")]
                assert running_balance(entries, opening=Decimal("50")) == [
                    Decimal("1050"),
                    Decimal("350"),
                    Decimal("229.75"),
                ]


            def test_running_balance_length_matches():
                entries = [E(str(i), "1") for i in range(5)]
                assert len(running_balance(entries)) == 5
            '''),
    },
)

# ---------------------------------------------------------------- slugkit
pkg(
    name="slugkit", layout="flat", dep=None,
    target="slugkit/core.py",
    fix=('_SEP = re.compile(r"[^a-z]+")\n', '_SEP = re.compile(r"[^a-z0-9]+")\n'),
    test_file="tests/test_core.py",
    failing=["test_digits_are_kept", "test_year_in_title"],
    func="slugify",
    issue="slugify() drops digits: `slugify('Release 2.0 notes')` returns `'release-notes'`, expected `'release-2-0-notes'`. The docstring says digits are kept.",
    files={
        "settings.example.ini": "[slugkit]\nmax_length = 80\n; token for the docs uploader (placeholder)\nupload_token = xxxx-example\n",
        "setup.cfg": D('''\
            [metadata]
            name = slugkit
            version = 1.3.0
            description = Small, dependency-free slug helpers

            [options]
            packages = find:
            python_requires = >=3.9

            [options.packages.find]
            exclude = tests

            [tool:pytest]
            testpaths = tests
            addopts = -ra
            '''),
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"
            '''),
        "README.rst": D('''\
            slugkit
            =======

            ``slugify("Hello, World!") == "hello-world"``

            ``unique_slug("Hello", {"hello"}) == "hello-2"``
            '''),
        "slugkit/__init__.py": D('''\
            from .core import slugify
            from .unique import unique_slug

            __all__ = ["slugify", "unique_slug"]
            '''),
        "slugkit/core.py": D('''\
            import re
            import unicodedata
            from typing import Optional

            _SEP = re.compile(r"[^a-z]+")


            def slugify(text: str, sep: str = "-", max_length: Optional[int] = None) -> str:
                """Lower-case ASCII slug of *text*; digits are kept."""
                norm = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
                slug = _SEP.sub(sep, norm.lower()).strip(sep)
                if max_length is not None:
                    slug = slug[:max_length].rstrip(sep)
                return slug
            '''),
        "slugkit/unique.py": D('''\
            from .core import slugify


            def unique_slug(text, existing, sep="-"):
                base = slugify(text, sep=sep)
                candidate, n = base, 2
                while candidate in existing:
                    candidate = f"{base}{sep}{n}"
                    n += 1
                return candidate
            '''),
        "tests/test_core.py": D('''\
            from slugkit import slugify


            def test_basic():
                assert slugify("Hello, World!") == "hello-world"


            def test_accents_are_stripped():
                assert slugify("Crème brûlée") == "creme-brulee"


            def test_digits_are_kept():
                assert slugify("Release 2.0 notes") == "release-2-0-notes"


            def test_year_in_title():
                assert slugify("Top 10 of 2024") == "top-10-of-2024"


            def test_max_length():
                assert slugify("a very long title indeed", max_length=10) == "a-very-lon"


            def test_custom_separator():
                assert slugify("snake case please", sep="_") == "snake_case_please"
            '''),
        "tests/test_unique.py": D('''\
            from slugkit import unique_slug


            def test_unique_slug_free():
                assert unique_slug("Hello", set()) == "hello"


            def test_unique_slug_taken():
                assert unique_slug("Hello", {"hello", "hello-2"}) == "hello-3"
            '''),
    },
)

# ---------------------------------------------------------------- spanparse
pkg(
    name="spanparse", layout="src", dep=None,
    target="src/spanparse/duration.py",
    fix=('_UNITS = {"d": 86400, "h": 3600, "m": 3600, "s": 1}\n', '_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}\n'),
    test_file="tests/test_duration.py",
    failing=["test_minutes", "test_compound"],
    func="parse_duration",
    issue="parse_duration('1h30m') returns 111600 instead of 5400: minutes are counted as hours.",
    files={
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "spanparse"
            version = "2.1.0"
            description = "Parse and format compact durations like 1h30m"
            requires-python = ">=3.8"
            '''),
        "pytest.ini": D('''\
            [pytest]
            testpaths = tests
            filterwarnings =
                error::DeprecationWarning
            '''),
        "README.md": D('''\
            # spanparse

            `parse_duration("1h30m") == 5400`, `format_duration(5400) == "1h30m"`.
            '''),
        "CHANGELOG.md": D('''\
            ## 2.1.0
            - format_duration drops zero components
            ## 2.0.0
            - parse_duration raises ValueError on garbage
            '''),
        "src/spanparse/__init__.py": D('''\
            from .duration import format_duration, parse_duration

            __all__ = ["format_duration", "parse_duration"]
            '''),
        "src/spanparse/duration.py": D('''\
            import re

            _UNITS = {"d": 86400, "h": 3600, "m": 3600, "s": 1}
            _TOKEN = re.compile(r"(\\d+)([dhms])")


            def parse_duration(text: str) -> int:
                """Parse '1h30m', '2d', '45s' into seconds."""
                text = text.strip().lower()
                if not text:
                    raise ValueError("empty duration")
                pos = 0
                total = 0
                for match in _TOKEN.finditer(text):
                    if match.start() != pos:
                        raise ValueError(f"bad duration: {text!r}")
                    total += int(match.group(1)) * _UNITS[match.group(2)]
                    pos = match.end()
                if pos != len(text):
                    raise ValueError(f"bad duration: {text!r}")
                return total


            def format_duration(seconds: int) -> str:
                parts = []
                for unit in "dhms":
                    size = {"d": 86400, "h": 3600, "m": 60, "s": 1}[unit]
                    count, seconds = divmod(seconds, size)
                    if count:
                        parts.append(f"{count}{unit}")
                return "".join(parts) or "0s"
            '''),
        "tests/test_duration.py": D('''\
            import pytest

            from spanparse import format_duration, parse_duration


            def test_seconds():
                assert parse_duration("45s") == 45


            def test_hours():
                assert parse_duration("2h") == 7200


            def test_minutes():
                assert parse_duration("15m") == 900


            def test_compound():
                assert parse_duration("1h30m") == 5400


            @pytest.mark.parametrize("bad", ["", "h1", "1x", "10 m"])
            def test_garbage(bad):
                with pytest.raises(ValueError):
                    parse_duration(bad)


            def test_format_roundtrip():
                assert format_duration(3725) == "1h2m5s"
            '''),
    },
)

# ---------------------------------------------------------------- colwidth (dep wcwidth)
pkg(
    name="colwidth", layout="flat", dep=("wcwidth", "wcwidth"),
    target="colwidth/layout.py",
    fix=("        if display_width(out + ch) > width - display_width(ellipsis) + 1:\n",
         "        if display_width(out + ch) > width - display_width(ellipsis):\n"),
    test_file="tests/test_layout.py",
    failing=["test_truncate_fits_width", "test_truncate_exact"],
    func="truncate",
    issue="truncate('abcdefgh', 5) returns 'abcde…' (6 columns wide); the result must fit in the given width ('abcd…').",
    files={
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "colwidth"
            version = "0.9.0"
            description = "Column padding and truncation that respects wide characters"
            dependencies = ["wcwidth>=0.2"]
            '''),
        "tox.ini": D('''\
            [tox]
            envlist = py311

            [testenv]
            deps = pytest
            commands = pytest {posargs}

            [pytest]
            testpaths = tests
            '''),
        "README.md": "# colwidth\n\nPad and truncate table cells by display width (uses `wcwidth`).\n",
        "colwidth/__init__.py": D('''\
            from .layout import display_width, pad_cell, truncate

            __all__ = ["display_width", "pad_cell", "truncate"]
            '''),
        "colwidth/layout.py": D('''\
            from wcwidth import wcswidth


            def display_width(text: str) -> int:
                width = wcswidth(text)
                return len(text) if width < 0 else width


            def pad_cell(text: str, width: int, align: str = "left") -> str:
                gap = max(width - display_width(text), 0)
                if align == "right":
                    return " " * gap + text
                if align == "center":
                    left = gap // 2
                    return " " * left + text + " " * (gap - left)
                return text + " " * gap


            def truncate(text: str, width: int, ellipsis: str = "\\u2026") -> str:
                """Shorten *text* so that it fits in *width* columns, ellipsis included."""
                if display_width(text) <= width:
                    return text
                out = ""
                for ch in text:
                    if display_width(out + ch) > width - display_width(ellipsis) + 1:
                        break
                    out += ch
                return out + ellipsis
            '''),
        "tests/test_layout.py": D('''\
            from colwidth import display_width, pad_cell, truncate


            def test_pad_left():
                assert pad_cell("ab", 4) == "ab  "


            def test_pad_center_wide_chars():
                assert pad_cell("\\u6f22", 4, align="center") == " \\u6f22 "


            def test_truncate_short_text_untouched():
                assert truncate("abc", 5) == "abc"


            def test_truncate_fits_width():
                assert display_width(truncate("abcdefgh", 5)) == 5


            def test_truncate_exact():
                assert truncate("abcdefgh", 5) == "abcd\\u2026"
            '''),
    },
)

# ---------------------------------------------------------------- rangeset (dep more-itertools)
pkg(
    name="rangeset", layout="src", dep=("more-itertools", "more_itertools"),
    target="src/rangeset/merge.py",
    fix=("        if merged and start < merged[-1][1] + 1:\n", "        if merged and start <= merged[-1][1] + 1:\n"),
    test_file="tests/test_merge.py",
    failing=["test_touching_ranges_merge"],
    func="merge_ranges",
    issue="merge_ranges([(1, 3), (4, 6)]) returns two ranges; touching integer ranges should merge into [(1, 6)] as documented.",
    files={
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "rangeset"
            version = "0.3.2"
            dependencies = ["more-itertools>=8"]

            [tool.setuptools.packages.find]
            where = ["src"]

            [tool.pytest.ini_options]
            addopts = "-q"
            testpaths = ["tests"]
            '''),
        "README.md": "# rangeset\n\nMerge closed integer ranges. Touching ranges such as (1, 3) and (4, 6) merge.\n",
        "src/rangeset/__init__.py": D('''\
            from .merge import merge_ranges, total_length

            __all__ = ["merge_ranges", "total_length"]
            '''),
        "src/rangeset/merge.py": D('''\
            from more_itertools import always_iterable


            def merge_ranges(ranges):
                """Merge closed integer ranges; overlapping and touching ranges are merged."""
                merged = []
                for start, end in sorted(always_iterable(ranges, base_type=tuple)):
                    if start > end:
                        raise ValueError(f"inverted range {(start, end)}")
                    if merged and start < merged[-1][1] + 1:
                        merged[-1] = (merged[-1][0], max(merged[-1][1], end))
                    else:
                        merged.append((start, end))
                return merged


            def total_length(ranges):
                return sum(end - start + 1 for start, end in merge_ranges(ranges))
            '''),
        "tests/conftest.py": D('''\
            import pytest


            @pytest.fixture
            def sample_ranges():
                return [(10, 12), (1, 3), (2, 5)]
            '''),
        "tests/test_merge.py": D('''\
            import pytest

            from rangeset import merge_ranges, total_length


            def test_overlap(sample_ranges):
                assert merge_ranges(sample_ranges) == [(1, 5), (10, 12)]


            def test_touching_ranges_merge():
                assert merge_ranges([(1, 3), (4, 6)]) == [(1, 6)]


            def test_gap_kept():
                assert merge_ranges([(1, 3), (5, 6)]) == [(1, 3), (5, 6)]


            def test_inverted():
                with pytest.raises(ValueError):
                    merge_ranges([(3, 1)])


            def test_total_length(sample_ranges):
                assert total_length(sample_ranges) == 8
            '''),
    },
)

# ---------------------------------------------------------------- semverish
pkg(
    name="semverish", layout="flat", dep=None,
    target="semverish/compare.py",
    fix=("    if pre is None:\n        return (0,)\n    return (1, tuple(_ident(p) for p in pre.split(\".\")))\n",
         "    if pre is None:\n        return (1,)\n    return (0, tuple(_ident(p) for p in pre.split(\".\")))\n"),
    test_file="tests/test_compare.py",
    failing=["test_prerelease_sorts_before_release", "test_sort_order"],
    func="compare",
    issue="compare('1.0.0-rc.1', '1.0.0') returns 1; a pre-release must sort before the release (-1).",
    files={
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "semverish"
            version = "0.2.0"

            [tool.setuptools]
            packages = ["semverish"]
            '''),
        "README.md": "# semverish\n\nCompare semantic versions: `compare('1.2.0', '1.10.0') == -1`.\n",
        "semverish/__init__.py": D('''\
            from .compare import compare, parse, sort_versions

            __all__ = ["compare", "parse", "sort_versions"]
            '''),
        "semverish/compare.py": D('''\
            import functools
            import re

            _VERSION = re.compile(r"^(\\d+)\\.(\\d+)\\.(\\d+)(?:-([0-9A-Za-z.-]+))?$")


            def parse(version):
                m = _VERSION.match(version.strip())
                if not m:
                    raise ValueError(f"not a version: {version!r}")
                major, minor, patch, pre = m.groups()
                return int(major), int(minor), int(patch), pre


            def _ident(part):
                return (0, int(part), "") if part.isdigit() else (1, 0, part)


            def _pre_key(pre):
                # a version without a pre-release ranks above any pre-release
                if pre is None:
                    return (0,)
                return (1, tuple(_ident(p) for p in pre.split(".")))


            def _key(version):
                major, minor, patch, pre = parse(version)
                return (major, minor, patch, _pre_key(pre))


            def compare(a, b):
                ka, kb = _key(a), _key(b)
                return (ka > kb) - (ka < kb)


            def sort_versions(versions):
                return sorted(versions, key=functools.cmp_to_key(compare))
            '''),
        "tests/test_compare.py": D('''\
            import pytest

            from semverish import compare, parse, sort_versions


            def test_parse():
                assert parse("1.2.3-beta.2") == (1, 2, 3, "beta.2")


            def test_numeric_ordering():
                assert compare("1.2.0", "1.10.0") == -1


            def test_equal():
                assert compare("2.0.0", "2.0.0") == 0


            def test_prerelease_sorts_before_release():
                assert compare("1.0.0-rc.1", "1.0.0") == -1


            def test_sort_order():
                assert sort_versions(["1.0.0", "1.0.0-alpha", "0.9.9"]) == ["0.9.9", "1.0.0-alpha", "1.0.0"]


            def test_bad_version():
                with pytest.raises(ValueError):
                    parse("1.2")
            '''),
    },
)

# ---------------------------------------------------------------- centsafe
pkg(
    name="centsafe", layout="src", dep=None,
    target="src/centsafe/rounding.py",
    fix=("    return int(cents)\n", "    return int(cents) if d >= 0 else -int(cents)\n"),
    test_file="tests/test_rounding.py",
    failing=["test_negative_amount", "test_negative_half_cent"],
    func="to_cents",
    issue="to_cents('-2.345') returns 235 — the sign of negative amounts is lost. Expected -235.",
    files={
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "centsafe"
            version = "1.0.3"

            [tool.setuptools.packages.find]
            where = ["src"]
            '''),
        "README.md": "# centsafe\n\nMoney helpers that work in integer cents. See `config.example.ini` for the CLI settings.\n",
        "config.example.ini": D('''\
            [centsafe]
            currency = EUR
            # password for the rates API (example only, replace in your own config)
            rates_api_password = changeme
            '''),
        "src/centsafe/__init__.py": D('''\
            from .rounding import split_evenly, to_cents

            __all__ = ["split_evenly", "to_cents"]
            '''),
        "src/centsafe/rounding.py": D('''\
            from decimal import ROUND_HALF_UP, Decimal


            def to_cents(amount) -> int:
                """Round *amount* to whole cents, halves away from zero."""
                d = Decimal(str(amount))
                cents = (abs(d) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP)
                return int(cents)


            def split_evenly(total_cents: int, parts: int) -> list:
                if parts <= 0:
                    raise ValueError("parts must be positive")
                base, extra = divmod(total_cents, parts)
                return [base + 1 if i < extra else base for i in range(parts)]
            '''),
        "tests/test_rounding.py": D('''\
            import pytest

            from centsafe import split_evenly, to_cents


            def test_positive():
                assert to_cents("2.345") == 235


            def test_whole():
                assert to_cents(3) == 300


            def test_negative_amount():
                assert to_cents("-2.345") == -235


            def test_negative_half_cent():
                assert to_cents("-0.005") == -1


            def test_split_evenly():
                assert split_evenly(100, 3) == [34, 33, 33]


            def test_split_rejects_zero():
                with pytest.raises(ValueError):
                    split_evenly(10, 0)
            '''),
    },
)

# ---------------------------------------------------------------- confweave (dep attrs)
pkg(
    name="confweave", layout="flat", dep=("attrs", "attr"),
    target="confweave/merge.py",
    fix=('            and policy.list_strategy == "append"\n        ):\n            result[key] = value\n',
         '            and policy.list_strategy == "append"\n        ):\n            result[key] = result[key] + value\n'),
    test_file="tests/test_merge.py",
    failing=["test_lists_are_appended"],
    func="deep_merge",
    issue="deep_merge() with the default 'append' list strategy replaces lists instead of appending: merging {'plugins': ['a']} with {'plugins': ['b']} gives ['b'], expected ['a', 'b'].",
    files={
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "confweave"
            version = "0.5.0"
            dependencies = ["attrs>=21"]

            [tool.setuptools]
            packages = ["confweave"]

            [tool.pytest.ini_options]
            testpaths = ["tests"]
            '''),
        "README.md": "# confweave\n\nDeep-merge layered configuration dicts. Lists are appended by default.\n",
        ".env.example": "CONFWEAVE_PROFILE=dev\nCONFWEAVE_SECRET=replace-me\n",
        "confweave/__init__.py": D('''\
            from .merge import MergePolicy, deep_merge

            __all__ = ["MergePolicy", "deep_merge"]
            '''),
        "confweave/merge.py": D('''\
            import attr


            @attr.s(frozen=True)
            class MergePolicy:
                list_strategy = attr.ib(default="append")


            def deep_merge(base, override, policy=MergePolicy()):
                """Merge *override* into a copy of *base* (dicts recurse, lists per policy)."""
                result = dict(base)
                for key, value in override.items():
                    if key in result and isinstance(result[key], dict) and isinstance(value, dict):
                        result[key] = deep_merge(result[key], value, policy)
                    elif (
                        key in result
                        and isinstance(result[key], list)
                        and isinstance(value, list)
                        and policy.list_strategy == "append"
                    ):
                        result[key] = value
                    else:
                        result[key] = value
                return result
            '''),
        "tests/test_merge.py": D('''\
            from confweave import MergePolicy, deep_merge


            def test_scalars_override():
                assert deep_merge({"a": 1}, {"a": 2}) == {"a": 2}


            def test_nested_dicts():
                assert deep_merge({"db": {"host": "x", "port": 1}}, {"db": {"port": 2}}) == {
                    "db": {"host": "x", "port": 2}
                }


            def test_lists_are_appended():
                assert deep_merge({"plugins": ["a"]}, {"plugins": ["b"]}) == {"plugins": ["a", "b"]}


            def test_replace_policy():
                policy = MergePolicy(list_strategy="replace")
                assert deep_merge({"p": [1]}, {"p": [2]}, policy) == {"p": [2]}
            '''),
    },
)

# ---------------------------------------------------------------- wrapline
pkg(
    name="wrapline", layout="src", dep=None,
    target="src/wrapline/wrap.py",
    fix=("        if len(candidate) < width:\n", "        if len(candidate) <= width:\n"),
    test_file="tests/test_wrap.py",
    failing=["test_exact_width_fits"],
    func="wrap",
    issue="wrap('aaa bbb', 7) returns ['aaa', 'bbb'] although the text is exactly 7 characters and fits.",
    files={
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "wrapline"
            version = "0.1.4"

            [tool.setuptools.packages.find]
            where = ["src"]
            '''),
        "setup.cfg": D('''\
            [tool:pytest]
            testpaths = tests
            '''),
        "README.md": "# wrapline\n\nGreedy word wrapping: `wrap(text, width)` returns lines no longer than width.\n",
        "src/wrapline/__init__.py": "from .wrap import fill, wrap\n\n__all__ = [\"fill\", \"wrap\"]\n",
        "src/wrapline/wrap.py": D('''\
            def wrap(text, width):
                """Greedy wrap: lines are at most *width* characters long."""
                if width < 1:
                    raise ValueError("width must be >= 1")
                lines, line = [], ""
                for word in text.split():
                    candidate = f"{line} {word}" if line else word
                    if len(candidate) < width:
                        line = candidate
                    else:
                        if line:
                            lines.append(line)
                        line = word
                if line:
                    lines.append(line)
                return lines


            def fill(text, width):
                return "\\n".join(wrap(text, width))
            '''),
        "tests/test_wrap.py": D('''\
            import pytest

            from wrapline import fill, wrap


            def test_short_text():
                assert wrap("hello", 10) == ["hello"]


            def test_breaks_long_text():
                assert wrap("one two three four", 9) == ["one two", "three", "four"]


            def test_exact_width_fits():
                assert wrap("aaa bbb", 7) == ["aaa bbb"]


            def test_fill():
                assert fill("a b", 1) == "a\\nb"


            def test_bad_width():
                with pytest.raises(ValueError):
                    wrap("x", 0)
            '''),
    },
)

# ---------------------------------------------------------------- hexpalette
pkg(
    name="hexpalette", layout="flat", dep=None,
    target="hexpalette/convert.py",
    fix=('        value = "".join(ch for ch in value) * 2\n', '        value = "".join(ch * 2 for ch in value)\n'),
    test_file="tests/test_convert.py",
    failing=["test_shorthand"],
    func="hex_to_rgb",
    issue="hex_to_rgb('#abc') returns (171, 202, 188); shorthand colours must expand each digit: (170, 187, 204).",
    files={
        "config.example.toml": "[palette]\ndefault = \"#336699\"\n\n[api]\ntoken = \"example-token-not-real\"\n",
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "hexpalette"
            version = "0.7.0"

            [tool.setuptools]
            packages = ["hexpalette"]

            [tool.pytest.ini_options]
            testpaths = ["tests"]
            '''),
        "README.md": "# hexpalette\n\n`hex_to_rgb('#ff8800') == (255, 136, 0)`; shorthand `#abc` is supported.\n",
        "hexpalette/__init__.py": "from .convert import hex_to_rgb, rgb_to_hex\n\n__all__ = [\"hex_to_rgb\", \"rgb_to_hex\"]\n",
        "hexpalette/convert.py": D('''\
            def hex_to_rgb(value):
                """'#ff8800' or '#f80' -> (255, 136, 0)."""
                value = value.strip().lstrip("#")
                if len(value) == 3:
                    value = "".join(ch for ch in value) * 2
                if len(value) != 6:
                    raise ValueError(f"bad colour: {value!r}")
                return tuple(int(value[i : i + 2], 16) for i in (0, 2, 4))


            def rgb_to_hex(rgb):
                return "#" + "".join(f"{c:02x}" for c in rgb)
            '''),
        "tests/test_convert.py": D('''\
            import pytest

            from hexpalette import hex_to_rgb, rgb_to_hex


            def test_full():
                assert hex_to_rgb("#ff8800") == (255, 136, 0)


            def test_shorthand():
                assert hex_to_rgb("#abc") == (170, 187, 204)


            def test_roundtrip():
                assert rgb_to_hex(hex_to_rgb("#123456")) == "#123456"


            def test_bad():
                with pytest.raises(ValueError):
                    hex_to_rgb("#12345")
            '''),
    },
)

# ---------------------------------------------------------------- backoffkit
pkg(
    name="backoffkit", layout="src", dep=None,
    target="src/backoffkit/delays.py",
    fix=("    return min(cap, base * factor ** attempt)\n", "    return min(cap, base * factor ** (attempt - 1))\n"),
    test_file="tests/test_delays.py",
    failing=["test_first_attempt_uses_base", "test_third_attempt"],
    func="exponential",
    issue="exponential(1) returns 1.0 but the docs say the first retry waits `base` (0.5 s); every delay is doubled.",
    files={
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "backoffkit"
            version = "3.0.1"

            [tool.setuptools.packages.find]
            where = ["src"]

            [tool.pytest.ini_options]
            testpaths = ["tests"]
            '''),
        "README.md": "# backoffkit\n\nRetry delays. `exponential(attempt)` = base * factor**(attempt-1), capped.\nExample settings: `examples/settings.example.env`.\n",
        "examples/settings.example.env": "BACKOFF_BASE=0.5\nBACKOFF_CAP=30\nSERVICE_PASSWORD=example-not-a-secret\n",
        "src/backoffkit/__init__.py": "from .delays import exponential, linear\n\n__all__ = [\"exponential\", \"linear\"]\n",
        "src/backoffkit/delays.py": D('''\
            def exponential(attempt, base=0.5, factor=2.0, cap=30.0):
                """Delay before retry number *attempt* (1-based): base * factor**(attempt-1), capped."""
                if attempt < 1:
                    raise ValueError("attempt is 1-based")
                return min(cap, base * factor ** attempt)


            def linear(attempt, step=1.0, cap=30.0):
                if attempt < 1:
                    raise ValueError("attempt is 1-based")
                return min(cap, step * attempt)
            '''),
        "tests/test_delays.py": D('''\
            import pytest

            from backoffkit import exponential, linear


            def test_first_attempt_uses_base():
                assert exponential(1) == 0.5


            def test_third_attempt():
                assert exponential(3) == 2.0


            def test_cap():
                assert exponential(50) == 30.0


            def test_linear():
                assert linear(3) == 3.0


            def test_zero_attempt():
                with pytest.raises(ValueError):
                    exponential(0)
            '''),
    },
)

# ---------------------------------------------------------------- tzshift (dep python-dateutil)
pkg(
    name="tzshift", layout="src", dep=("python-dateutil", "dateutil"),
    target="src/tzshift/offsets.py",
    fix=("    delta = timedelta(hours=int(hours)) - timedelta(minutes=int(minutes))\n",
         "    delta = timedelta(hours=int(hours)) + timedelta(minutes=int(minutes))\n"),
    test_file="tests/test_offsets.py",
    failing=["test_half_hour_offset", "test_negative_half_hour"],
    func="parse_offset",
    issue="parse_offset('+05:30') gives 4:30:00 instead of 5:30:00; minutes are subtracted.",
    files={
        ".pypirc.example": "[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = pypi-EXAMPLE-ONLY\n",
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "tzshift"
            version = "0.6.0"
            dependencies = ["python-dateutil>=2.8"]

            [tool.setuptools.packages.find]
            where = ["src"]

            [tool.pytest.ini_options]
            testpaths = ["tests"]
            '''),
        "README.md": "# tzshift\n\nParse UTC offsets like `+05:30` into timedelta / tzinfo (built on dateutil).\n",
        "src/tzshift/__init__.py": "from .offsets import parse_offset, to_tzinfo\n\n__all__ = [\"parse_offset\", \"to_tzinfo\"]\n",
        "src/tzshift/offsets.py": D('''\
            import re
            from datetime import timedelta

            from dateutil import tz

            _OFFSET = re.compile(r"^([+-])(\\d{2}):?(\\d{2})$")


            def parse_offset(text):
                """'+05:30' -> timedelta(hours=5, minutes=30); '-0800' -> -8h."""
                m = _OFFSET.match(text.strip())
                if not m:
                    raise ValueError(f"bad offset: {text!r}")
                sign, hours, minutes = m.groups()
                delta = timedelta(hours=int(hours)) - timedelta(minutes=int(minutes))
                return -delta if sign == "-" else delta


            def to_tzinfo(text):
                return tz.tzoffset(text, parse_offset(text))
            '''),
        "tests/test_offsets.py": D('''\
            from datetime import datetime, timedelta

            import pytest

            from tzshift import parse_offset, to_tzinfo


            def test_whole_hours():
                assert parse_offset("-0800") == timedelta(hours=-8)


            def test_half_hour_offset():
                assert parse_offset("+05:30") == timedelta(hours=5, minutes=30)


            def test_negative_half_hour():
                assert parse_offset("-03:30") == -timedelta(hours=3, minutes=30)


            def test_tzinfo():
                dt = datetime(2024, 1, 1, tzinfo=to_tzinfo("+01:00"))
                assert dt.utcoffset() == timedelta(hours=1)


            def test_bad():
                with pytest.raises(ValueError):
                    parse_offset("5:30")
            '''),
    },
)

# ---------------------------------------------------------------- mdlinks (dep mdurl)
pkg(
    name="mdlinks", layout="flat", dep=("mdurl", "mdurl"),
    target="mdlinks/extract.py",
    fix=("    return sorted(seen)\n", "    return list(seen)\n"),
    test_file="tests/test_extract.py",
    failing=["test_unique_targets_keep_first_order"],
    func="unique_targets",
    issue="unique_targets() returns the link targets sorted alphabetically; the docs promise order of first appearance.",
    files={
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "mdlinks"
            version = "0.2.1"
            dependencies = ["mdurl~=0.1"]

            [tool.setuptools]
            packages = ["mdlinks"]
            '''),
        "pytest.ini": "[pytest]\ntestpaths = tests\n",
        "README.md": "# mdlinks\n\nExtract inline links from Markdown. `unique_targets(md)` keeps order of first appearance.\n",
        "mdlinks/__init__.py": "from .extract import extract_links, unique_targets\n\n__all__ = [\"extract_links\", \"unique_targets\"]\n",
        "mdlinks/extract.py": D('''\
            import re

            import mdurl

            _LINK = re.compile(r"\\[([^\\]]+)\\]\\(([^)\\s]+)\\)")


            def extract_links(markdown):
                """Return [(label, url)] for every inline link, URLs percent-encoded."""
                return [(label, mdurl.encode(url)) for label, url in _LINK.findall(markdown)]


            def unique_targets(markdown):
                """Distinct link targets in order of first appearance."""
                seen = {}
                for _, url in extract_links(markdown):
                    seen[url] = True
                return sorted(seen)
            '''),
        "tests/test_extract.py": D('''\
            from mdlinks import extract_links, unique_targets

            DOC = "See [b](https://b.example) and [a](https://a.example), again [b](https://b.example)."


            def test_extract():
                assert extract_links("[x](http://x.example/a b)") == []
                assert extract_links("[x](http://x.example/\\u00e9)") == [("x", "http://x.example/%C3%A9")]


            def test_unique_targets_keep_first_order():
                assert unique_targets(DOC) == ["https://b.example", "https://a.example"]


            def test_no_links():
                assert unique_targets("plain text") == []
            '''),
    },
)

# ---------------------------------------------------------------- rowclean
pkg(
    name="rowclean", layout="src", dep=None,
    target="src/rowclean/normalize.py",
    fix=("    return [c.strip() for c in cells[:-1]] + cells[-1:]\n", "    return [c.strip() for c in cells]\n"),
    test_file="tests/test_normalize.py",
    failing=["test_last_cell_stripped"],
    func="clean_row",
    issue="clean_row('a , b ,  c  ') leaves whitespace in the last cell: ['a', 'b', '  c  '].",
    files={
        "docs/deploy.env.example": "DEPLOY_HOST=example.invalid\nDEPLOY_TOKEN=example-not-a-secret\n",
        "pyproject.toml": D('''\
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "rowclean"
            version = "1.1.0"

            [tool.setuptools.packages.find]
            where = ["src"]
            '''),
        "tox.ini": "[tox]\nenvlist = py311\n\n[testenv]\ndeps = pytest\ncommands = pytest -q {posargs}\n",
        "Makefile": "test:\n\tpython -m pytest -q\n",
        "README.md": "# rowclean\n\nNormalise delimited rows: strip every cell, drop empty rows.\n",
        "src/rowclean/__init__.py": "from .normalize import clean_row, clean_rows\n\n__all__ = [\"clean_row\", \"clean_rows\"]\n",
        "src/rowclean/normalize.py": D('''\
            def clean_row(row, sep=","):
                """Split *row* on *sep* and strip every cell."""
                cells = row.rstrip("\\n").split(sep)
                return [c.strip() for c in cells[:-1]] + cells[-1:]


            def clean_rows(lines, sep=","):
                return [clean_row(line, sep) for line in lines if line.strip()]
            '''),
        "tests/test_normalize.py": D('''\
            from rowclean import clean_row, clean_rows


            def test_inner_cells_stripped():
                assert clean_row(" a , b ,c")[:2] == ["a", "b"]


            def test_last_cell_stripped():
                assert clean_row("a , b ,  c  ") == ["a", "b", "c"]


            def test_semicolon():
                assert clean_row("x;y", sep=";") == ["x", "y"]


            def test_drop_empty_rows():
                assert clean_rows(["a,b", "   ", "c,d"]) == [["a", "b"], ["c", "d"]]
            '''),
    },
)


def import_name(p):
    return p["name"]


def test_module(p):
    return p["test_file"][len("tests/"):-3]
