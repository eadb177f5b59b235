"""The turn's rules written once (issue 15 item 2): layer hooks detected by one helper, the
"still playing" test one kernel function, one Actions type through the turn. No compile."""

from __future__ import annotations

import re
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from bdpd_jax.kernels.governance import GovernanceLayer
from bdpd_jax.kernels.layers import HOOKS, Layer, has_hook
from bdpd_jax.kernels.perturb import PerturbLayer
from bdpd_jax.kernels.plugins import PluginLayer
from bdpd_jax.kernels.state import still_playing

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for base in ("kernels", "bdpd_jax") for p in (ROOT / base).rglob("*.py")]


class _Acts(Layer):
    name = "acts"

    def act(self, game, key, turn, state, actions, params):
        return state, actions


@pytest.mark.parametrize(
    "layer_type, defined",
    [
        (Layer, set()),
        (_Acts, {"act"}),
        (GovernanceLayer, {"init", "prewrite", "busy", "act", "after_harvest"}),
        (PerturbLayer, {"init", "effective_params", "begin"}),
        (PluginLayer, {"init", "begin", "after_harvest"}),
    ],
)
def test_has_hook_sees_the_hooks_a_layer_defines(layer_type, defined) -> None:
    layer = object.__new__(layer_type)  # the test reads the class only
    assert {h for h in HOOKS if has_hook(layer, h)} == defined
    assert all(hasattr(layer, h) for h in HOOKS)  # why hasattr says nothing


def test_still_playing_matches_its_rule() -> None:
    for collapsed in (False, True):
        for turn in (0, 4, 5, 6):
            state = type("S", (), {"collapsed": jnp.asarray(collapsed), "turn": jnp.asarray(turn, jnp.int32)})
            params = type("P", (), {"max_turns": jnp.asarray(5, jnp.int32)})
            assert bool(still_playing(state, params)) == (not collapsed and turn < 5)
    batch = type("S", (), {"collapsed": jnp.asarray([False, True, False]), "turn": jnp.asarray([1, 1, 9])})
    np.testing.assert_array_equal(
        np.asarray(still_playing(batch, type("P", (), {"max_turns": 9}))), [True, False, False]
    )


def _hits(pattern: str) -> list[str]:
    rx = re.compile(pattern)
    return sorted(str(p.relative_to(ROOT)) for p in SOURCES if rx.search(p.read_text()))


def test_the_still_playing_rule_is_written_once() -> None:
    assert _hits(r"turn\s*(<|>=)\s*\w*\.?max_turns") == ["kernels/state.py"]


def test_no_hook_detected_by_hasattr_and_no_array_or_actions_branch() -> None:
    assert _hits(r"hasattr\(\s*layer") == []
    assert _hits(r"isinstance\([^)]*,\s*Actions\)") == ["kernels/actions.py"]  # the public step's coercion
