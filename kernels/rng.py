"""Counter-based randomness indexed by (seed, arena, turn, player, purpose).

Every random number of the game is a pure function of those five integers plus an element
index, so an arena's trajectory depends only on the seed and its own index: never on the
batch size or its position in the batch. Two generators share this interface:

* ``"hash"`` (default): a 32-bit integer hash (xor-shift-multiply finaliser chained over the
  counter words). Uniforms come from the top 24 bits, strictly inside (0, 1); Gaussians by
  inversion of the normal CDF (erfinv), exactly Gaussian up to float rounding.
* ``"threefry"``: ``jax.random`` with the counters folded into a threefry key. Slower on CPU,
  kept for users who want JAX's audited generator (bench/README.md compares the two).
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

Generator = Literal["hash", "threefry"]
GENERATORS: tuple[str, ...] = ("hash", "threefry")

# Purposes: one stream per kind of draw, so adding a draw never shifts another one.
OBS_NOISE = 1  # + 16 x (1 + variable index): one stream per observation variable
POLICY = 2
DIE = 3
ORDER = 4
PERTURB = 5
# 6 is retired (a talk stream that was never drawn); new purposes take 7 on
UNITS = 7  # random_units: label k of hand-out round r is element k of (turn, r, UNITS)

_M1 = jnp.uint32(0x7FEB352D)
_M2 = jnp.uint32(0x846CA68B)
_GOLD = jnp.uint32(0x9E3779B9)


def _mix(x: jax.Array) -> jax.Array:
    """A 32-bit avalanche finaliser (lowbias32): every input bit flips ~half the output bits."""
    x = x ^ (x >> 16)
    x = x * _M1
    x = x ^ (x >> 15)
    x = x * _M2
    return x ^ (x >> 16)


def _absorb(h: jax.Array, word: jax.Array | int) -> jax.Array:
    return _mix(h ^ (jnp.asarray(word).astype(jnp.uint32) + _GOLD + (h << 6) + (h >> 2)))


def _u32(x: int | jax.Array) -> jax.Array:
    """A uint32 word of a seed or an index: all 32 bits of a Python/numpy integer in
    [0, 2**32) (``jnp.asarray`` would read one >= 2**31 as int32 and overflow); arrays are
    cast (the same word for values < 2**31 either way)."""
    if isinstance(x, (int, np.integer)):
        return jnp.asarray(np.uint32(int(x) & 0xFFFFFFFF))
    return jnp.asarray(x).astype(jnp.uint32)


def arena_key(seed: int | jax.Array, arena: int | jax.Array) -> jax.Array:
    """The per-arena key: uint32[2] from the user seed and the arena's global index, both
    read as 32-bit words (seeds in [0, 2**32))."""
    seed = _u32(seed)
    arena = _u32(arena)
    h0 = _absorb(_absorb(jnp.uint32(0x243F6A88), seed), arena)
    h1 = _absorb(_absorb(jnp.uint32(0x85A308D3), arena), seed)
    return jnp.stack([h0, h1])


def bits(
    key: jax.Array,
    turn: jax.Array | int,
    player: jax.Array | int,
    purpose: int,
    shape: tuple[int, ...] = (),
    generator: Generator = "hash",
) -> jax.Array:
    """uint32 random words for one (arena key, turn, player, purpose), one per element of shape."""
    n = 1
    for s in shape:
        n *= s
    if generator == "threefry":
        k = jax.random.wrap_key_data(key, impl="threefry2x32")
        k = jax.random.fold_in(k, jnp.asarray(turn).astype(jnp.uint32))
        k = jax.random.fold_in(k, jnp.asarray(player).astype(jnp.uint32))
        k = jax.random.fold_in(k, purpose)
        return jax.random.bits(k, shape, jnp.uint32)
    # Per-arena words first (shared by every player's draw of this turn and purpose), the
    # player last: a draw then costs two mixing rounds of its own.
    h = _absorb(key[0], turn)
    h = _absorb(h, jnp.uint32(purpose))
    h = _absorb(h, key[1])
    h = _absorb(h, player)
    idx = jnp.arange(n, dtype=jnp.uint32).reshape(shape)
    return _mix(h ^ _mix(idx * _GOLD + jnp.uint32(0x632BE5AB)))


def _to_unit(b: jax.Array, dtype: jnp.dtype) -> jax.Array:
    # Top 24 bits, centred in their bin: strictly inside (0, 1), so log(u) is always finite.
    return ((b >> 8).astype(dtype) + 0.5) * (1.0 / 16777216.0)


def uniform(key, turn, player, purpose: int, shape=(), generator: Generator = "hash", dtype=None):
    """Uniform draws strictly inside (0, 1)."""
    dtype = dtype or jnp.result_type(float)
    return _to_unit(bits(key, turn, player, purpose, shape, generator), dtype)


def normal(key, turn, player, purpose: int, shape=(), generator: Generator = "hash", dtype=None):
    """Standard normal draws by inversion of the normal CDF: z = sqrt(2) erfinv(2u - 1).

    Exact in distribution up to float rounding (one uniform per draw, tails to |z| ~ 5.4 in
    float32); cheaper than Box-Muller on CPU (bench/README.md, "Random numbers").
    """
    dtype = dtype or jnp.result_type(float)
    u = uniform(key, turn, player, purpose, shape, generator, dtype)
    return jnp.sqrt(jnp.asarray(2.0, dtype)) * jax.lax.erf_inv(2.0 * u - 1.0)


def obs_purpose(var_index: int) -> int:
    """The purpose of the observation noise of one variable (its own stream, so a variable
    nobody reads costs no draw: XLA drops the unused computation)."""
    return OBS_NOISE + 16 * (1 + var_index)


def jax_key(key, turn, player, purpose: int, generator: Generator = "hash") -> jax.Array:
    """A typed ``jax.random`` key for user policies, derived from the same counters."""
    return jax.random.wrap_key_data(bits(key, turn, player, purpose, (2,), generator), impl="threefry2x32")
