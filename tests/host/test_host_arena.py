"""Live Arena: equals the batched kernels bit for bit; the six tools' rules; persistence."""

from __future__ import annotations

import copy
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from payloads import MIXED_PLAYERS, SEED_LOGISTIC, governed_talk

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.live_batch import LiveBatch
from bdpd_jax.host.live.persist import read_jsonl
from bdpd_jax.host.live.registry import pact_id
from bdpd_jax.kernels.actions import Actions
from bdpd_jax.kernels.rollout import batched
from bdpd_jax.kernels.turn import step
from bdpd_jax.prepare.game import broadcast_batch, build
from bdpd_jax.run.simulate import arena_keys


def _cfg(players=None, scheduler="simultaneous", **model):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["observability"]["commonsStock"]["noise"] = 0.2
    cfg["model"]["scheduler"] = scheduler
    cfg["model"].update(model)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS if players is None else players)
    return cfg


def _f32(x):
    return np.float32(np.nan if x is None else x)


# -- live == batched ---------------------------------------------------------------------------
SEQUENTIAL = {"scheduler": "sequential"}  # the builtins re-decided in turn order


@pytest.fixture(scope="module")
def plain_batch():
    """simulate(n_arenas=3) of the mixed players under the sequential scheduler: one
    compiled whole-run program for the single Arena and the LiveBatch ``plain`` case."""
    return bdpd_jax.simulate(_cfg(**SEQUENTIAL), n_arenas=3, seed=4)


def test_builtin_arena_equals_simulate_bit_for_bit(plain_batch):
    """One live Arena (``Arena.run``) == its arena of the batched run (the LiveBatch cases
    below run the simultaneous scheduler too)."""
    cfg = _cfg(**SEQUENTIAL)
    res = plain_batch
    arena = Arena(cfg, seed=4, arena_index=1)
    arena.run()
    pl, tu = res.players[res.players.arena == 1], res.turns[res.turns.arena == 1]
    assert len(arena.records) == len(tu) > 5
    for rec in arena.records:
        p = pl[pl.turn == rec["turn"]].sort_values("player")
        for col, key in (("requested", "requested"), ("actual", "actual"), ("wealth", "wealth")):
            got = np.asarray([_f32(d[key]) for d in rec["decisions"]])
            np.testing.assert_array_equal(got, p[col].to_numpy())
        assert _f32(rec["stock"]) == tu[tu.turn == rec["turn"]].stock.to_numpy()[0]
    # the final state equals the batched summary
    st = arena.state
    s = res.summary[res.summary.arena == 1].iloc[0]
    assert int(st.turn) == s.turns_played and bool(st.collapsed) == (not s.survived)


def _spec(id_, type_, payload, turn=3):
    return {"id": id_, "type": type_, "trigger": {"kind": "turn", "turn": turn}, "payload": payload}


# scripted talk, a pact and sanctions, plus five turn-triggered perturbations
GOVERNED = governed_talk(3, {"announce": "biased", "bias": 0.3})
GOVERNED["perturbations"] += [
    _spec("r", "regen_shock", {"factor": 0.5}, 4),
    _spec("w", "wealth_shock", {"factor": 0.5, "player": 2}, 5),
    _spec("o", "strategy_override", {"player": 0, "strategy": "aggressive"}, 6),
    _spec("c", "commons_shock", {"amount": -20.0}, 7),
    _spec("f", "observability_flip", {"variable": "commonsStock"}, 9),
]


@pytest.mark.parametrize("case", ["plain", "governed", "conservative"])
def test_live_batch_equals_simulate_per_arena(case, request):
    """3 arenas in one LiveBatch == simulate(n_arenas=3): the sequential scheduler (builtins
    re-decided in turn order); perturbations, scripted talk, pacts, sanctions (the batch axis
    and arena index select the same trajectories). ``conservative``: 4 conservative players
    reading a noisy stock, whose observation XLA fuses differently when the noise is drawn
    inside the turn or carried in (the host passes it in as the rollout does)."""
    n_arenas = 3
    if case == "conservative":
        cfg = _cfg(players=[{"strategy": "conservative", "privateResource": 10 * (i + 1)} for i in range(4)])
        n_arenas = 8
    else:
        cfg = _cfg(**(SEQUENTIAL if case == "plain" else {}))
    if case == "governed":
        cfg.update(copy.deepcopy(GOVERNED))
    res = (
        request.getfixturevalue("plain_batch") if case == "plain" else bdpd_jax.simulate(cfg, n_arenas=n_arenas, seed=4)
    )
    arenas = [Arena(cfg, seed=4, arena_index=i) for i in range(n_arenas)]
    LiveBatch(arenas).run()
    for i, a in enumerate(arenas):
        p = res.players[res.players.arena == i].sort_values(["turn", "player"])
        for col in ("requested", "actual", "wealth", "announced", "sanction"):
            got = np.asarray([_f32(d[col]) for r in a.records for d in r["decisions"]])
            np.testing.assert_array_equal(got, p[col].to_numpy(), err_msg=f"arena {i} {col}")
        tu = res.turns[res.turns.arena == i]
        np.testing.assert_array_equal([_f32(r["stock"]) for r in a.records], tu.stock.to_numpy())
    if case == "governed":
        v = res.extra["violations"]
        assert len(v) == sum(len(r["violations"]) for a in arenas for r in a.records) > 0


def _script(seed: int, n_turns: int, talk: bool):
    rs = np.random.default_rng(seed)
    out = []
    for _ in range(n_turns):
        h = float(np.round(rs.uniform(0, 4), 4))
        acts = (
            [{"tool": "announce_intended_harvest", "value": float(rs.uniform(0, 4))}]
            if talk and rs.uniform() < 0.5
            else []
        )
        out.append({"harvest": h, "actions": acts})
    return out


@pytest.mark.parametrize("scheduler", ["simultaneous", "sequential"])
def test_external_players_equal_a_batched_step_fed_the_same_requests(scheduler):
    """Four scripted external players (talking) == kernels' batched step fed their requests."""
    T = 12
    cfg = _cfg(players=[], scheduler=scheduler, maxTurns=T)
    scripts = [_script(k, T, talk=True) for k in range(4)]
    arena = Arena(cfg, seed=9)
    for k in range(4):
        arena.join({"agentType": "scripted", "name": f"x{k}", "privateResource": 10.0 * (k + 1), "script": scripts[k]})
    arena.run()
    # the same requests through the kernels: idle builtins + the batched step on Actions
    kcfg = _cfg(
        players=[{"strategy": "idle", "privateResource": 10.0 * (k + 1)} for k in range(4)],
        scheduler=scheduler,
        maxTurns=T,
    )
    game, params = build(ArenaConfig.load(kcfg))
    pb = broadcast_batch(params, 1)
    keys = arena_keys(9, np.arange(1))
    state = jax.jit(batched(game.init))(pb)
    stp = jax.jit(batched(lambda k, s, a, p: step(game, k, s, a, p)))
    for t in range(T):
        req = jnp.asarray([[scripts[k][t]["harvest"]] for k in range(4)], jnp.float32)
        ann = [[next((a["value"] for a in scripts[k][t]["actions"]), np.nan)] for k in range(4)]
        state, rec = stp(keys, state, Actions(req, jnp.asarray(ann, jnp.float32)), pb)
        if not bool(rec.played[0]):
            break
        live = arena.records[t]
        for key, leaf in (
            ("requested", rec.requested),
            ("actual", rec.actual),
            ("wealth", rec.wealth),
            ("announced", rec.announced),
        ):
            got = np.asarray([_f32(d[key]) for d in live["decisions"]])
            np.testing.assert_array_equal(got, np.asarray(leaf)[:, 0], err_msg=f"turn {t + 1} {key}")
        assert _f32(live["stock"]) == np.asarray(rec.stock)[0]
    np.testing.assert_array_equal(np.asarray(arena.state.wealth), np.asarray(state.wealth)[:, 0])


# -- tools ---------------------------------------------------------------------------------------
def _talk_arena(scripts: dict, tmp_path=None, **kw):
    cfg = _cfg(players=[{"strategy": "conservative", "name": "dave"}], maxTurns=6, minPlayers=2)
    arena = Arena(cfg, seed=5, out_dir=tmp_path, **kw)
    for name, script in scripts.items():
        arena.join({"agentType": "scripted", "name": name, "script": script})
    arena.start()
    return arena


def _seen(arena, name):
    return arena.agents[arena.players.index(name)].seen


def test_message_lag_scopes_and_deterministic_ids(tmp_path):
    scripts = {
        "alice": [
            {
                "harvest": 1.0,
                "actions": [
                    {"tool": "broadcast", "text": "hello all"},
                    {"tool": "send_private", "target": "bob", "text": "x" * 600},
                ],
            },
            {"harvest": 1.0},
        ],
        "bob": [
            {"harvest": 1.0, "actions": [{"tool": "announce_intended_harvest", "value": 1.23456}]},
            {"harvest": 1.0},
        ],
        "carol": [{"harvest": 1.0}],
    }
    arena = _talk_arena(scripts, tmp_path)
    r1 = arena.tick()
    assert [t["result"]["ok"] for t in r1["tools"]] == [True, True, True]
    assert [t["result"]["scope"] for t in r1["tools"]] == ["all-others", "one player", "all-others"]
    assert r1["tools"][2]["result"]["value"] == 1.235
    assert r1["decisions"][2]["announced"] == 1.235  # the kernel's announced column (lie_score input)
    arena.tick()
    arena.tick()
    inbox = {p: [e["inbox"] for e in _seen(arena, p)] for p in scripts}
    assert inbox["alice"][0] == [] and inbox["alice"][2] == []  # turn 1: nothing yet; turn 3: gone
    assert [m["scope"] for m in inbox["alice"][1]] == ["announcement"]  # own broadcast excluded
    assert [m["scope"] for m in inbox["bob"][1]] == ["broadcast", "private"]
    assert inbox["bob"][1][1]["text"].endswith("\u2026") and len(inbox["bob"][1][1]["text"]) == 500
    assert [m["scope"] for m in inbox["carol"][1]] == ["broadcast", "announcement"]  # not the private one
    assert all(m["turn"] == 1 and "to" not in m for m in inbox["bob"][1])
    # same seed, same calls -> same ids
    again = _talk_arena(scripts)
    again.tick()
    assert [m["id"] for m in again.bus.messages_for_turn(1)] == [m["id"] for m in arena.bus.messages_for_turn(1)]
    # persisted per tick
    lines = read_jsonl(tmp_path / "turns.jsonl")
    assert [ln["turn"] for ln in lines] == [1, 2, 3] and len(lines[0]["messages"]) == 3
    assert json.loads((tmp_path / "meta.json").read_text())["status"] == "running"


def test_pact_lifecycle_awaiting_you_and_acceptance_rules(tmp_path):
    pid0 = pact_id(5, 0, 0)
    scripts = {
        "alice": [
            {
                "harvest": 1.0,
                "actions": [
                    {"tool": "propose_pact", "parties": ["bob"], "terms": {"type": "harvest_cap", "maxHarvest": 2.1}},
                    {"tool": "accept_pact", "pactId": pid0},
                ],
            },  # own proposal: already accepted
            {"harvest": 3.0},
        ],
        "bob": [
            {"harvest": 1.0, "actions": [{"tool": "accept_pact", "pactId": pid0}]},  # proposed this turn
            {"harvest": 1.0, "actions": [{"tool": "accept_pact", "pactId": pid0}]},  # ok -> active
            {"harvest": 1.0, "actions": [{"tool": "accept_pact", "pactId": pid0}]},
        ],  # already active
        "carol": [
            {"harvest": 1.0},
            {"harvest": 1.0, "actions": [{"tool": "accept_pact", "pactId": pid0}]},
            {"harvest": 1.0},
        ],  # not a party
    }
    arena = _talk_arena(scripts, tmp_path)
    r1 = arena.tick()
    res = [t["result"] for t in r1["tools"]]
    assert res[0]["ok"] and res[0]["pactId"] == pid0 and res[0]["status"] == "proposed"
    assert res[0]["scope"] == "named parties"
    assert not res[1]["ok"] and "already accepted" in res[1]["reason"]
    assert not res[2]["ok"] and "proposed this turn" in res[2]["reason"]
    assert r1["pacts"][0]["status"] == "proposed"
    assert r1["pacts"][0]["terms"] == {"type": "harvest_cap", "maxHarvest": 2.1}
    r2 = arena.tick()
    seen_bob, seen_alice, seen_carol = _seen(arena, "bob")[1], _seen(arena, "alice")[1], _seen(arena, "carol")[1]
    assert seen_bob["pacts"]["proposed"][0]["awaitingYou"] is True
    assert seen_alice["pacts"]["proposed"][0]["awaitingYou"] is False
    assert seen_carol["pacts"] == {"active": [], "proposed": []}  # not party: invisible
    res = {t["playerId"]: t["result"] for t in r2["tools"]}
    assert res["bob"]["ok"] and res["bob"]["status"] == "active" and res["bob"]["scope"] == "proposer + parties"
    assert not res["carol"]["ok"] and "not a party" in res["carol"]["reason"]
    # active from turn 2: alice's 3.0 > 2.1 breaks it in that very turn
    assert r2["pacts"][0]["status"] == "active" and r2["pacts"][0]["acceptedTurn"] == 2
    assert [(v["partyId"], v["detail"]) for v in r2["violations"]] == [("alice", "harvested 3.000 > cap 2.100")]
    r3 = arena.tick()
    assert not r3["tools"][0]["result"]["ok"] and "is active" in r3["tools"][0]["result"]["reason"]
    view = _seen(arena, "alice")[2]["pacts"]
    assert view["proposed"] == [] and view["active"][0]["acceptedTurn"] == 2
    full = arena.registry.get(pid0)
    assert full["violationCount"] == len(full["violations"]) == 2  # turns 2 and 3
    assert [v["turn"] for v in full["violations"]] == [2, 3]
    assert arena.registry.get("nope") is None


def test_invalid_actions_return_ok_false_and_change_nothing():
    arena = _talk_arena({"alice": [{"harvest": 1.0}], "bob": [{"harvest": 1.0}], "carol": [{"harvest": 1.0}]})
    arena.tick()
    before = (
        copy.deepcopy(arena.registry.compact()),
        len(arena.bus),
        jax.tree_util.tree_map(np.copy, arena.registry.table),
    )
    bad = [
        {"tool": "teleport"},
        {"tool": "broadcast"},  # no text
        {"tool": "send_private", "target": "alice", "text": "me"},  # to oneself
        {"tool": "propose_pact", "parties": ["bob", "zed"], "terms": {"type": "harvest_cap", "maxHarvest": 1}},
        {"tool": "propose_pact", "parties": ["bob"], "terms": {"type": "harvest_cap", "maxHarvest": -1}},
        {"tool": "propose_pact", "parties": ["bob"], "terms": {"type": "no_aggression", "tolerance": -0.5}},
        {"tool": "propose_pact", "parties": ["bob"], "terms": {"type": "world_peace"}},
        {"tool": "accept_pact", "pactId": "not-an-id"},
        {"tool": "pledge", "maxHarvest": 0},
        {"tool": "announce_intended_harvest", "value": -2},
        "not a dict",
    ]
    for act in bad:
        out = arena.dispatch("alice", act)
        assert out["ok"] is False and out["reason"], act
    assert arena.dispatch("zed", {"tool": "broadcast", "text": "hi"})["ok"] is False
    after = (arena.registry.compact(), len(arena.bus), arena.registry.table)
    assert before[0] == after[0] and before[1] == after[1]
    jax.tree_util.tree_map(np.testing.assert_array_equal, before[2], after[2])
    # unknown private target: 003_* keeps it on the bus for audit, read by no one
    out = arena.dispatch("alice", {"tool": "send_private", "target": "mallory", "text": "psst"})
    assert out["ok"] is False and "read by no one" in out["reason"]
    assert all(arena.bus.inbox_at(p, 3) == [] for p in arena.players)
    # accepting a pact one is not party to, proposed between ticks by dave's owner
    out = arena.dispatch("dave", {"tool": "propose_pact", "parties": ["bob"], "terms": {"type": "no_aggression"}})
    assert out["ok"] and out["status"] == "proposed"
    snap = copy.deepcopy(arena.registry.compact())
    arena.tick()  # the between-ticks write reached the kernel state
    assert arena.records[-1]["pacts"][0]["id"] == out["pactId"]
    no = arena.dispatch("carol", {"tool": "accept_pact", "pactId": out["pactId"]})
    assert no["ok"] is False and "not a party" in no["reason"]
    assert arena.registry.compact() == arena.records[-1]["pacts"] and snap[0]["status"] == "proposed"


def test_pledge_sanction_table_full_and_override():
    cfg = _cfg(players=[{"strategy": "conservative", "name": "dave"}], maxTurns=4, minPlayers=2)
    cfg["perturbations"] = [
        {"id": "s", "type": "sanction", "trigger": {"kind": "pact_violation"}, "payload": {"amount": 0.5}},
        _spec("o", "strategy_override", {"player": 1, "strategy": "aggressive"}, 3),
    ]
    arena = Arena(cfg, seed=1, pact_slots=2)
    pledges = [{"tool": "pledge", "maxHarvest": 0.5}] * 3
    arena.join({"agentType": "scripted", "name": "alice", "script": [{"harvest": 2.0, "actions": pledges}]})
    r1 = arena.tick()
    res = [t["result"] for t in r1["tools"]]
    assert [r["ok"] for r in res] == [True, True, False] and "full" in res[2]["reason"]
    assert res[0]["status"] == "active" and res[0]["scope"] == "self-only"
    assert len(r1["violations"]) == 2  # two pledges broken
    # one sanction row per (spec, violation event), with its provenance (issue 17)
    assert [(s["specId"], s["playerId"], s["pactId"], s["ordinal"], s["amount"]) for s in r1["sanctions"]] == [
        ("s", "alice", res[0]["pactId"], 1, 0.5),
        ("s", "alice", res[1]["pactId"], 2, 0.5),
    ]
    assert r1["decisions"][1]["wealth"] == 30.0 + 2.0 - 1.0
    # from turn 3 a strategy_override hands alice to the builtin: her agent is not asked
    arena.run()
    alice = [r["decisions"][1] for r in arena.records]
    assert [d["harvest"] for d in alice[:2]] == [2.0, 2.0] and not any("overridden" in d for d in alice[:2])
    assert all(d.get("overridden") and "harvest" not in d and d["requested"] != 2.0 for d in alice[2:])
    assert arena.agents[1].calls == 2 and len(alice) == 4


def test_no_talk_removes_tools_and_announced_keeps_observations():
    """Also: a pre-declared pact and no sanction spec (the kernel cannot take zero specs: the
    host pads one); pacts still bind and show in the observation."""
    cfg = _cfg(players=[{"strategy": "conservative"}], minPlayers=2, maxTurns=3)
    cfg["pacts"] = [{"parties": ["p0", "alice"], "terms": {"type": "harvest_cap", "maxHarvest": 1.1}}]
    arena = Arena(cfg, seed=2, no_talk=True)
    arena.join(
        {
            "agentType": "scripted",
            "name": "alice",
            "script": [
                {"harvest": 1.0, "actions": [{"tool": "broadcast", "text": "hi"}, {"tool": "pledge", "maxHarvest": 1}]}
            ],
        }
    )
    r1 = arena.tick()
    assert r1["tools"] == [] and "dropped" in r1["decisions"][1]["error"]
    assert arena.dispatch("alice", {"tool": "broadcast", "text": "hi"})["ok"] is False
    arena.tick()
    env = _seen(arena, "alice")[1]
    assert "inbox" not in env and env["commonsStock"] is not None and env["othersHarvest"]["p0"] is not None
    assert env["regenRate"] is None  # hidden -> null
    assert len(arena.bus) == 0
    assert env["pacts"]["active"][0]["terms"] == {"type": "harvest_cap", "maxHarvest": 1.1}
    assert [v["partyId"] for v in r1["violations"]] == ["p0"]  # 0.6 x 2.5 > 1.1 >= alice's 1.0


def test_join_validation():
    arena = Arena(_cfg(players=[]), seed=0)
    with pytest.raises(ValueError, match="strategyCode"):
        arena.join({"agentType": "code", "name": "a", "strategyCode": "function decide(obs, memory) { return ; ) }"})
    with pytest.raises(ValueError, match="url"):
        arena.join({"agentType": "http", "name": "a", "url": "ftp://nowhere"})
    with pytest.raises(ValueError, match="strategy"):
        arena.join({"agentType": "builtin", "strategy": "telepathic"})
    arena.join({"agentType": "builtin", "name": "a"})
    with pytest.raises(ValueError, match="already joined"):
        arena.join({"agentType": "builtin", "name": "a"})
    with pytest.raises(ValueError, match="minPlayers"):
        arena.start()


def test_close_writes_summary_and_meta(tmp_path):
    arena = Arena(_cfg(**SEQUENTIAL), seed=3, out_dir=tmp_path)  # the single Arena's programs above
    summ = arena.run()
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(json.dumps(summ))
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["status"] == "closed" and meta["seed"] == 3 and len(meta["players"]) == 4
    assert sorted(p["rank"] for p in summ["players"]) == [1, 2, 3, 4]
    assert len(read_jsonl(tmp_path / "turns.jsonl")) == summ["turnsPlayed"]


def test_builtins_answer_external_proposals_by_their_script():
    """A builtin without talk config accepts at t + 1 (the batched default); external
    players accept only through the tool."""
    arena = _talk_arena(
        {
            "alice": [
                {
                    "harvest": 1.0,
                    "actions": [
                        {
                            "tool": "propose_pact",
                            "parties": ["dave"],
                            "terms": {"type": "no_aggression", "tolerance": 0.5},
                        },
                        {"tool": "propose_pact", "parties": ["bob"], "terms": {"type": "harvest_cap", "maxHarvest": 3}},
                    ],
                },
                {"harvest": 1.0},
            ],
            "bob": [{"harvest": 1.0}],
            "carol": [{"harvest": 1.0}],
        }
    )
    r1 = arena.tick()
    assert [p["status"] for p in r1["pacts"]] == ["proposed", "proposed"]  # not before t + 1
    r2 = arena.tick()
    assert [(p["parties"], p["status"], p["acceptedTurn"]) for p in r2["pacts"]] == [
        (["dave", "alice"], "active", 2),
        (["alice", "bob"], "proposed", None),
    ]
