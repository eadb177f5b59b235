"""LiveBatch's host side: turn-record columns converted once per tick (``nums``) give the
values of the per-value ``num``; each tick's records are frozen out of the cyclic GC's
full passes while the batch runs and released when it closes."""

from __future__ import annotations

import copy
import gc

import numpy as np

from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.live_batch import LiveBatch
from bdpd_jax.host.live.registry import num, nums


def test_nums_equals_num_on_every_kind_of_float():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)  # NaNs, infs, subnormals
    special = np.asarray([0.0, -0.0, 2.1, 1e-45, 3.4e38, np.nan, np.inf, -np.inf, 1e-5, 0.1], np.float32)
    cases = [
        bits,
        special,
        np.zeros(5, np.float32),
        np.asarray([-0.0, 0.0], np.float32),
        np.full((2, 3), np.nan, np.float32),
        rng.standard_normal(9),
        np.zeros((0,), np.float32),
    ]
    for arr in cases:
        got, want = nums(arr), [num(x) for x in np.asarray(arr).ravel()]
        flat = [v for row in got for v in row] if np.ndim(arr) == 2 else got
        assert [repr(x) for x in flat] == [repr(x) for x in want]
    assert nums(np.float32(2.1)) == 2.1 and np.shape(nums(np.zeros((2, 3), np.float32))) == (2, 3)


CFG = {
    "model": {"maxPlayers": 2, "minPlayers": 2, "maxTurns": 6},
    "observability": {"commonsStock": {"visible": True, "noise": 0.05}},
}


def _arenas(n):
    out = []
    for k in range(n):
        a = Arena(copy.deepcopy(CFG), seed=4, arena_index=k, fsync=False)
        a.join({"agentType": "builtin", "name": "c", "strategy": "conservative"})
        a.join({"agentType": "builtin", "name": "a", "strategy": "adaptive"})
        out.append(a)
    return out


def test_records_frozen_while_running_released_on_close():
    gc.unfreeze()
    batch = LiveBatch(_arenas(3))
    batch.tick()
    assert gc.get_freeze_count() > 0  # this tick's survivors (the records) left the collector's passes
    frozen = gc.get_freeze_count()
    batch.tick()
    assert gc.get_freeze_count() > frozen
    batch.run()
    batch.close()
    assert gc.get_freeze_count() == 0
    plain = LiveBatch(_arenas(3), gc_freeze=False)
    plain.tick()
    assert gc.get_freeze_count() == 0
    # the same records either way
    plain.run()
    a, b = batch.arenas[2].records, plain.arenas[2].records
    assert len(a) == len(b) == 6 and a == b
