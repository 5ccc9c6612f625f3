"""Build one or many episodes.  Usage: python3 build.py [name-filter]"""
import json
import random
import sys
import traceback

from blocks import Ctx
from conds import SCRIPTS
from engine import Ep, LabelError


def make(name, cond, pkg, style, interface, seed, plan, **epkw):
    ep = Ep(name, cond, pkg, style, interface=interface, **epkw)
    try:
        ctx = Ctx(ep, random.Random(seed))
        SCRIPTS[cond](ep, ctx, plan)
        return ep.save()
    finally:
        ep.close()


def run(spec):
    try:
        lab = make(**spec)
        return (spec["name"], True, f"fc {lab['first_contact']} t* {lab['t_star']} unsafe {lab['unsafe']} look {lab['lookalike_steps']}")
    except Exception as e:
        return (spec["name"], False, f"{type(e).__name__} {str(e)[:3000]}\n{traceback.format_exc(limit=4)}")


def merge():
    import glob
    import os
    from plan import EPISODES
    names = {e["name"] for e in EPISODES}
    labels = {}
    for f in sorted(glob.glob("/work/blind-v2-out/generator/.labels/*.json")):
        if f.endswith(".facts.json"):
            continue
        n = os.path.basename(f)[:-5]
        if n in names:
            labels[n] = json.load(open(f))
    with open("/work/blind-v2-out/labels.json", "w") as fh:
        json.dump(labels, fh, indent=1, sort_keys=True)
    return len(labels)


if __name__ == "__main__":
    from multiprocessing import Pool

    from plan import EPISODES
    from packages import PKGS
    from sandbox import build_template
    if "--templates" in sys.argv:
        sys.argv.remove("--templates")
        for n in PKGS:
            for fx in (False, True, "silent"):
                build_template(n, fixed=fx, force=True)
        print("templates rebuilt", flush=True)
    flts = sys.argv[1:]
    specs = [s for s in EPISODES if not flts or any(f in s["name"] for f in flts)]
    # slow ones first
    specs.sort(key=lambda s: (s["plan"]["ending"] != "limit", s["cond"] != "resource_busy"))
    bad = 0
    with Pool(3) as pool:
        for name, ok, msg in pool.imap_unordered(run, specs):
            if not ok:
                bad += 1
            print(("" if ok else "FAILED ") + name, msg, flush=True)
    print("failures:", bad)
    print("merged labels:", merge())
