"""Issue 23, item 5: one bound per governed quantity (kernels/bounds.py), refused by the host
and clamped by the kernels, so no recorded amount is ever non-finite.

Before: the built-in regulator with ``tighten`` 1e15 drove the ladder scale to 1e30, fines
overflowed float32 and sanction rows of turns 3-6 recorded ``amount: null``."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.config.limits import MAX_LADDER_SCALE, MAX_MAGNITUDE, QUANTITY_BOUNDS


def _cfg(tighten: float, fine: float, ladder: list[float], cooldown: int, vs_fine: float) -> dict:
    c = copy.deepcopy(SEED_LOGISTIC)
    c["model"]["maxTurns"] = 8
    c["players"] = copy.deepcopy(MIXED_PLAYERS)
    c["perturbations"] = [
        {
            "id": "ladder",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": ladder},
        },
        {"id": "flat", "type": "sanction", "trigger": {"kind": "pact_violation"}, "payload": {"amount": fine}},
    ]
    c["pacts"] = [{"parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 0.01}}]
    c["plugins"] = [
        {
            "type": "governance_agent",
            "id": "ga",
            "coop_below": 1.0,
            "stock_below": 2.0,
            "tighten": tighten,
            "cooldown": cooldown,
            "cap": 0.5,
        },
        {"type": "voluntary_sanction", "id": "vs", "cost": 0.0, "fine": vs_fine},
    ]
    return c


BIG = st.floats(0.0, MAX_MAGNITUDE, allow_nan=False, allow_subnormal=False)


@pytest.mark.heavy
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tighten=st.floats(1.0, MAX_LADDER_SCALE),
    fine=BIG,
    ladder=st.lists(BIG, min_size=3, max_size=3),
    cooldown=st.integers(0, 2),
    vs_fine=BIG,
)
def test_extreme_regulator_and_fines_record_finite_amounts(tighten, fine, ladder, cooldown, vs_fine) -> None:
    """The same compiled program for every example (numbers are params leaves)."""
    r = bdpd_jax.simulate(_cfg(tighten, fine, ladder, cooldown, vs_fine), n_arenas=2, seed=0)
    amounts = r.sanctions["amount"].to_numpy(dtype=float)
    assert len(amounts) > 0 and np.isfinite(amounts).all() and (amounts <= MAX_MAGNITUDE).all()
    assert np.isfinite(r.players["wealth"].to_numpy(dtype=float)).all()
    assert np.isfinite(r.players["sanction"].to_numpy(dtype=float)).all()


@pytest.mark.parametrize(
    "plugin, field",
    [
        ({"type": "governance_agent", "id": "g", "tighten": MAX_LADDER_SCALE * 10}, "tighten"),
        ({"type": "governance_agent", "id": "g", "cooldown": 2**31}, "cooldown"),
        ({"type": ["governance_agent"], "id": "g"}, "plugins[0].type"),
    ],
)
def test_configs_past_a_bound_are_refused(plugin, field) -> None:
    c = copy.deepcopy(SEED_LOGISTIC)
    c["players"] = copy.deepcopy(MIXED_PLAYERS)
    c["plugins"] = [plugin]
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        ArenaConfig.model_validate(c)


def test_every_quantity_has_one_bound() -> None:
    assert set(QUANTITY_BOUNDS) == {"ladder_scale", "fine", "cap", "regen", "stock_change"}
    assert all(0 < v <= MAX_MAGNITUDE for v in QUANTITY_BOUNDS.values())


def test_kernels_clamp_what_bypasses_the_host() -> None:
    """The kernel's own rule: a ladder scale or regen past its bound is clamped (not NaN), a
    perturbation value past +-MAX_MAGNITUDE is clamped before it applies."""
    import jax.numpy as jnp

    from bdpd_jax.kernels import governance_agent as G

    a = G.valid(G.GovAction(jnp.float32(jnp.nan), jnp.float32(1e30), jnp.float32(1e30)))
    assert float(a.ladder_scale) == pytest.approx(MAX_LADDER_SCALE) and float(a.regen) == pytest.approx(MAX_MAGNITUDE)
    assert np.isfinite(float(a.ladder_scale * MAX_MAGNITUDE))
