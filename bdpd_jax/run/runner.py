"""Running one batch of arenas over many turns: the compiled programs, the arena keys, and
skipping the arenas that have ended.

A game that has ended (collapsed, or past ``maxTurns``) is frozen: the scan still runs its
turns as no-ops. On one device the chunk program itself stops once every arena of the
batch has ended (kernels/rollout.py). :func:`run_batch` runs the turns in chunks and looks
at the batch at each chunk boundary (one bool per arena): once every arena has ended it
stops; when enough have ended it re-partitions the batch, so the next chunks run only the
live arenas (gathered to a narrower width, padded by repeating a live arena) and the ended
ones' final states are written back in place. Each arena's numbers do not depend on the
batch it runs in, so the results are bit-identical and in arena order.

With history, the records of an ended arena's frozen turns are the same every turn (its
state, and with it every input of the turn, no longer changes), so the turns the batch no
longer runs get the record of the arena's last frozen turn: an arena is dropped only after a
chunk whose last turn it did not play. The records are exactly those of a full run.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels import rng
from ..kernels.game import Game
from ..kernels.rollout import init_batch, run_turns
from ..kernels.state import still_playing
from ..kernels.stored import restored

TRACES: dict[str, int] = {"run": 0, "init": 0}
# Arena-turns the chunk programs were given (batch width x chunk length; a chunk on one
# device stops early once all its arenas have ended), summed over runs: a measure of the work
# re-partitioning skipped (played arena-turns come from the results).
SCANNED: dict[str, int] = {"arena_turns": 0}

# Re-partition only when it saves at least this many arena-turns (a new batch width costs a
# compile of the chunk program, ~0.3-0.6 s on 2 CPU cores: ~2e7 arena-turns of this game)
# and the new width is at most 3/4 of the current one.
MIN_SAVED_ARENA_TURNS = 1 << 22
SHRINK = 0.75

# Lanes (kernels/rollout.run_turns): XLA:CPU's cost model leaves a memory-bound op on one
# thread unless it moves >= 512 KB, so a batch of 2 048-12 287 arenas runs much of its turn
# on one core; as 4 independent lanes its ops run side by side: 9-14 % less time per turn
# at 8 192 arenas (25-30 % before the requests were checked per player; bench/README.md,
# "Lanes" and "The ladder"), for 2-3x the chunk program's compile (~1-2 s more, once per
# process, or once with the persistent compilation cache). So lanes are chosen only for the
# sub-batch of a re-partition (a compile happens there anyway, and its arenas are known to
# live past a chunk: a run whose arenas all end in the first chunk, like the seed payload's,
# never pays for them), when it has at least LANE_MIN_ARENA_TURNS left (>= ~0.5 s of
# turns), and on one device (a sharded batch keeps its slices on their devices).
LANES = 4
LANE_WIDTHS = (2048, 12288)
LANE_MIN_ARENA_TURNS = 1 << 24


def lanes_for(width: int, turns_left: int, n_dev: int = 1) -> int:
    """How many lanes the chunk program of a re-partition's ``width`` arenas runs (1: none)."""
    lo, hi = LANE_WIDTHS
    if n_dev == 1 and lo <= width < hi and width * turns_left >= LANE_MIN_ARENA_TURNS:
        return LANES
    return 1


def one_program(history: bool, chunk_turns: int, n_turns: int) -> bool:
    """Whether a run (on one device) is a single program from keys to summary numbers
    (``simulate.compiled_whole``): one turn chunk, so no boundary to skip ended arenas at,
    and no history to keep."""
    return not history and chunk_turns >= n_turns


def _counted_run(game: Game, n_turns: int, history: bool, every: int, stop: bool, lanes: int, keys, state, params):
    TRACES["run"] += 1  # Python side effect: runs once per trace, never per call
    return run_turns(game, n_turns, history, keys, state, params, every, stop, lanes)


@functools.lru_cache(maxsize=64)
def compiled_run(
    game: Game, n_turns: int, history: bool, every: int = 1, stop_when_ended: bool = False, lanes: int = 1
):
    """The jitted chunk runner of a game; one per (game, chunk length, history, every, lanes).
    ``stop_when_ended``: the loop stops once every arena has ended (with history, after the
    first turn no arena played, its record given to the turns left: kernels/rollout.py),
    which reads the whole batch's flags each turn (run_batch asks for it on one device)."""
    return jax.jit(functools.partial(_counted_run, game, n_turns, history, every, stop_when_ended, lanes))


def _counted_init(game: Game, keys, params):
    TRACES["init"] += 1
    return init_batch(game, params)


@functools.lru_cache(maxsize=64)
def compiled_init(game: Game):
    return jax.jit(functools.partial(_counted_init, game))


def keys_of(seed: jax.Array, arenas: jax.Array) -> jax.Array:
    """uint32[2, B] keys of arena indices (traceable: ``arena_keys`` is its compiled call,
    and a whole-run program derives its keys with it)."""
    return jax.vmap(lambda a: rng.arena_key(seed, a), out_axes=-1)(arenas)


_keys_of = jax.jit(keys_of)


def key_words(seed: int, arenas: np.ndarray) -> tuple[np.uint32, np.ndarray]:
    """A run's seed and global arena indices as the 32-bit words the keys are hashed from."""
    return np.uint32(int(seed) & 0xFFFFFFFF), np.asarray(arenas).astype(np.uint32)


def arena_keys(seed: int, arenas: np.ndarray) -> jax.Array:
    """uint32[2, B] keys of the given global arena indices (one compiled call)."""
    return _keys_of(*key_words(seed, arenas))


def to_numpy(tree: Any) -> Any:
    """Device leaves -> numpy, read-only: one transfer for the whole tree (``device_get``),
    or on the CPU backend each leaf's own buffer as an array (no copy; ``device_get``'s
    per-leaf bookkeeping was ~0.3 ms of a sweep's ~1.4 ms host work: bench/README.md)."""
    if jax.default_backend() != "cpu":
        return jax.device_get(tree)
    return jax.tree_util.tree_map(lambda x: np.asarray(x) if isinstance(x, jax.Array) else x, tree)


@jax.jit
def _ended(state, params) -> jax.Array:
    return ~still_playing(state, params)


@jax.jit
def _take(tree, pos):
    return jax.tree_util.tree_map(lambda x: jnp.take(x, pos, axis=-1), tree)


@jax.jit
def _put(full, sub, pos):
    return jax.tree_util.tree_map(lambda f, s: f.at[..., pos].set(s), full, sub)


def _n_devices(x: jax.Array) -> int:
    return len(x.sharding.device_set) if isinstance(x, jax.Array) else 1


def _reshard(tree, like):
    """Place gathered leaves like the original ones (a sweep shards the batch axis)."""
    return jax.tree_util.tree_map(lambda x, o: jax.device_put(x, o.sharding) if _n_devices(o) > 1 else x, tree, like)


def width_for(n: int, current: int, n_dev: int = 1) -> int:
    """The batch width for ``n`` live arenas: rounded up to 3 significant bits (under 1/4
    padding, few distinct widths, so few compiles) and to a multiple of the devices."""
    e = max(0, n.bit_length() - 3)
    w = -(-n // (1 << e)) << e
    w = -(-w // n_dev) * n_dev
    return min(w, current)


def run_batch(
    game: Game,
    params,
    keys,
    n_turns: int,
    chunk_turns: int,
    history: bool,
    progress=None,
    every: int = 1,
    sink=None,
    skip: bool = True,
):
    """Run one batch (params and keys with a trailing batch axis). Returns (state, records).

    ``every``: keep every k-th turn's record (chunk_turns must be a multiple of it).
    ``sink``: called with each chunk's numpy records instead of keeping them (records None).
    ``skip``: stop once every arena has ended (inside the chunk program too, without
    history, on one device) and re-partition the live ones (module docstring); False scans
    every turn of every arena (same numbers).
    """
    # Kept whole (~80 lines): one loop whose re-partition state (sub-batch, positions, widths,
    # frozen records) lives in its locals; split, that state would travel through every call.
    state = compiled_init(game)(keys, params)
    n_chunks = max(1, math.ceil(n_turns / chunk_turns))
    width = full_width = int(keys.shape[-1])
    n_dev = _n_devices(keys)

    # the in-chunk stop needs the whole batch's flags each turn: on one device only (a batch
    # sharded over devices runs with no cross-device communication; it stops at boundaries)
    def program(lanes: int = 1):  # the chunk program of the current width
        return compiled_run(game, chunk_turns, history, every, skip and n_dev == 1, lanes)

    fn = program()
    full = state  # final states of the whole batch, written back at each re-partition
    pos = np.arange(width)  # the sub-batch's arenas (positions in the whole batch), padded
    n_live = width
    compacted = False  # whether the sub-batch is narrower than the batch
    sub = (keys, state, params)
    frozen = None  # numpy record (1, ..., B): each dropped arena's frozen-turn record
    one: Any = None  # the last chunk's records (numpy, the whole batch)
    recs = []

    def emit(rec):
        if sink is not None:
            sink(rec)
        else:
            recs.append(rec)

    for c in range(n_chunks):
        if n_live == 0:  # every arena has ended: the rest are frozen turns
            if history:
                emit(jax.tree_util.tree_map(lambda f, r: np.broadcast_to(f, (r.shape[0],) + f.shape[1:]), frozen, one))
        else:
            st, rec = fn(*sub)
            SCANNED["arena_turns"] += width * chunk_turns
            sub = (sub[0], st, sub[2])
            if history:
                one = restored(game, to_numpy(rec), np.asarray(sub[2].players.strategy))
                if compacted:
                    one = _widen(one, frozen, pos[:n_live], n_live, full_width)
                emit(one)
        if progress is not None:
            progress.update(1)
        if not skip or n_live == 0 or c == n_chunks - 1:
            continue
        # which of the sub-batch's arenas are done (with history: froze before the chunk's last turn)
        done = ~one.played[-1][pos[:n_live]] if history else np.asarray(_ended(st, sub[2]))[:n_live]
        left = int(n_live - done.sum())
        new_w = width_for(left, width, n_dev) if left else 0
        saved = (width - new_w) * (n_chunks - c - 1) * chunk_turns
        if left and (new_w > SHRINK * width or saved < MIN_SAVED_ARENA_TURNS):
            continue
        full = _put(full, st, jnp.asarray(pos)) if compacted else st
        compacted = True
        if history:
            frozen = jax.tree_util.tree_map(lambda r: r[-1:].copy(), one)
        live = pos[:n_live][~done]
        n_live, width = left, new_w
        if left:
            pos = np.concatenate([live, np.full(new_w - left, live[-1])])
            p = jnp.asarray(pos)
            sub = _reshard(_take((keys, full, params), p), (keys, full, params))
            fn = program(lanes_for(width, (n_chunks - c - 1) * chunk_turns, n_dev))
    if n_live:
        full = _put(full, sub[1], jnp.asarray(pos)) if compacted else sub[1]
    records = None
    if history and sink is None:
        records = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=0), *recs)
    return full, records


def _widen(rec, frozen, live: np.ndarray, n_live: int, b: int):
    """A sub-batch's records (T, ..., w) -> the whole batch's (T, ..., B): live arenas from
    the run, every other arena its frozen-turn record."""

    def one(r, f):
        out = np.empty(r.shape[:-1] + (b,), r.dtype)
        out[...] = f
        out[..., live] = r[..., :n_live]
        return out

    return jax.tree_util.tree_map(one, rec, frozen)
