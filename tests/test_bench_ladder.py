"""bench/xla_ladder.py times hand-written programs of the bench game against the kernel; its
figures mean something only if every rung plays the kernel's game. Each rung's final wealth
must equal the kernel's (simulate of bench/throughput.py's config) on a small batch."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


# bench/throughput.py turns on JAX's persistent compilation cache when imported (for its own
# runs); the suite keeps JAX's settings as they were
_CACHE_SETTINGS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")


@pytest.fixture(scope="module")
def ladder():
    import jax

    saved = {k: getattr(jax.config, k) for k in _CACHE_SETTINGS}
    sys.path.insert(0, str(BENCH))
    try:
        import throughput
        import xla_ladder
    finally:
        sys.path.remove(str(BENCH))
        for k, v in saved.items():
            jax.config.update(k, v)
    return throughput, xla_ladder


def test_every_rung_plays_the_kernels_game(ladder):
    throughput, xla_ladder = ladder
    import bdpd_jax

    b, t = 48, 12
    res = bdpd_jax.simulate(throughput.config(t), n_arenas=b, history=False, progress=False)
    kernel = res.summary[[f"wealth_{i}" for i in range(4)]].to_numpy().T
    assert np.ptp(kernel) > 1.0  # the players' wealth moved: the comparison is not of constants
    for rung in xla_ladder.RUNGS:
        _, wealth = xla_ladder.ladder_runner(rung, b, t)
        np.testing.assert_allclose(np.asarray(wealth), kernel, rtol=1e-5, atol=1e-4, err_msg=rung)


def test_the_rungs_add_duties_in_order(ladder):
    _, xla_ladder = ladder
    duties = [xla_ladder.duties_of(r) for r in xla_ladder.RUNGS]
    assert duties[0] == set() and all(a < b for a, b in zip(duties, duties[1:], strict=False))
