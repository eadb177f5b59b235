"""Extension points end to end (issue 15 item 1): a pact term type and a perturbation type
registered here, each with one definition and one ``register`` call, then used through the
config, ``simulate`` (kernels and Results frames) and a live ``Arena`` with a scripted player
(tools, pact registry, detail strings, turn records). Checked against plain-Python rules."""

from __future__ import annotations

import copy
from typing import ClassVar, Literal

import jax.numpy as jnp
import numpy as np
import pytest
from payloads import SEED_LOGISTIC
from pydantic import BaseModel, ConfigDict, Field

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.config.perturbations import ArenaSpec, register_perturbation, unregister_perturbation
from bdpd_jax.host.agents.tools import tool_schemas, validate_action
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.kernels import pacts as P

EPS = 1e-6


# -- a per-player quota: a group total shared equally among the pact's parties ------------------
def _group_quota(pacts, ctx):
    n_parties = jnp.maximum(jnp.sum(pacts.parties, axis=-1), 1).astype(pacts.max_harvest.dtype)
    return pacts.max_harvest / n_parties


# -- redistribute: w <- (1 - f) w + f mean(w) ---------------------------------------------------
def _redistribute(game, view, slot, who):
    f = slot.value.astype(view.wealth.dtype)
    w = (1.0 - f) * view.wealth + f * jnp.mean(view.wealth)
    return {"wealth": w}, jnp.sum(w), None


class _Fraction(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    fraction: float = Field(ge=0, le=1)


class RedistributeSpec(ArenaSpec):
    type: Literal["redistribute"]
    example: ClassVar[dict] = {"fraction": 0.5}
    payload: _Fraction

    def payload_numbers(self, config, where, policies):
        return {"value": self.payload.fraction}


@pytest.fixture(scope="module", autouse=True)
def registered():
    """Both types for this module only: the registries are left as they were found."""
    P.register_term(
        "group_quota",
        _group_quota,
        [P.TermField("quota", "max_harvest", 0.0, exclusive=True, description="group total")],
        detail="harvested {actual:.3f} > quota share {limit:.3f}",
        description="each of the k parties harvests at most quota / k",
    )
    register_perturbation(
        "redistribute", _redistribute, RedistributeSpec, label="wealth[*]", description="w <- (1 - f) w + f mean(w)"
    )
    yield
    unregister_perturbation("redistribute")
    P.unregister_term("group_quota")


PLAYERS = [
    {"strategy": "conservative", "privateResource": 30, "name": "c"},
    {"strategy": "aggressive", "intensity": 0.5, "privateResource": 10, "name": "a"},
    {"strategy": "aggressive", "intensity": 0.2, "privateResource": 50, "name": "b"},
]


def _cfg(**extra):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=3, minPlayers=2, maxTurns=8)
    cfg["players"] = copy.deepcopy(PLAYERS)
    cfg.update(extra)
    return cfg


QUOTA_PACT = {"parties": ["a", "b"], "terms": {"type": "group_quota", "quota": 4.0}}
QUOTA_SANCTION = {
    "id": "q",
    "type": "sanction_graduated",
    "trigger": {"kind": "pact_violation", "termType": "group_quota"},
    "payload": {"ladder": [0.5, 1.5], "reason": "over quota"},
}


def test_config_validates_a_registered_term_and_perturbation():
    ArenaConfig.model_validate(_cfg(pacts=[QUOTA_PACT], perturbations=[QUOTA_SANCTION]))
    for terms, field in (
        ({"type": "group_quota", "quota": 0}, "terms.quota"),
        ({"type": "group_quota"}, "terms.quota"),
        ({"type": "group_quota", "quota": 1, "maxHarvest": 2}, "terms.maxHarvest"),
    ):
        with pytest.raises(ValueError, match=field):
            ArenaConfig.model_validate(_cfg(pacts=[{"parties": [0, 1], "terms": terms}]))
    bad = {"id": "r", "type": "redistribute", "trigger": {"kind": "turn", "turn": 2}, "payload": {"fraction": 2}}
    with pytest.raises(ValueError, match=r"perturbations\[0\].payload.fraction"):
        ArenaConfig.model_validate(_cfg(perturbations=[bad]))
    # the tool surface offers the new type, with its field
    terms = tool_schemas()[3]["function"]["parameters"]["properties"]["terms"]
    assert "group_quota" in terms["properties"]["type"]["enum"] and "quota" in terms["properties"]
    assert validate_action({"tool": "propose_pact", "parties": ["a"], "terms": {"type": "group_quota", "quota": 2}})[
        "terms"
    ] == {"type": "group_quota", "quota": 2.0}
    with pytest.raises(ValueError, match="terms.quota"):
        validate_action({"tool": "propose_pact", "parties": ["a"], "terms": {"type": "group_quota", "quota": -1}})


def test_simulate_uses_the_new_term_and_perturbation():
    redis = {"id": "r", "type": "redistribute", "trigger": {"kind": "turn", "turn": 3}, "payload": {"fraction": 0.5}}
    res = bdpd_jax.simulate(_cfg(pacts=[QUOTA_PACT], perturbations=[QUOTA_SANCTION, redis]), n_arenas=3, seed=4)
    pl = res.players
    # violations: a party harvests more than quota / 2 (plain-Python rule)
    parties = pl[pl.player.isin([1, 2])]
    expect = parties[parties.actual > 4.0 / 2 + EPS][["arena", "turn", "player"]]
    v = res.violations
    assert len(v) > 0 and set(v.term_type) == {"group_quota"}
    got = v[["arena", "turn", "player"]].sort_values(["arena", "turn", "player"], ignore_index=True)
    exp = expect.sort_values(["arena", "turn", "player"], ignore_index=True).astype(got.dtypes.to_dict())
    assert got.equals(exp)
    # each violation is sanctioned by the ladder of its ordinal, with provenance
    s = res.sanctions
    assert len(s) == len(v) and set(s.id) == {"q"} and set(s.reason) == {"over quota"}
    assert list(s.amount) == [0.5 if k == 1 else 1.5 for k in s.ordinal]
    # the redistribution fired at turn 3: wealth before the harvest is (1-f) w + f mean(w)
    pf = res.perturbations
    assert list(pf.type.unique()) == ["redistribute"] and set(pf.turn) == {3} and set(pf.target) == {"wealth[*]"}
    for arena in range(3):
        w2 = pl[(pl.arena == arena) & (pl.turn == 2)].sort_values("player").wealth.to_numpy(float)
        t3 = pl[(pl.arena == arena) & (pl.turn == 3)].sort_values("player")
        pre = t3.wealth.to_numpy(float) - t3.actual.to_numpy(float) + t3.sanction.to_numpy(float)
        np.testing.assert_allclose(pre, 0.5 * w2 + 0.5 * w2.mean(), rtol=1e-5)


def test_live_arena_with_a_scripted_player_uses_both():
    cfg = _cfg(
        players=[PLAYERS[0]],
        perturbations=[
            {**QUOTA_SANCTION, "trigger": {"kind": "pact_violation"}},
            {"id": "r", "type": "redistribute", "trigger": {"kind": "turn", "turn": 2}, "payload": {"fraction": 1.0}},
        ],
    )
    arena = Arena(cfg, seed=3)
    arena.join(
        {
            "agentType": "scripted",
            "name": "s",
            "script": [
                {
                    "harvest": 1.0,
                    "actions": [
                        {"tool": "propose_pact", "parties": ["c"], "terms": {"type": "group_quota", "quota": 1.2}}
                    ],
                },
                {"harvest": 5.0},
                {"harvest": 0.1},
            ],
        }
    )
    r1 = arena.tick()
    res = r1["tools"][0]["result"]
    assert res["ok"] and r1["pacts"][0]["terms"] == {"type": "group_quota", "quota": 1.2}
    arena.tick()  # c (conservative) accepts on turn 2: active; s takes 5 > 1.2 / 2
    r2 = arena.records[-1]
    assert r2["pacts"][0]["status"] == "active"
    viol = [x for x in r2["violations"] if x["partyId"] == "s"]
    assert viol and viol[0]["termType"] == "group_quota" and viol[0]["detail"] == "harvested 5.000 > quota share 0.600"
    row = [x for x in r2["sanctions"] if x["playerId"] == "s"][0]
    assert (row["specId"], row["termType"], row["ordinal"], row["amount"], row["reason"]) == (
        "q",
        "group_quota",
        1,
        0.5,
        "over quota",
    )
    fired = r2["perturbations"]
    assert [(f["id"], f["type"], f["target"]) for f in fired] == [("r", "redistribute", "wealth[*]")]
    # fraction 1: both start turn 2 at the mean wealth of the end of turn 1
    w1 = [d["wealth"] for d in r1["decisions"]]
    for d in r2["decisions"]:
        assert d["wealth"] == pytest.approx(np.mean(w1) + d["actual"] - d["sanction"], rel=1e-5)
