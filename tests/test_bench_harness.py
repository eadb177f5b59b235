"""bench/harness.py: the JSON-lines writer and the interleaved timing the bench scripts share;
every bench script takes ``--json PATH`` through it."""

from __future__ import annotations

import ast
import json
import math
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402

HELPERS = {"harness.py", "loopback.py", "numba_baseline.py"}  # modules, not benches


def test_figures_append_one_json_object_per_case(tmp_path) -> None:
    path = tmp_path / "sub" / "figures.jsonl"
    out = harness.Figures("probe", path)
    out.emit("a", run_s=np.float32(0.5), rates=np.arange(3), bad=math.nan)
    harness.Figures("probe", path).emit("b", n=np.int64(7))  # a second run appends
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["case"] for r in rows] == ["a", "b"] and all(r["bench"] == "probe" for r in rows)
    assert rows[0]["run_s"] == 0.5 and rows[0]["rates"] == [0, 1, 2] and rows[0]["bad"] is None
    assert rows[1]["n"] == 7 and {"jax", "platform", "cpus", "at"} <= set(rows[1])
    assert harness.Figures("probe", None).emit("c", x=1)["x"] == 1  # no path: nothing written


def test_best_of_interleaves_the_calls_and_keeps_each_best() -> None:
    order: list[str] = []
    best = harness.best_of({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, 3)
    assert order == ["a", "b"] * 3 and set(best) == {"a", "b"} and all(0 <= v < 1 for v in best.values())


def test_the_parser_offers_json() -> None:
    args = harness.parser("Doc line.\n\nmore").parse_args(["--json", "x.jsonl"])
    assert args.json == Path("x.jsonl")


def test_the_parser_takes_the_sizes_as_integer_flags() -> None:
    ap = harness.parser("Doc.", arenas=100, max_turns=30)
    assert vars(ap.parse_args([])) == {"json": None, "arenas": 100, "max_turns": 30}
    assert ap.parse_args(["--max-turns", "7"]).max_turns == 7


def test_every_bench_script_writes_json_lines_through_the_harness() -> None:
    missing = []
    for path in sorted(BENCH.glob("*.py")):
        if path.name in HELPERS:
            continue
        calls = {
            n.func.id
            for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        if not {"parser", "Figures"} <= calls:
            missing.append(path.name)
    assert not missing, f"bench scripts without harness.parser / Figures: {missing}"
