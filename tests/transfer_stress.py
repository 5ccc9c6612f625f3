"""The stress of file transfers under concurrent load, shared by each backend's test: writes and
reads of varied content (empty, unicode, long, many lines) through a sandbox's agent-side
``write_file``/``read_file`` while other sandboxes keep the machine busy. Every read must return
exactly what was written: a silent mismatch is the failure; the retries the backend needed to get
there are counted and printed."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

LOAD = ("python3 -c 'sum(i * i for i in range(3 * 10**6))'", "yes impasse | head -c 2000000 > /dev/null",
        "seq 1 200000 | sort -r | tail -1 > /dev/null")


def content(rng: random.Random, k: int) -> str:
    kind = k % 5
    if kind == 0:
        return ""
    if kind == 1:
        return "".join(rng.choice("abc xyz\n\tÄé中😀") for _ in range(rng.randint(1, 200)))
    if kind == 2:
        return "line\n" * rng.randint(1, 5000)
    if kind == 3:
        return "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(1, 20000)))
    return rng.choice(["x", "\n", "no newline at the end"]) * rng.randint(1, 3)


def stress(make_sandbox, transfers: int = 2000, threads: int = 4, loaders: int = 2) -> dict[str, int]:
    """-> counts: transfers done, silent mismatches (must be 0), retries the backend needed."""
    from impasse.sandbox.base import TRANSFER_RETRIES

    before = dict(TRANSFER_RETRIES)
    stop = threading.Event()
    mismatches: list[str] = []

    def load() -> None:
        with make_sandbox() as sb:
            k = 0
            while not stop.is_set():
                sb.exec(LOAD[k % len(LOAD)], timeout=60)
                k += 1

    def worker(w: int, n: int) -> None:
        rng = random.Random(w)
        with make_sandbox() as sb:
            for k in range(n):
                text = content(rng, k)
                path = f"{sb.workdir}/stress-{w}-{k % 7}.txt"
                sb.write_file(path, text)
                got = sb.read_file(path)
                if got != text:
                    mismatches.append(f"{path}: wrote {len(text)} chars, read {len(got)}")

    pairs = transfers // 2  # one write and one read each
    with ThreadPoolExecutor(loaders + threads) as pool:
        loading = [pool.submit(load) for _ in range(loaders)]
        work = [pool.submit(worker, w, pairs // threads) for w in range(threads)]
        try:
            for f in work:
                f.result()
        finally:
            stop.set()
            for f in loading:
                f.result()
    retries = {k: TRANSFER_RETRIES[k] - before[k] for k in TRANSFER_RETRIES}
    return {"transfers": 2 * threads * (pairs // threads), "silent_mismatches": len(mismatches), **retries}
