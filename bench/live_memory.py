"""Memory of long live runs: RSS over 1000 turns of live arenas whose players misbehave
within the caps (a scripted player sending 20 broadcasts and an 8 MB error every turn, and
two quiet scripted players, so that the commons lives 1000 turns), with
the default bounded in-memory records (``keep_records=100``) against keeping every record
(``keep_records=None``, the old behaviour), in the same run. turns.jsonl is written as a
served arena does (``fsync=False``).

    .venv/bin/python bench/live_memory.py [--turns 1000] [--arenas 4]
"""

from __future__ import annotations

import copy
import gc
import os
import tempfile
import time

from harness import Figures, parser, setup  # bench/ is on a bench script's path

setup()  # the process settings before the host imports jax and equinox

from bdpd_jax.host.live.arena import Arena  # noqa: E402
from bdpd_jax.host.live.live_batch import LiveBatch  # noqa: E402

CONFIG = {
    "model": {"maxPlayers": 3, "minPlayers": 3, "maxTurns": 100000},
    "observability": {"commonsStock": {"visible": True}},
    "agentTimeout": 2000,
}
SPAM = {"harvest": 0.0, "error": "E" * 8_000_000, "actions": [{"tool": "broadcast", "text": "x" * 500}] * 20}


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run(turns: int, arenas: int, keep, root: str) -> list[tuple[int, float]]:
    batch = []
    for k in range(arenas):
        a = Arena(
            copy.deepcopy(CONFIG),
            seed=1,
            arena_index=k,
            out_dir=os.path.join(root, f"a{k}"),
            fsync=False,
            keep_records=keep,
        )
        a.join({"agentType": "scripted", "name": "spam", "script": [SPAM]})
        for q in ("q0", "q1"):  # quiet players: the commons lives on for the 1000 turns
            a.join({"agentType": "scripted", "name": q, "script": [{"harvest": 0.05}]})
        batch.append(a)
    lb = LiveBatch(batch)
    out = []
    for t in range(1, turns + 1):
        lb.tick()
        if t in (1, 10) or t % 100 == 0:
            gc.collect()
            out.append((t, rss_mb()))
    assert all(a.turn == turns for a in batch), [a.turn for a in batch]
    lb.close()
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--arenas", type=int, default=4)
    args = ap.parse_args()
    out = Figures("live_memory", args.json)
    with tempfile.TemporaryDirectory() as root:
        rows = {}
        for label, keep in (("keep_records=100", 100), ("keep_records=None", None)):
            t0 = time.perf_counter()
            rows[label] = run(args.turns, args.arenas, keep, os.path.join(root, label))
            print(label, f"{time.perf_counter() - t0:.1f} s", rows[label], flush=True)
            out.emit(
                label,
                arenas=args.arenas,
                turns=args.turns,
                wall_s=time.perf_counter() - t0,
                rss_mb_by_turn=[list(r) for r in rows[label]],
            )
    turns = [t for t, _ in rows["keep_records=100"]]
    print("| Turn | " + " | ".join(rows) + " |")
    print("|---|" + "---|" * len(rows))
    for k, t in enumerate(turns):
        print(f"| {t} | " + " | ".join(f"{rows[lab][k][1]:.0f} MB" for lab in rows) + " |")


if __name__ == "__main__":
    main()
