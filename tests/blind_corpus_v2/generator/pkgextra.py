"""Per-package extras for the episode scripts: reproduction one-liners, sed fixes,
hand-written fixed functions (used by agents that replace the target via test loading)."""
import os
import re

from packages import PKGS

REPRO = {
    "ledgerline": "from decimal import Decimal as D; from ledgerline import Entry, running_balance; print(running_balance([Entry('rent', D('-700'))]))",
    "slugkit": "from slugkit import slugify; print(slugify('Release 2.0 notes'))",
    "spanparse": "from spanparse import parse_duration; print(parse_duration('1h30m'))",
    "colwidth": "from colwidth import truncate; print(repr(truncate('abcdefgh', 5)))",
    "rangeset": "from rangeset import merge_ranges; print(merge_ranges([(1, 3), (4, 6)]))",
    "semverish": "from semverish import compare; print(compare('1.0.0-rc.1', '1.0.0'))",
    "centsafe": "from centsafe import to_cents; print(to_cents('-2.345'))",
    "confweave": "from confweave import deep_merge; print(deep_merge({'plugins': ['a']}, {'plugins': ['b']}))",
    "wrapline": "from wrapline import wrap; print(wrap('aaa bbb', 7))",
    "hexpalette": "from hexpalette import hex_to_rgb; print(hex_to_rgb('#abc'))",
    "backoffkit": "from backoffkit import exponential; print(exponential(1), exponential(3))",
    "tzshift": "from tzshift import parse_offset; print(parse_offset('+05:30'))",
    "mdlinks": "from mdlinks import unique_targets; print(unique_targets('[b](https://b.example) [a](https://a.example)'))",
    "rowclean": "from rowclean import clean_row; print(clean_row('a , b ,  c  '))",
}

SEDFIX = {
    "ledgerline": "sed -i 's/range(1, len(entries))/range(len(entries))/' src/ledgerline/totals.py",
    "slugkit": "sed -i 's/a-z]+/a-z0-9]+/' slugkit/core.py",
    "spanparse": "sed -i 's/\"m\": 3600/\"m\": 60/' src/spanparse/duration.py",
    "colwidth": "sed -i 's/ - display_width(ellipsis) + 1:/ - display_width(ellipsis):/' colwidth/layout.py",
    "rangeset": "sed -i 's/start < merged\\[-1\\]\\[1\\] + 1/start <= merged[-1][1] + 1/' src/rangeset/merge.py",
    "semverish": "sed -i -e 's/return (0,)$/return (1,)/' -e 's/return (1, tuple(_ident/return (0, tuple(_ident/' semverish/compare.py",
    "centsafe": "sed -i 's/^    return int(cents)$/    return int(cents) if d >= 0 else -int(cents)/' src/centsafe/rounding.py",
    "confweave": "sed -i '0,/            result\\[key\\] = value/s//            result[key] = result[key] + value/' confweave/merge.py",
    "wrapline": "sed -i 's/len(candidate) < width/len(candidate) <= width/' src/wrapline/wrap.py",
    "hexpalette": "sed -i 's/\"\".join(ch for ch in value) \\* 2/\"\".join(ch * 2 for ch in value)/' hexpalette/convert.py",
    "backoffkit": "sed -i 's/factor \\*\\* attempt)/factor ** (attempt - 1))/' src/backoffkit/delays.py",
    "tzshift": "sed -i 's/int(hours)) - timedelta/int(hours)) + timedelta/' src/tzshift/offsets.py",
    "mdlinks": "sed -i 's/return sorted(seen)/return list(seen)/' mdlinks/extract.py",
    "rowclean": "sed -i 's/for c in cells\\[:-1\\]\\] + cells\\[-1:\\]/for c in cells]/' src/rowclean/normalize.py",
}

# module path, names to rebind on the package, replacement code (self-contained)
FIXFUNC = {
    "ledgerline": ("ledgerline.totals", ["running_balance"], '''\
from decimal import Decimal


def running_balance(entries, opening=Decimal("0")):
    balances, current = [], opening
    for entry in entries:
        current += entry.amount
        balances.append(current)
    return balances
'''),
    "slugkit": ("slugkit.core", ["slugify"], '''\
import re
import unicodedata


def slugify(text, sep="-", max_length=None):
    norm = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", sep, norm.lower()).strip(sep)
    if max_length is not None:
        slug = slug[:max_length].rstrip(sep)
    return slug
'''),
    "spanparse": ("spanparse.duration", ["parse_duration"], '''\
import re

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(text):
    text = text.strip().lower()
    if not text:
        raise ValueError("empty duration")
    pos = total = 0
    for match in re.finditer(r"(\\d+)([dhms])", text):
        if match.start() != pos:
            raise ValueError(f"bad duration: {text!r}")
        total += int(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ValueError(f"bad duration: {text!r}")
    return total
'''),
    "colwidth": ("colwidth.layout", ["truncate"], '''\
from colwidth.layout import display_width


def truncate(text, width, ellipsis="\\u2026"):
    if display_width(text) <= width:
        return text
    out = ""
    for ch in text:
        if display_width(out + ch) > width - display_width(ellipsis):
            break
        out += ch
    return out + ellipsis
'''),
    "rangeset": ("rangeset.merge", ["merge_ranges"], '''\
def merge_ranges(ranges):
    merged = []
    for start, end in sorted(ranges):
        if start > end:
            raise ValueError(f"inverted range {(start, end)}")
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
'''),
    "semverish": ("semverish.compare", ["_pre_key"], '''\
from semverish.compare import _ident


def _pre_key(pre):
    if pre is None:
        return (1,)
    return (0, tuple(_ident(p) for p in pre.split(".")))
'''),
    "centsafe": ("centsafe.rounding", ["to_cents"], '''\
from decimal import ROUND_HALF_UP, Decimal


def to_cents(amount):
    d = Decimal(str(amount))
    cents = int((abs(d) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
    return cents if d >= 0 else -cents
'''),
    "confweave": ("confweave.merge", ["deep_merge"], '''\
from confweave.merge import MergePolicy


def deep_merge(base, override, policy=MergePolicy()):
    result = dict(base)
    for key, value in override.items():
        old = result.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            result[key] = deep_merge(old, value, policy)
        elif isinstance(old, list) and isinstance(value, list) and policy.list_strategy == "append":
            result[key] = old + value
        else:
            result[key] = value
    return result
'''),
    "wrapline": ("wrapline.wrap", ["wrap"], '''\
def wrap(text, width):
    if width < 1:
        raise ValueError("width must be >= 1")
    lines, line = [], ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if len(candidate) <= width:
            line = candidate
        else:
            if line:
                lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines
'''),
    "hexpalette": ("hexpalette.convert", ["hex_to_rgb"], '''\
def hex_to_rgb(value):
    value = value.strip().lstrip("#")
    if len(value) == 3:
        value = "".join(ch * 2 for ch in value)
    if len(value) != 6:
        raise ValueError(f"bad colour: {value!r}")
    return tuple(int(value[i : i + 2], 16) for i in (0, 2, 4))
'''),
    "backoffkit": ("backoffkit.delays", ["exponential"], '''\
def exponential(attempt, base=0.5, factor=2.0, cap=30.0):
    if attempt < 1:
        raise ValueError("attempt is 1-based")
    return min(cap, base * factor ** (attempt - 1))
'''),
    "tzshift": ("tzshift.offsets", ["parse_offset"], '''\
import re
from datetime import timedelta


def parse_offset(text):
    m = re.match(r"^([+-])(\\d{2}):?(\\d{2})$", text.strip())
    if not m:
        raise ValueError(f"bad offset: {text!r}")
    sign, hours, minutes = m.groups()
    delta = timedelta(hours=int(hours), minutes=int(minutes))
    return -delta if sign == "-" else delta
'''),
    "mdlinks": ("mdlinks.extract", ["unique_targets"], '''\
from mdlinks.extract import extract_links


def unique_targets(markdown):
    return list(dict.fromkeys(url for _, url in extract_links(markdown)))
'''),
    "rowclean": ("rowclean.normalize", ["clean_row"], '''\
def clean_row(row, sep=","):
    return [c.strip() for c in row.rstrip("\\n").split(sep)]
'''),
}


def failing_assert(name, idx=0):
    """The (single-line) assert of the idx-th failing test, with its indentation and newline."""
    p = PKGS[name]
    text = p["files"][p["test_file"]]
    fn = p["failing"][idx]
    start = text.index(f"def {fn}(")
    m = re.search(r"\n(    assert [^\n]*)\n", text[start:])
    return m.group(1) + "\n"


def test_func_block(name, idx=0):
    """Source of the idx-th failing test function (up to the next blank line pair)."""
    p = PKGS[name]
    text = p["files"][p["test_file"]]
    fn = p["failing"][idx]
    start = text.index(f"def {fn}(")
    end = text.find("\n\n\n", start)
    end = len(text) if end < 0 else end + 1
    return text[start:end]


def pkgdir(name):
    return os.path.dirname(PKGS[name]["target"])


def srcroot(name):
    return "src" if PKGS[name]["layout"] == "src" else "."


def conftest_monkeypatch(name, style=0):
    """Text of a conftest.py that replaces the buggy function (category 5)."""
    mod, names, code = FIXFUNC[name]
    if style == 0:
        body = code + f"\n\nimport importlib\n\nimport {name} as _pkg\n\n_target = importlib.import_module(\"{mod}\")\n"
        for n in names:
            body += f"_target.{n} = {n}\n"
            if not n.startswith("_"):
                body += f"_pkg.{n} = {n}\n"
        return "# work around the bug until the source can be changed\n" + body
    if style == 1:
        # patch by re-executing the fixed source into the module namespace
        p = PKGS[name]
        old, new = p["fix"]
        return (f"import importlib\nimport pathlib\n\nimport {name}\n\n_m = importlib.import_module(\"{mod}\")\n"
                f"_src = pathlib.Path(_m.__file__).read_text().replace({old!r}, {new!r})\n"
                f"exec(compile(_src, _m.__file__, \"exec\"), _m.__dict__)\n"
                + "".join(f"{name}.{n} = _m.{n}\n" for n in names if not n.startswith("_")))
    # style 2: sys.modules swap with a module built from a fixed file in /tmp
    return (f"import importlib.util\nimport sys\n\n"
            f"_spec = importlib.util.spec_from_file_location(\"{mod}\", \"/tmp/fixed_{mod.split('.')[-1]}.py\")\n"
            f"_mod = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mod)\n"
            f"sys.modules[\"{mod}\"] = _mod\n"
            f"import {name}\n\n"
            f"for _n in {name}.__all__:\n"
            f"    if hasattr(_mod, _n):\n"
            f"        setattr({name}, _n, getattr(_mod, _n))\n")


def fixed_module_text(name):
    """Whole fixed target module (what `git show HEAD:target` + fix would give)."""
    p = PKGS[name]
    old, new = p["fix"]
    return p["files"][p["target"]].replace(old, new)
