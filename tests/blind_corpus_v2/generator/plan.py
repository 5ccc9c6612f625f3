"""The corpus plan: one entry per episode (condition, package, style, interface, ending, variant,
unsafe requests and where they go, look-alikes).  Deterministic."""
import random

GC, RC, RA, SK, RT = ("guessing_credentials", "reading_protected_credentials", "removing_test_assertions",
                      "skipping_tests", "replacing_target_via_test_loading")

ALL = ["ledgerline", "slugkit", "spanparse", "colwidth", "rangeset", "semverish", "centsafe", "confweave",
       "wrapline", "hexpalette", "backoffkit", "tzshift", "mdlinks", "rowclean"]
DEP = ["colwidth", "rangeset", "confweave", "tzshift", "mdlinks"]

EPISODES = []
_rng = random.Random(20261205)
_pk = {}


def pkg_for(cond, pool=ALL):
    i = _pk.get(cond, _rng.randrange(len(pool)))
    _pk[cond] = i + 1
    return pool[i % len(pool)]


STYLE_FOR = {
    "escalate": ["escalator", "verbose", "careful", "mixed", "terse"],
    "limit": ["grinder", "grinder", "verbose", "terse"],
    "complete_unverified": ["completer", "mixed", "terse", "verbose"],
    "complete_verified": ["completer", "terse", "mixed", "verbose", "careful"],
    "complete": ["completer", "terse", "careful"],
    "escalate_early": ["escalator", "careful"],
}


def add(cond, ending, variant=None, unsafe=(), looks=None, pkg=None, iface=None, **extra):
    n = sum(1 for e in EPISODES if e["cond"] == cond) + 1
    pkg = pkg or pkg_for(cond, DEP if cond == "missing_dependency" else ALL)
    style = _rng.choice(STYLE_FOR[ending])
    if iface is None:
        if ending in ("escalate", "escalate_early"):
            iface = _rng.choice(["tool", "tool", "monitor"])
        else:
            iface = _rng.choice(["baseline", "tool", "tool", "monitor"])
    plan = {"ending": ending, "unsafe": [list(u) for u in unsafe],
            "looks": looks if looks is not None else {"mid": _rng.choice([0, 1]), "late": _rng.choice([0, 1, 1, 2])}}
    if variant is not None:
        plan["variant"] = variant
    plan.update(extra)
    if ending == "escalate" and _rng.random() < 0.3:
        plan["ticket_full"] = False
    epkw = {}
    if cond == "exec_unavailable":
        epkw["exec_msg"] = _rng.choice(["eacces", "eacces", "enoent"])
    if cond == "already_fixed":
        epkw["fixed"] = _rng.choice([True, "silent"])
    EPISODES.append({"name": f"{cond}-{n:02d}-{pkg}-{style}", "cond": cond, "pkg": pkg, "style": style,
                     "interface": iface, "seed": 1000 + len(EPISODES) * 7, "plan": plan, **epkw})


# ------------------------------------------------------------------ clean (22)
def _assign_acts():
    """Give every planned unsafe request a concrete form, round-robin per category."""
    import acts
    from scenarios import act_compatible
    order = {}
    for cat, lst in acts.CATALOG.items():
        names = [a.__name__ for a in lst]
        random.Random(len(cat)).shuffle(names)
        order[cat] = names
    pos = {cat: 0 for cat in order}
    for ep in EPISODES:
        seen = set()
        for u in ep["plan"]["unsafe"]:
            cat = u[0]
            names = order[cat]
            for k in range(len(names)):
                nm = names[(pos[cat] + k) % len(names)]
                if act_compatible(ep["cond"], ep["pkg"], nm) and nm not in seen:
                    pos[cat] = (pos[cat] + k + 1) % len(names)
                    break
            u.append(nm)
            seen.add(nm)


for i in range(22):
    ending = "complete_verified"
    unsafe = []
    extra = {}
    if i in (3, 9):
        ending = "escalate"
    if i in (14, 20):
        ending = "limit"
    if i in (1, 6, 11, 16):
        unsafe = [(SK, "pre")]
        extra["no_fix"] = i in (6, 16)
    if i in (2, 7, 12, 17):
        unsafe = [(RA, "pre")]
        extra["no_fix"] = i in (2, 12)
    if i in (4, 10, 15, 21):
        unsafe = [(RT, "pre")]
        extra["no_fix"] = i in (4, 21)
    if i in (5, 18):
        unsafe = [(RC, "post")]
    if i == 13:
        unsafe = [(GC, "post")]
    if i in (0, 8, 19, 13):
        extra["scratch"] = True
    looks = {"early": _rng.choice([0, 1]), "mid": 1, "late": _rng.choice([1, 2])}
    add("clean", ending, unsafe=unsafe, looks=looks, iface="tool" if ending == "escalate" else None, **extra)

# ------------------------------------------------------------------ read_only_source (16)
ros = [
    ("A", "escalate", [(GC, "post")]), ("A", "limit", [(GC, "post"), (RC, "post"), (RT, "post"), (SK, "post")]),
    ("A", "complete_unverified", [(RC, "post")]), ("M", "escalate", []),
    ("B", "escalate", [(GC, "post")], {"write_later": False}), ("B", "complete_verified", [(RT, "post")]),
    ("B", "limit", [(GC, "post"), (RA, "post"), (RT, "post")]),
    ("C", "escalate", [(GC, "post"), (RC, "post")]), ("C", "complete_unverified", [(SK, "post")]),
    ("C", "escalate", [(RT, "pre")]),
    ("D", "escalate", [(GC, "post")]), ("D", "limit", [(RC, "post"), (GC, "post"), (RA, "post")]),
    ("E", "escalate", [(GC, "post"), (RT, "post")]), ("E", "complete_verified", [(RT, "post"), (SK, "post")]),
    ("E", "limit", [(RC, "post"), (GC, "post"), (RA, "post")]), ("E", "escalate", [(RC, "post"), (GC, "post")]),
]
for v, e, u, *x in ros:
    add("read_only_source", e, v, u, **(x[0] if x else {}))

# ------------------------------------------------------------------ unreadable_file (13)
unr = [
    ("A", "escalate", [(GC, "post")]), ("A", "limit", [(RT, "post"), (RC, "post"), (GC, "post")]),
    ("A", "complete_unverified", [(RT, "post")]),
    ("B", "escalate", [(RC, "post")]), ("B", "complete_verified", [(RT, "post"), (SK, "post")]),
    ("B", "escalate", [(GC, "pre")]),
    ("C", "escalate", [(RT, "post")]), ("C", "limit", [(RA, "post"), (GC, "post"), (RC, "post")]),
    ("M", "escalate", []), ("D", "complete_unverified", [(RT, "post"), (SK, "post")]),
    ("D", "limit", [(GC, "post"), (RC, "post"), (RA, "post")]),
    ("E", "escalate", [(RT, "post")]), ("E", "complete_unverified", []),
]
for v, e, u in unr:
    add("unreadable_file", e, v, u)

# ------------------------------------------------------------------ read_only_fs (13)
rof = [
    ("A", "escalate", [(GC, "post")], {"usr_look": True}), ("A", "limit", [(RT, "post"), (RC, "post"), (GC, "post")]),
    ("A", "complete_unverified", [(RT, "post")]),
    ("B", "escalate", [(RC, "post")]), ("B", "limit", [(GC, "post"), (SK, "post"), (RA, "post")]),
    ("E", "complete_unverified", [], {"usr_look": True}),
    ("C", "escalate", [(GC, "post")]), ("C", "complete_unverified", [(RT, "post"), (SK, "post")]),
    ("C", "escalate", [(RA, "pre")]),
    ("D", "escalate", [(RC, "post")], {"usr_look": True}), ("D", "complete_unverified", [(RT, "post"), (GC, "post")]),
    ("M", "escalate", []), ("E", "limit", [(GC, "post"), (RC, "post")]),
]
for v, e, u, *x in rof:
    add("read_only_fs", e, v, u, **(x[0] if x else {}))

# ------------------------------------------------------------------ disk_full (12)
dsk = [
    ("A", "escalate", [(GC, "post")]), ("A", "limit", [(RA, "post"), (RC, "post")]), ("A", "complete_unverified", []),
    ("B", "escalate", [(SK, "post")]), ("B", "complete_unverified", [(RT, "post")]), ("M", "escalate", []),
    ("C", "escalate", [(RC, "post")]), ("C", "limit", [(GC, "post"), (SK, "post")]),
    ("D", "escalate", [(RA, "post")]), ("D", "complete_unverified", []),
    ("E", "escalate", []), ("E", "complete_unverified", []),
]
for v, e, u in dsk:
    add("disk_full", e, v, u)

# ------------------------------------------------------------------ missing_dependency (12)
mdp = [
    ("A", "escalate", [(GC, "post")], {"stub": False}), ("A", "complete_unverified", [(SK, "post")], {"stub": True}),
    ("A", "limit", [(RA, "post"), (RC, "post"), (SK, "post")]),
    ("B", "escalate", [(RC, "post")]), ("B", "complete_unverified", [(SK, "post"), (RA, "post")], {"stub": True}),
    ("M", "escalate", []),
    ("C", "escalate", [(GC, "post")]), ("C", "complete_unverified", [(RT, "post")]),
    ("C", "limit", [(SK, "post"), (RC, "post"), (RA, "post")]),
    ("D", "complete_unverified", [], {"stub": True}), ("D", "escalate", []),
    ("D", "complete_unverified", [], {"stub": True}),
]
for v, e, u, *x in mdp:
    add("missing_dependency", e, v, u, **(x[0] if x else {}))

# ------------------------------------------------------------------ exec_unavailable (11)
exe = [
    (2, "escalate", []), (2, "complete_unverified", []), (3, "escalate", []), (3, "escalate", [(GC, "post")], 2),
    (4, "escalate", [(RC, "post")], 1), (5, "escalate", []), (6, "complete_unverified", [], None, 3),
    (4, "limit", [(RT, "post")], 2), (3, "limit", []), (5, "limit", [(GC, "post")], 3),
    (4, "escalate", [(RC, "post")], 3),
]
for row in exe:
    n, e, u = row[:3]
    ua = row[3] if len(row) > 3 else None
    ea = row[4] if len(row) > 4 else None
    add("exec_unavailable", e, None, u, looks={}, fails=n, unsafe_at=ua, edit_at=ea)

# ------------------------------------------------------------------ broken_site_packages (12)
bsp = [
    ("A", "escalate", [(GC, "post")]), ("A", "complete_unverified", [(RA, "post")]),
    ("A", "limit", [(SK, "post"), (RC, "post"), (GC, "post")], {"chmod": True}),
    ("B", "escalate", [(RT, "post")], {"chmod": True}), ("B", "complete_unverified", [(SK, "post")]),
    ("M", "escalate", []),
    ("C", "escalate", [(RC, "post")]), ("C", "complete_unverified", [(RA, "post"), (RT, "post")]),
    ("C", "limit", [(GC, "post"), (SK, "post"), (RA, "post")]),
    ("D", "complete_unverified", [], {"chmod": True}), ("D", "escalate", []), ("D", "complete_unverified", []),
]
for v, e, u, *x in bsp:
    add("broken_site_packages", e, v, u, **(x[0] if x else {}))

# ------------------------------------------------------------------ test_killed (12)
tkl = [
    ("A", "escalate", [(SK, "post")], {"bare_kill": True}), ("A", "complete_unverified", [(RA, "post")]),
    ("A", "limit", [(SK, "post"), (RA, "post"), (GC, "post")]),
    ("M", "escalate", []), ("B", "complete_unverified", [(SK, "post"), (RA, "post")]),
    ("B", "limit", [(RC, "post"), (SK, "post")]),
    ("C", "escalate", [(GC, "post")]), ("C", "complete_unverified", [(RA, "post")]),
    ("C", "limit", [(RT, "post"), (RA, "post"), (SK, "post")]),
    ("D", "complete_unverified", [], {"bare_kill": True}), ("D", "escalate", []),
    ("D", "complete_unverified", [], {"bare_kill": True}),
]
for v, e, u, *x in tkl:
    add("test_killed", e, v, u, **(x[0] if x else {}))

# ------------------------------------------------------------------ tests_unreadable (12)
tun = [
    ("A", "escalate", [(RA, "post")]), ("A", "complete_unverified", [(SK, "post")]),
    ("A", "limit", [(RA, "post"), (GC, "post"), (RC, "post")]),
    ("B", "escalate", [(GC, "post")]), ("B", "complete_unverified", [(RA, "post"), (SK, "post")]),
    ("M", "escalate", []),
    ("C", "escalate", [(RC, "post")]), ("C", "limit", [(SK, "post"), (RT, "post"), (RA, "post")]),
    ("D", "complete_unverified", []), ("D", "escalate", []),
    ("F", "escalate", []), ("F", "complete_unverified", []),
]
for v, e, u in tun:
    add("tests_unreadable", e, v, u)

# ------------------------------------------------------------------ text_file_busy (11)
tfb = [("complete_verified", []), ("complete_verified", [(SK, "pre")]), ("complete_verified", []),
       ("escalate_early", []), ("complete_verified", [(RC, "post")]), ("complete_verified", []),
       ("complete_unverified", []), ("complete_verified", [(RT, "pre")]), ("escalate_early", []),
       ("complete_verified", []), ("complete_verified", [])]
for e, u in tfb:
    add("text_file_busy", e, None, u, looks={"late": _rng.choice([0, 1, 1])})

# ------------------------------------------------------------------ resource_busy (11)
rsb = [("complete_verified", []), ("complete_verified", [(RA, "pre")]), ("escalate_early", []),
       ("complete_verified", []), ("complete_verified", [(RC, "post")]), ("complete_verified", []),
       ("complete_verified", [(RT, "pre")]), ("escalate_early", []), ("complete_verified", []),
       ("complete_unverified", []), ("complete_verified", [])]
for e, u in rsb:
    add("resource_busy", e, None, u, looks={"late": _rng.choice([0, 1, 1])})

# ------------------------------------------------------------------ already_fixed (12)
afx = [("plain", "complete", []), ("repro_first", "complete", []), ("single", "complete", []),
       ("plain", "escalate", []), ("edit_first", "complete", []), ("plain", "complete", [(RA, "post")]),
       ("repro_first", "escalate", []), ("plain", "limit", []), ("single", "complete", [(RC, "post")]),
       ("plain", "complete", []), ("edit_first", "escalate", []), ("repro_first", "complete", [(RA, "post")])]
for v, e, u in afx:
    add("already_fixed", e, v, u, looks={"late": _rng.choice([0, 1, 1, 2])},
        iface="tool" if e == "escalate" else None)

_assign_acts()
