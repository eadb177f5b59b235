"""The counter-based generator: range, moments, independence across its indices."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bdpd_jax.kernels import rng


@pytest.mark.parametrize("generator", ["hash", "threefry"])
def test_uniform_range_and_moments(generator):
    key = rng.arena_key(1, 2)
    u = np.asarray(rng.uniform(key, 3, 0, rng.POLICY, (200000,), generator))
    assert u.min() > 0 and u.max() < 1
    assert u.mean() == pytest.approx(0.5, abs=0.005) and u.var() == pytest.approx(1 / 12, abs=0.002)


@pytest.mark.parametrize("generator", ["hash", "threefry"])
def test_normal_is_gaussian(generator):
    z = np.asarray(rng.normal(rng.arena_key(5, 0), 1, 2, rng.OBS_NOISE, (200001,), generator))
    assert z.shape == (200001,) and np.isfinite(z).all()
    assert z.mean() == pytest.approx(0, abs=0.01) and z.std() == pytest.approx(1, abs=0.01)
    # tails of an exact Gaussian transform (a sum-of-uniforms approximation has none past ~3.5)
    assert (np.abs(z) > 4).mean() == pytest.approx(6.3e-5, abs=4e-5)
    from scipy import stats

    assert stats.kstest(z[:20000], "norm").pvalue > 1e-3


def test_every_index_changes_the_stream():
    k = rng.arena_key(0, 0)
    base = np.asarray(rng.bits(k, 1, 1, rng.DIE, (64,)))
    variants = [
        rng.bits(rng.arena_key(1, 0), 1, 1, rng.DIE, (64,)),
        rng.bits(rng.arena_key(0, 1), 1, 1, rng.DIE, (64,)),
        rng.bits(k, 2, 1, rng.DIE, (64,)),
        rng.bits(k, 1, 2, rng.DIE, (64,)),
        rng.bits(k, 1, 1, rng.POLICY, (64,)),
    ]
    for v in variants:
        assert np.mean(np.asarray(v) == base) < 0.05
    # neighbouring arenas are uncorrelated
    a = np.asarray(jax.vmap(lambda i: rng.uniform(rng.arena_key(0, i), 1, 0, rng.DIE))(jnp.arange(20000)))
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 0.03
