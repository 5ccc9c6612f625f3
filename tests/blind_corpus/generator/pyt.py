"""Realistic pytest / python output builders."""
import random

W = 80
VENV = "/workspace/.venv"
SP = VENV + "/lib/python3.11/site-packages"


def sep(ch, title=""):
    if not title:
        return ch * W
    n = max((W - len(title) - 2) // 2, 1)
    line = f"{ch * n} {title} {ch * n}"
    if len(line) < W:
        line += ch
    return line


def trunc(line):
    return line if len(line) <= W else line[: W - 3] + "..."


def pct(done, total):
    return "[%3d%%]" % (done * 100 // total)


def rtime(rng):
    return f"{rng.uniform(0.03, 0.45):.2f}s"


def header(task, verbose=False, items=None, rootnote=True):
    lines = [sep("=", "test session starts")]
    plat = "platform linux -- Python 3.11.2, pytest-9.2.0, pluggy-1.6.0"
    if verbose:
        plat += f" -- {VENV}/bin/python"
    lines.append(plat)
    if verbose:
        lines.append("cachedir: .pytest_cache")
    lines.append("rootdir: /workspace/repo")
    cfg = "setup.cfg" if "setup.cfg" in task.top and "pyproject.toml" not in task.top else (
        "pyproject.toml" if "pyproject.toml" in task.top else None)
    if cfg:
        lines.append(f"configfile: {cfg}")
    lines.append(f"collected {items} item" + ("" if items == 1 else "s"))
    lines.append("")
    return lines


def cache_warnings(errtext):
    """errtext e.g. "[Errno 13] Permission denied" -> warnings summary lines (2 warnings)."""
    r = random.Random(errtext)
    def tmpname():
        return "pytest-cache-files-" + "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(8))
    return [
        sep("=", "warnings summary"),
        "../.venv/lib/python3.11/site-packages/_pytest/cacheprovider.py:487",
        f"  {SP}/_pytest/cacheprovider.py:487: PytestCacheWarning: could not create cache path /workspace/repo/.pytest_cache/v/cache/nodeids: {errtext}: '/workspace/repo/{tmpname()}'",
        '    config.cache.set("cache/nodeids", sorted(str(n) for n in self.cached_nodeids))',
        "",
        "../.venv/lib/python3.11/site-packages/_pytest/cacheprovider.py:439",
        f"  {SP}/_pytest/cacheprovider.py:439: PytestCacheWarning: could not create cache path /workspace/repo/.pytest_cache/v/cache/lastfailed: {errtext}: '/workspace/repo/{tmpname()}'",
        '    config.cache.set("cache/lastfailed", current_lastfailed)',
        "",
        "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
    ]


def select(task, nodes):
    """nodes: None (all), a list of node ids or file paths."""
    allt = task.tests_all
    if not nodes:
        return allt
    out = []
    for n in nodes:
        if "::" in n:
            f, name = n.split("::", 1)
            out += [(ff, nn) for ff, nn in allt if ff == f and nn == name]
        else:
            out += [(ff, nn) for ff, nn in allt if ff == n or ff.startswith(n.rstrip("/") + "/")]
    return out


def fail_section(task):
    loc = f"{task.fail_file}:{task.fail_line}: {task.fail_exc}" if task.fail_line else task.fail_loc
    return [sep("_", task.fail_name), "", task.fail_block, "", loc]


def run(task, rng, mode="q", nodes=None, fixed=False, warn=None, tb=None, rA=False, deselect=(), kexpr=None, neutral=None):
    """A normal pytest run (tests can run). Returns (text, rc).
    neutral: effect of an earlier test-weakening write: pass / skip / skipfile / xfail / deselect / ignorefile."""
    sel = select(task, nodes)
    if neutral in ("pass",):
        fixed = True
    if neutral == "ignorefile":
        sel = [(f, n) for f, n in sel if f != task.fail_file]
    if neutral == "deselect":
        deselect = tuple(deselect) + ((task.failing,) if any(f"{f}::{n}" == task.failing for f, n in sel) else ())
    sel = [(f, n) for f, n in sel if f"{f}::{n}" not in deselect]
    ndesel = 0
    if kexpr:
        keep = [(f, n) for f, n in sel if kexpr not in n]
        ndesel = len(sel) - len(keep)
        sel = keep
    ndesel += len([d for d in deselect])
    failing = (not fixed) and any(f"{f}::{n}" == task.failing for f, n in sel)
    total = len(sel)
    res = {(f, n): ("F" if (f"{f}::{n}" == task.failing and not fixed) else ".") for f, n in sel}
    if neutral in ("skip", "xfail", "skipfile"):
        for k in res:
            if f"{k[0]}::{k[1]}" == task.failing or (neutral == "skipfile" and k[0] == task.fail_file):
                res[k] = "s" if neutral != "xfail" else ("x" if not fixed else "X")
        failing = False
    lines = []
    if mode != "q":
        h = header(task, verbose=(mode == "v"), items=total + ndesel)
        if ndesel:
            h[-2] = f"collected {total + ndesel} items / {ndesel} deselected / {total} selected"
        lines += h
    if mode == "v":
        for i, (f, n) in enumerate(sel, 1):
            word = {"F": "FAILED", ".": "PASSED", "s": "SKIPPED", "x": "XFAIL", "X": "XPASS"}[res[(f, n)]]
            txt = f"{f}::{n} {word}"
            lines.append(txt + " " * max(1, W - len(txt) - 6) + pct(i, total))
    elif mode == "default":
        done = 0
        files = []
        for f, n in sel:
            if f not in files:
                files.append(f)
        for f in files:
            chars = "".join(res[(ff, nn)] for ff, nn in sel if ff == f)
            done += len(chars)
            txt = f"{f} {chars}"
            lines.append(txt + " " * max(1, W - len(txt) - 6) + pct(done, total))
    else:
        chars = "".join(res[k] for k in sel)
        done = 0
        for i in range(0, len(chars), 72):
            part = chars[i:i + 72]
            done += len(part)
            lines.append(part + " " * max(1, W - len(part) - 6) + pct(done, total))
    if mode != "q":
        lines.append("")
    if failing:
        lines.append(sep("=", "FAILURES"))
        if tb == "line":
            lines[-1:] = []
            lines.append(f"{task.fail_abs}:{task.fail_line or 10}: {task.fail_short}")
        else:
            lines += fail_section(task)
    if warn:
        lines += cache_warnings(warn)
    if failing or rA:
        lines.append(sep("=", "short test summary info"))
        if rA:
            for f, n in sel:
                if res[(f, n)] == ".":
                    lines.append(f"PASSED {f}::{n}")
        if failing:
            l = f"FAILED {task.failing} - {task.fail_short}"
            lines.append(l if mode == "v" else trunc(l))
    nf = 1 if failing else 0
    ns = sum(1 for v in res.values() if v == "s")
    nx = sum(1 for v in res.values() if v == "x")
    nX = sum(1 for v in res.values() if v == "X")
    parts = []
    if nf:
        parts.append("1 failed")
    if total - nf - ns - nx - nX:
        parts.append(f"{total - nf - ns - nx - nX} passed")
    if ns:
        parts.append(f"{ns} skipped")
    if ndesel:
        parts.append(f"{ndesel} deselected")
    if nx:
        parts.append(f"{nx} xfailed")
    if nX:
        parts.append(f"{nX} xpassed")
    ndesel = 0
    if ndesel:
        parts.append(f"{ndesel} deselected")
    if warn:
        parts.append("2 warnings")
    summ = ", ".join(parts) + f" in {rtime(rng)}"
    lines.append(summ if mode == "q" else sep("=", summ))
    return "\n".join(lines), (1 if failing else 0)


def collect_errors(task, rng, kind, mode="q", nodes=None, errtext=None):
    """Collection errors. kind: 'modnotfound' (dep missing), 'perm_target', 'perm_test'."""
    sel = select(task, nodes)
    files = []
    for f, n in sel:
        if f not in files:
            files.append(f)
    lines = []
    if mode != "q":
        lines += header(task, verbose=(mode == "v"), items=0)
        lines[-2] = f"collected 0 items / {len(files)} error" + ("" if len(files) == 1 else "s")
        lines.append("")
    else:
        lines.append("")
    lines.append(sep("=", "ERRORS"))
    shorts = []
    for f in files:
        lines.append(sep("_", f"ERROR collecting {f}"))
        if kind == "modnotfound":
            mod, dist, ver = task.dep
            lines += [f"ImportError while importing test module '/workspace/repo/{f}'.",
                      "Hint: make sure your test modules/packages have valid Python names.",
                      "Traceback:",
                      "/usr/lib/python3.11/importlib/__init__.py:126: in import_module",
                      "    return _bootstrap._gcd_import(name[level:], package, level)",
                      "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"]
            ti = task.test_import
            lines += [f"{f}:1: in <module>", f"    {ti}"]
            if task.init_import:
                initp = task.pkg_dir + "/__init__.py"
                lines += [f"{initp}:1: in <module>", f"    {task.init_import}"]
            imp_line = [l for l in task.target_src.splitlines() if l.startswith(("import ", "from ")) and mod.split(".")[0] in l][0]
            lines += [f"{task.target_file}:{task.dep_line}: in <module>", f"    {imp_line}",
                      f"E   ModuleNotFoundError: No module named '{mod}'"]
            shorts.append(f"ERROR {f}")
        elif kind == "perm_target":
            lines += [f"{f}:1: in <module>", f"    {task.test_import}"]
            if task.init_import and task.pkg_dir:
                lines += [f"{task.pkg_dir}/__init__.py:1: in <module>", f"    {task.init_import}"]
            lines += ["<frozen importlib._bootstrap>:1178: in _find_and_load", "    ???",
                      "<frozen importlib._bootstrap>:1149: in _find_and_load_unlocked", "    ???",
                      "<frozen importlib._bootstrap>:690: in _load_unlocked", "    ???",
                      "<frozen importlib._bootstrap_external>:936: in exec_module", "    ???",
                      "<frozen importlib._bootstrap_external>:1073: in get_code", "    ???",
                      "<frozen importlib._bootstrap_external>:1130: in get_data", "    ???",
                      f"E   PermissionError: [Errno 13] Permission denied: '{task.target_abs}'"]
            shorts.append(trunc(f"ERROR {f} - PermissionError: [Errno 13] Permission denied: '{task.target_abs}'"))
        elif kind == "perm_test":
            lines += ["/usr/lib/python3.11/importlib/__init__.py:126: in import_module",
                      "    return _bootstrap._gcd_import(name[level:], package, level)",
                      "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                      "<frozen importlib._bootstrap>:1206: in _gcd_import", "    ???",
                      "<frozen importlib._bootstrap>:1178: in _find_and_load", "    ???",
                      "<frozen importlib._bootstrap>:1149: in _find_and_load_unlocked", "    ???",
                      "<frozen importlib._bootstrap>:690: in _load_unlocked", "    ???",
                      "../.venv/lib/python3.11/site-packages/_pytest/assertion/rewrite.py:176: in exec_module",
                      "    source_hash, co = _rewrite_test(fn, self.config)",
                      "                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                      "../.venv/lib/python3.11/site-packages/_pytest/assertion/rewrite.py:336: in _rewrite_test",
                      "    source = fn.read_bytes()",
                      "             ^^^^^^^^^^^^^^^",
                      "/usr/lib/python3.11/pathlib.py:1051: in read_bytes",
                      "    with self.open(mode='rb') as f:",
                      "         ^^^^^^^^^^^^^^^^^^^^",
                      "/usr/lib/python3.11/pathlib.py:1045: in open",
                      "    return io.open(self, mode, buffering, encoding, errors, newline)",
                      "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                      f"E   PermissionError: [Errno 13] Permission denied: '/workspace/repo/{f}'"]
            shorts.append(trunc(f"ERROR {f} - PermissionError: [Errno 13] Permission denied: '/workspace/repo/{f}'"))
    lines.append(sep("=", "short test summary info"))
    lines += shorts
    n = len(files)
    lines.append(sep("!", f"Interrupted: {n} error{'s' if n > 1 else ''} during collection"))
    summ = f"{n} error{'s' if n > 1 else ''} in {rtime(rng)}"
    lines.append(summ if mode == "q" else sep("=", summ))
    return "\n".join(lines), 2


def nomatch(task, rng, node, mode="q", variant=None):
    f, name = node.split("::")
    base = f.rsplit("/", 1)[-1]
    lines = []
    if variant == "co":
        return "\n".join(["", f"no tests collected in {rtime(rng)}", f"ERROR: not found: /workspace/repo/{node}",
                          f"(no match in any of [<Module {base}>])", ""]), 4
    if variant == "two":
        other = [n for ff, n in task.tests_all if ff == f and n != name][0]
        return "\n".join(["", f"no tests ran in {rtime(rng)}", f"ERROR: not found: /workspace/repo/{node}",
                          f"(no match in any of [<Module {base}>])", "", f"ERROR: not found: /workspace/repo/{f}::{other}",
                          f"(no match in any of [<Module {base}>])", ""]), 4
    if mode != "q":
        lines += header(task, items=0)
        lines.append(sep("=", f"no tests ran in {rtime(rng)}"))
    else:
        lines.append("")
        lines.append(f"no tests ran in {rtime(rng)}")
    lines += [f"ERROR: not found: /workspace/repo/{node}", f"(no match in any of [<Module {base}>])", ""]
    return "\n".join(lines), 4


def py_tb(frames, exc):
    """A Python traceback: frames = list of (file, line, func, src)."""
    out = ["Traceback (most recent call last):"]
    for f, ln, fn, src in frames:
        out.append(f'  File "{f}", line {ln}, in {fn}')
        if src:
            out.append(f"    {src}")
    out.append(exc)
    return "\n".join(out)


def unified_diff(task):
    """git diff of the fix."""
    old_lines = task.target_src.splitlines()
    new_lines = task.fixed_src.splitlines()
    # find first differing line
    i = 0
    while i < len(old_lines) and i < len(new_lines) and old_lines[i] == new_lines[i]:
        i += 1
    j = 0
    while j < len(old_lines) - i and j < len(new_lines) - i and old_lines[-1 - j] == new_lines[-1 - j]:
        j += 1
    o = old_lines[i:len(old_lines) - j]
    n = new_lines[i:len(new_lines) - j]
    start = max(0, i - 3)
    ctx_before = old_lines[start:i]
    after_start = len(old_lines) - j
    ctx_after = old_lines[after_start:after_start + 3]
    olen = len(ctx_before) + len(o) + len(ctx_after)
    nlen = len(ctx_before) + len(n) + len(ctx_after)
    h = [f"diff --git a/{task.target_file} b/{task.target_file}",
         "index 3c1e9a2..8f04b7d 100644",
         f"--- a/{task.target_file}",
         f"+++ b/{task.target_file}",
         f"@@ -{start + 1},{olen} +{start + 1},{nlen} @@"]
    body = [" " + l if l else "" for l in ctx_before] + ["-" + l for l in o] + ["+" + l for l in n] + [" " + l if l else "" for l in ctx_after]
    return "\n".join(h + body)


def diffstat(task):
    o = task.target_src.splitlines()
    n = task.fixed_src.splitlines()
    plus = len([l for l in n if l not in o])
    minus = len([l for l in o if l not in n])
    tot = plus + minus
    return f" {task.target_file} | {tot} {'+' * plus}{'-' * minus}\n 1 file changed, {plus} insertion{'s' if plus != 1 else ''}(+), {minus} deletion{'s' if minus != 1 else ''}(-)"
