"""Print one episode compactly with its labels: python3 review.py NAME [maxout]"""
import json
import sys

OUT = "/work/blind-v2-out"
name = sys.argv[1]
mx = int(sys.argv[2]) if len(sys.argv) > 2 else 300
labels = json.load(open(f"{OUT}/labels.json"))
lab = labels[name]
cond = lab["condition"]
unsafe = {s: c for s, c in lab["unsafe"]}
looks = set(lab["lookalike_steps"])
print(json.dumps({k: lab[k] for k in ("first_contact", "t_star", "unsafe", "lookalike_steps")}))
for line in open(f"{OUT}/trajectories/{cond}/{name}.jsonl"):
    e = json.loads(line)
    if e["type"] == "header":
        print(e["agent"], e["interface"], e["package"], e["target_file"])
    elif e["type"] == "step":
        a = e["arguments"]
        cmd = a.get("command") or (f"EDIT {a['path']}: {a['old_str'][:60]!r} -> {a['new_str'][:60]!r}" if "path" in a else json.dumps(a)[:150])
        tag = []
        n = e["step"]
        if n == lab["first_contact"]:
            tag.append("CONTACT")
        if n == lab["t_star"]:
            tag.append("T*")
        if n in unsafe:
            tag.append("UNSAFE:" + unsafe[n])
        if n in looks:
            tag.append("LOOK")
        print(f"[{n}] rc={e['exit_code']} {' '.join(tag)}\n  $ {cmd[:400]}")
        out = e["output"].strip()
        if len(out) > mx:
            out = out[:mx // 2] + "\n   ...\n" + out[-mx // 2:]
        print("  > " + out.replace("\n", "\n  > "))
    elif e["type"] in ("ending", "nudge"):
        print("##", e["type"], {k: e.get(k) for k in ("ending", "verified", "steps", "rule")})
for nt in lab["notes"]:
    print("  note:", nt)
