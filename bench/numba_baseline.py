"""The benchmark game as a compiled scalar loop: numba, parallel over arenas (``prange``).

What a performance-minded Python user would write for bench/throughput.py's game (4
players: 2 conservative + 2 aggressive, noisy commonsStock, the hidden-reserve collapse die,
logistic regrowth), one arena per loop iteration, stopping an arena at its end.

The noise is the kernel's own: the same counter hash words (kernels/rng.py: the arena key,
then turn, purpose, key word, player), the same uniform from the top 24 bits, and the
Gaussian by the same inverse-erf polynomial (Giles' single-precision approximation, the
one XLA uses for float32 ``erf_inv``), all in float32. Only ``log`` may round differently
from XLA's, so a few draws can differ in the last bit; bench/throughput.py reports how many
arenas end with the same wealth. numba is in the ``bench`` extra: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - the bench extra is not installed
    numba = None

U32 = np.uint64(0xFFFFFFFF)
M1, M2, GOLD = np.uint64(0x7FEB352D), np.uint64(0x846CA68B), np.uint64(0x9E3779B9)
IDX0 = np.uint64(0x632BE5AB)  # the element-index word of a single draw (index 0)
S16, S15, S8, S6, S2 = np.uint64(16), np.uint64(15), np.uint64(8), np.uint64(6), np.uint64(2)
OBS_STOCK = np.uint64(1 + 16 * 1)  # rng.obs_purpose(0): commonsStock
DIE = np.uint64(3)
F = np.float32
A = tuple(
    F(x)
    for x in (
        2.81022636e-08,
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    )
)
B = tuple(
    F(x)
    for x in (
        -0.000200214257,
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    )
)
ONE, TWO, HALF, FIVE, THREE, W25 = F(1), F(2), F(0.5), F(5), F(3), F(2.5)
SQRT2, INV24 = F(np.sqrt(2.0)), F(1.0 / 16777216.0)


def _mix(x):
    x = x ^ (x >> S16)
    x = (x * M1) & U32
    x = x ^ (x >> S15)
    x = (x * M2) & U32
    return x ^ (x >> S16)


def _absorb(h, w):
    return _mix(h ^ ((w + GOLD + ((h << S6) & U32) + (h >> S2)) & U32))


def _horner(coeffs, w):
    """sum_k coeffs[k] w^(n-1-k), as XLA's float32 ``erf_inv`` evaluates it (p = c + p w)."""
    p = coeffs[0]
    for c in coeffs[1:]:
        p = c + p * w
    return p


def _erfinv(x):
    w = -np.log((ONE - x) * (ONE + x))
    p = _horner(A, w - W25) if w < FIVE else _horner(B, np.sqrt(w) - THREE)
    return p * x


def _run(
    seed,
    n_arenas,
    turns,
    stock0,
    reserve0,
    wealth0,
    cap_k,
    regen,
    threshold,
    noise,
    intensity,
    p_die,
    wealth_out,
    turns_out,
):
    """One arena per prange iteration; wealth_out float32[B, 4], turns_out int32[B]."""
    log_p = np.log(p_die)
    for a in numba.prange(n_arenas):
        s = np.uint64(seed)
        ar = np.uint64(a)
        k0 = _absorb(_absorb(np.uint64(0x243F6A88), s), ar)
        k1 = _absorb(_absorb(np.uint64(0x85A308D3), ar), s)
        stock, reserve = stock0, reserve0
        w0 = w1 = w2 = w3 = wealth0
        played = 0
        for t in range(1, turns + 1):
            tt = np.uint64(t)
            # the per-(arena, turn) hash words, shared by the 4 players' draws
            h = _absorb(_absorb(_absorb(k0, tt), OBS_STOCK), k1)
            z0 = _normal(h, np.uint64(0))
            z1 = _normal(h, np.uint64(1))
            z2 = _normal(h, np.uint64(2))
            z3 = _normal(h, np.uint64(3))
            r0 = _conservative(stock, z0, noise, w0, cap_k)
            r1 = _conservative(stock, z1, noise, w1, cap_k)
            r2 = _aggressive(stock, z2, noise, w2, intensity)
            r3 = _aggressive(stock, z3, noise, w3, intensity)
            total = (r0 + r1) + (r2 + r3)
            from_stock = min(total, stock)
            need = max(min(total - from_stock, reserve), F(0))
            n_rolls = np.ceil(need)
            hd = _absorb(_absorb(_absorb(_absorb(k0, tt), DIE), k1), np.uint64(0))
            k = np.floor(np.log(_unit(hd)) / log_p)
            died = (k < n_rolls) and n_rolls > 0
            drawn = k if k < n_rolls else need
            reserve = max(reserve - drawn, F(0))
            delivered = from_stock + drawn
            frac = min(delivered / max(total, F(1e-38)), ONE) if total > 0 else F(0)
            w0 += r0 * frac
            w1 += r1 * frac
            w2 += r2 * frac
            w3 += r3 * frac
            stock = max(stock - from_stock, F(0))
            played = t
            ended = died or stock < threshold
            if not ended:
                stock = stock + max(regen * stock * (ONE - stock / cap_k), -stock)
                ended = stock < threshold
            if ended:
                break
        wealth_out[a, 0], wealth_out[a, 1], wealth_out[a, 2], wealth_out[a, 3] = w0, w1, w2, w3
        turns_out[a] = played


def _unit(h):
    b = _mix(h ^ _mix(IDX0))
    return (F(b >> S8) + HALF) * INV24


def _normal(h, player):
    return SQRT2 * _erfinv(TWO * _unit(_absorb(h, player)) - ONE)


def _conservative(stock, z, noise, w, cap_k):
    seen = max(stock + noise * abs(stock) * z, F(0))
    rho = seen / cap_k
    f = F(0.6) if rho > F(0.6) else (F(0.35) if rho > F(0.4) else F(0.1))
    return (ONE + F(0.05) * w) * f


def _aggressive(stock, z, noise, w, intensity):
    seen = max(stock + noise * abs(stock) * z, F(0))
    return min(ONE + F(0.05) * w, intensity * seen)


if numba is not None:
    _mix = numba.njit(inline="always")(_mix)
    _absorb = numba.njit(inline="always")(_absorb)
    _horner = numba.njit(inline="always")(_horner)
    _erfinv = numba.njit(inline="always")(_erfinv)
    _unit = numba.njit(inline="always")(_unit)
    _normal = numba.njit(inline="always")(_normal)
    _conservative = numba.njit(inline="always")(_conservative)
    _aggressive = numba.njit(inline="always")(_aggressive)
    _run = numba.njit(parallel=True, fastmath=False)(_run)


def run(b: int, turns: int, seed: int = 0, *, regen: float = 0.5, threshold: float = 0.0):
    """Final wealth float32[B, 4] and turns played int32[B] of the bench game (bench/throughput.py's config)."""
    if numba is None:
        raise ImportError("numba: pip install -e '.[bench]'")
    wealth = np.empty((b, 4), np.float32)
    played = np.empty(b, np.int32)
    _run(
        seed,
        b,
        turns,
        F(150.0),
        F(20.0),
        F(30.0),
        F(150.0),
        F(regen),
        F(threshold),
        F(0.05),
        F(0.5),
        F(4 / 6),
        wealth,
        played,
    )
    return wealth, played
