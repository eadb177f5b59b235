"""bench/llm_scale.py at a small size (issue 38): LLM arenas in one LiveBatch against a
loopback endpoint, under the operator's maxInFlight. Its timing targets are the bench's to
report (no timed asserts here); what a run must show is asserted."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import llm_scale  # noqa: E402


def test_llm_scale_runs_small_within_max_in_flight_and_without_fallbacks() -> None:
    out = llm_scale.run(arenas=2, players=5, months=2, delay_ms=5.0, max_in_flight=3)
    got = asyncio.run(out)
    assert got["months_played"] == 2 and got["calls"] == 2 * 5  # the month after the first
    assert 1 <= got["peak_in_flight"] <= 3 and got["fallbacks"] == 0
    assert got["bound_s"] == got["calls"] * 0.005 / 3 and got["cpu_ms_per_call"] > 0
