"""Issue 25, item 6: LLM players as GovSim runs them (a scripted stub LLM, no network): the
rules text that replaces the BDPD rules, whole-unit answers, the fallback and temperature,
and the discussion phase between harvests (order named / round-robin, invalid names fall
back, bounds), its transcript in turns.jsonl, the envelopes, replay, the stream and frames."""

from __future__ import annotations

import asyncio
import copy
import json

import numpy as np
import pytest
from fake_llm import BASE, OPERATOR, FakeClient, completion, tool_call
from hypothesis import given, settings
from hypothesis import strategies as st
from payloads import SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.config.discussion import MAX_DISCUSSION_ROUNDS, DiscussionConfig
from bdpd_jax.host.agents.base import Utterance
from bdpd_jax.host.agents.llm import LLMAgent, render_system_prompt, whole_units
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.discussion import discuss, first_speaker, next_speaker
from bdpd_jax.host.live.players import MAX_RULES_CHARS
from bdpd_jax.host.live.replay import load, replay, strip_volatile
from bdpd_jax.results.discussion import COLUMNS, discussion_frame

RULES = "You fish in a lake of 100 tons with four others. Each month you choose how many tons to catch."
LLMS = ("A", "B", "C")


def _cfg(rounds: int = 0, rule: str = "named", turns: int = 3) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=4, minPlayers=4, maxTurns=turns)
    cfg["players"] = [{"strategy": "conservative", "name": "z"}]
    if rounds:
        cfg["discussion"] = {"rounds": rounds, "nextSpeaker": rule}
    return cfg


def _builtins_cfg(rounds: int) -> dict:
    """Four builtins and no speaker: one Game (one compiled program) for the tests below."""
    cfg = _cfg(rounds=rounds)
    cfg["players"] = [
        {"strategy": s, "name": f"b{k}"} for k, s in enumerate(["conservative", "aggressive", "adaptive", "random"])
    ]
    return cfg


def _last(req: dict) -> dict:
    return json.loads(req["messages"][-1]["content"])


class Script:
    """The stub model: a harvest per (player, turn); in the discussion, ``says[player]`` names
    who speaks next (a list consumed in order; None: names nobody)."""

    def __init__(self, harvest: float | str = 1.5, says: dict[str, list] | None = None) -> None:
        self.harvest, self.says = harvest, {k: list(v) for k, v in (says or {}).items()}

    def __call__(self, url: str, req: dict) -> bytes:
        tail = _last(req)
        if tail.get("phase") == "discussion":
            me = tail["playerId"]
            named = self.says.get(me, [None]).pop(0) if self.says.get(me) else None
            args = {"text": f"{me} says hi at turn {tail['turn']}"}
            if named is not None:
                args["nextSpeaker"] = named
            return completion([tool_call(0, "speak", args)])
        if self.harvest == "bad":
            return completion([], content="I will not say")
        return completion([tool_call(0, "harvest", {"amount": self.harvest})])


def _arena(cfg: dict, script: Script, tmp_path=None, **spec) -> tuple[Arena, FakeClient]:
    client = FakeClient(script)
    arena = Arena(cfg, seed=5, client=client, operator=OPERATOR, out_dir=tmp_path)
    for name in LLMS:
        arena.join({"agentType": "llm", "name": name, "model": "m", "baseUrl": BASE, **spec})
    return arena, client


# -- the LLM player's options ------------------------------------------------------------------
def test_rules_text_replaces_the_bdpd_rules_and_the_fallback_is_said():
    default = render_system_prompt("A", no_talk=True)
    assert "BDPD commons arena" in default and "0.2 * capacity" in default
    own = render_system_prompt("A", no_talk=True, rules=RULES, fallback=0.0, whole_units=True)
    assert own.startswith(RULES) and "BDPD commons arena" not in own and "0.2 * capacity" not in own
    assert "you harvest 0." in own and "whole units" in own and "`harvest`" in own
    arena, client = _arena(_cfg(), Script(), rulesText=RULES, temperature=0.3)
    arena.tick()
    sent = [req for _, req in client.requests]
    assert len(sent) == 3 and all(r["messages"][0]["content"].startswith(RULES) for r in sent)
    assert all(r["temperature"] == 0.3 for r in sent)  # passed through as given


def test_fallback_harvest_replaces_the_capacity_rule_and_default_keeps_it():
    fixed, _ = _arena(_cfg(), Script("bad"), fallbackHarvest=0.0)
    kept, _ = _arena(_cfg(), Script("bad"))
    f, k = fixed.tick(), kept.tick()
    fd = [d for d in f["decisions"] if d["playerId"] in LLMS]
    kd = [d for d in k["decisions"] if d["playerId"] in LLMS]
    assert all(d["fallback"] and d["harvest"] == 0.0 and d["actual"] == 0.0 for d in fd)
    assert all(d["fallback"] and d["harvest"] == pytest.approx(0.2 * (1 + 0.05 * 30.0)) for d in kd)
    assert all("no valid harvest" in d["error"] for d in fd + kd)


def test_whole_units_floor_and_cut_to_the_pool():
    errors: list[str] = []
    assert whole_units(7.6, 100.0, errors) == 7.0 and "floored" in errors[0]
    assert whole_units(250.0, 99.7, errors) == 99.0 and "above the pool" in errors[1]
    assert whole_units(3.0, 100.0, errors) == 3.0 and len(errors) == 2  # a whole answer is not flagged

    async def decide(amount, pool):
        client = FakeClient(lambda url, req: completion([tool_call(0, "harvest", {"amount": amount})]))
        agent = LLMAgent(BASE, "m", client=client, whole_units=True)
        return await agent.decide({"turn": 1}, 30.0, pool=pool)

    r = asyncio.run(decide(12.9, 40.0))
    assert r.harvest == 12.0 and not r.fallback and "floored" in r.error
    r = asyncio.run(decide(-1, 40.0))  # invalid: the fallback
    assert r.fallback


def test_whole_units_read_from_the_models_config():
    """The arena reads ``model.wholeUnits``: an LLM's answer above the pool is cut to it (in
    whole units) and flagged, not punished."""
    cfg = _cfg()
    cfg["model"]["wholeUnits"] = True
    arena, _ = _arena(cfg, Script(1e6))
    arena.start()
    rec = arena.tick()
    pool = SEED_LOGISTIC["model"]["commonsInitial"]
    d = [d for d in rec["decisions"] if d["playerId"] in LLMS]
    assert d and all(x["harvest"] == pool and "above the pool" in x["error"] and not x["fallback"] for x in d)


def test_options_are_bounded_and_llm_only():
    with pytest.raises(ValueError, match="rulesText"):
        _arena(_cfg(), Script(), rulesText="x" * (MAX_RULES_CHARS + 1))
    with pytest.raises(ValueError, match="temperature"):
        _arena(_cfg(), Script(), temperature=2.5)
    with pytest.raises(ValueError, match="fallbackHarvest"):
        _arena(_cfg(), Script(), fallbackHarvest=-1)
    arena = Arena(_cfg(), seed=1)
    with pytest.raises(ValueError, match="rulesText: an option of LLM players"):
        arena.join({"agentType": "scripted", "name": "s", "script": [{"harvest": 1}], "rulesText": RULES})
    with pytest.raises(ValueError, match="rounds"):
        Arena(_cfg(rounds=MAX_DISCUSSION_ROUNDS + 1))
    with pytest.raises(ValueError, match="nextSpeaker"):
        Arena({**_cfg(), "discussion": {"rounds": 2, "nextSpeaker": "loudest"}})


# -- the discussion phase ------------------------------------------------------------------------
def test_next_speaker_rule_reference():
    names = ["A", "B", "C"]
    assert [first_speaker(names, t) for t in (1, 2, 3, 4)] == ["A", "B", "C", "A"]
    assert next_speaker("named", names, "A", "C") == ("C", True)
    assert next_speaker("named", names, "A", "A") == ("B", False)  # itself: round-robin
    assert next_speaker("named", names, "C", "z") == ("A", False)  # not a speaker
    assert next_speaker("named", names, "B", None) == ("C", False)
    assert next_speaker("round_robin", names, "A", "C") == ("B", False)  # names are not read


@pytest.mark.parametrize("rule", ["named", "round_robin"])
def test_discussion_order_transcript_and_envelopes(tmp_path, rule):
    says = {"A": ["C", "A", "B"], "C": ["nobody", "B"], "B": ["A", "C"]}
    arena, client = _arena(_cfg(rounds=4, rule=rule), Script(says=says), tmp_path / rule)
    r1 = arena.tick()
    rows = r1["discussion"]["utterances"]
    got = [(u["order"], u["speaker"], u["nextSpeaker"], u["named"]) for u in rows]
    if rule == "named":  # A names C; C names "nobody" -> round-robin A; A names itself -> B; B names A
        assert got == [(1, "A", "C", True), (2, "C", "A", False), (3, "A", "B", False), (4, "B", "A", True)]
    else:
        assert got == [(1, "A", "B", False), (2, "B", "C", False), (3, "C", "A", False), (4, "A", "B", False)]
    assert all(u["turn"] == 1 and u["text"] == f"{u['speaker']} says hi at turn 1" and u["error"] is None for u in rows)
    assert r1["discussion"]["report"] == {"turn": 1, "catches": {d["playerId"]: d["actual"] for d in r1["decisions"]}}
    # what each speaker saw: the report and every earlier utterance
    talk = [
        (r["url"], _last(r["req"]))
        for r in [{"url": u, "req": q} for u, q in client.requests]
        if _last(r["req"]).get("phase") == "discussion"
    ]
    assert [t["playerId"] for _, t in talk] == [u["speaker"] for u in rows]
    assert [len(t["utterances"]) for _, t in talk] == [0, 1, 2, 3]
    assert talk[-1][1]["utterances"][-1] == {"speaker": rows[2]["speaker"], "text": rows[2]["text"]}
    n1 = len(client.requests)
    r2 = arena.tick()
    harvest_reqs = [q for _, q in client.requests[n1:] if _last(q).get("phase") != "discussion"]
    assert len(harvest_reqs) == 3
    for q in harvest_reqs:  # next turn: all read it
        seen = _last(q)["discussion"]
        assert seen["report"] == r1["discussion"]["report"]
        assert [u["text"] for u in seen["utterances"]] == [u["text"] for u in rows]
    assert r2["discussion"]["utterances"][0]["speaker"] == "B"  # turn 2 opens with B
    arena.run()  # the last turn: no discussion
    recs = [r for r in load(tmp_path / rule)[1]]
    assert [("discussion" in r) for r in recs] == [True, True, False]
    assert recs[0]["discussion"] == json.loads(json.dumps(r1["discussion"]))  # turns.jsonl
    again = replay(tmp_path / rule)  # verify: every record equal
    assert [strip_volatile(r) for r in again.records] == [strip_volatile(r) for r in recs]
    df = discussion_frame(recs, arena=7)
    assert list(df.columns) == list(COLUMNS) and len(df) == 8
    assert df.arena.eq(7).all() and df.speaker.tolist()[:4] == [u["speaker"] for u in rows]
    assert df.next_speaker.tolist()[:4] == [u["nextSpeaker"] for u in rows]


def test_failed_speaker_and_non_speakers():
    """A speaker whose call fails says nothing (error recorded and counted) and the turn
    passes on; builtin and code players never speak; no speaker: only the report."""

    def answer(url, req):
        tail = _last(req)
        if tail.get("phase") == "discussion":
            return (500, b"") if tail["playerId"] == "B" else completion([], content="plain words")
        return completion([tool_call(0, "harvest", {"amount": 1.0})])

    client = FakeClient(answer)
    arena = Arena(_cfg(rounds=3), seed=5, client=client, operator=OPERATOR)
    arena.join({"agentType": "llm", "name": "A", "model": "m", "baseUrl": BASE})
    arena.join({"agentType": "llm", "name": "B", "model": "m", "baseUrl": BASE})
    arena.join({"agentType": "code", "name": "J", "strategyCode": "function decide(o, m) { return 1; }"})
    rows = arena.tick()["discussion"]["utterances"]
    assert [(u["speaker"], u["text"]) for u in rows] == [("A", "plain words"), ("B", None), ("A", "plain words")]
    assert "status 500" in rows[1]["error"]
    assert arena.summary()["players"] and arena._run.stats["B"]["errors"] == 1
    quiet = Arena(_builtins_cfg(rounds=3), seed=5)
    d = quiet.tick()["discussion"]
    assert d["utterances"] == [] and set(d["report"]["catches"]) == {"b0", "b1", "b2", "b3"}


def test_live_equals_batch_with_a_discussion():
    """The discussion only adds talk: builtins in a talking arena play the batched arena."""
    cfg = _builtins_cfg(rounds=2)
    res = bdpd_jax.simulate(cfg, n_arenas=1, seed=5)
    arena = Arena(cfg, seed=5)
    recs = [arena.tick() for _ in range(3)]
    assert [("discussion" in r) for r in recs] == [True, True, False]
    pl = res.players
    for rec in recs:
        p = pl[pl.turn == rec["turn"]].sort_values("player")
        np.testing.assert_array_equal(np.float32([d["actual"] for d in rec["decisions"]]), p.actual.to_numpy())


# -- properties against plain-Python references (no kernel) ---------------------------------------
class _Speaker:
    def __init__(self, names: list) -> None:
        self.names = list(names)

    async def speak(self, context):
        return Utterance(
            f"{context['playerId']}#{len(context['utterances'])}", self.names.pop(0) if self.names else None
        )


class _Run:
    """What ``discuss`` reads of an arena's run state: config, players, kinds, agents, counts."""

    def __init__(self, kinds: list[str], noms: dict, rounds: int, rule: str) -> None:
        self.players = [f"p{i}" for i in range(len(kinds))]
        self.kinds = kinds
        self.agents = [
            _Speaker(noms.get(p, [])) if k == "llm" else None for p, k in zip(self.players, kinds, strict=True)
        ]
        self.config = type("C", (), {"discussion": DiscussionConfig(rounds=rounds, next_speaker=rule)})()
        self.errors = 0

    def agent_kind(self, i: int) -> str:
        return self.kinds[i]

    def count(self, player: str, stat: str, amount: float) -> None:
        self.errors += amount


def _reference(kinds, noms, rounds, rule, turn):
    """The rule as docs/semantics/live/agents.md §14 states it, written apart from the module."""
    players = [f"p{i}" for i in range(len(kinds))]
    spk = [p for p, k in zip(players, kinds, strict=True) if k == "llm"]
    if not spk:
        return []
    noms = {k: list(v) for k, v in noms.items()}
    out, cur = [], spk[(turn - 1) % len(spk)]
    for _ in range(rounds):
        want = noms[cur].pop(0) if noms.get(cur) else None
        ok = rule == "named" and want in spk and want != cur
        nxt = want if ok else spk[(spk.index(cur) + 1) % len(spk)]
        out.append((cur, nxt, ok))
        cur = nxt
    return out


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["llm", "builtin", "http"]), min_size=1, max_size=6),
    rounds=st.integers(0, 8),
    rule=st.sampled_from(["named", "round_robin"]),
    turn=st.integers(1, 9),
    data=st.data(),
)
def test_discussion_order_matches_the_reference(kinds, rounds, rule, turn, data):
    names = [f"p{i}" for i in range(len(kinds))] + ["ghost", None]
    noms = {f"p{i}": data.draw(st.lists(st.sampled_from(names), max_size=rounds)) for i in range(len(kinds))}
    run = _Run(kinds, noms, rounds, rule)
    line = {"turn": turn, "decisions": [{"playerId": p, "actual": float(i)} for i, p in enumerate(run.players)]}
    asyncio.run(discuss(run, line))
    if rounds == 0:
        assert "discussion" not in line
        return
    rows = line["discussion"]["utterances"]
    assert [(u["speaker"], u["nextSpeaker"], u["named"]) for u in rows] == _reference(kinds, noms, rounds, rule, turn)
    assert [u["order"] for u in rows] == list(range(1, len(rows) + 1)) and run.errors == 0
    assert line["discussion"]["report"]["catches"] == {p: float(i) for i, p in enumerate(run.players)}


@given(h=st.floats(0, 1e6, allow_nan=False), pool=st.floats(0, 1e6, allow_nan=False))
def test_whole_units_property(h, pool):
    errors: list[str] = []
    got = whole_units(h, pool, errors)
    assert got == min(np.floor(h), np.floor(pool)) and got.is_integer() and 0 <= got <= pool
    assert bool(errors) == (got != h)


def test_fixed_fallback_is_in_stock_units_and_replays_on_seneca(tmp_path):
    """A fixed ``fallbackHarvest`` is not rescaled by the engine's harvest unit, and a logged
    fallback (fixed or the scaled default) replays as it was fed."""
    from payloads import SEED_SENECA

    cfg = copy.deepcopy(SEED_SENECA)
    cfg["model"].update(maxTurns=2, minPlayers=3, maxPlayers=3)
    cfg["model"]["seneca"]["harvestScale"] = 2.5e-3
    client = FakeClient(Script("bad"))
    arena = Arena(cfg, seed=3, client=client, operator=OPERATOR, out_dir=tmp_path / "s")
    arena.join({"agentType": "llm", "name": "fixed", "model": "m", "baseUrl": BASE, "fallbackHarvest": 1e-3})
    arena.join({"agentType": "llm", "name": "scaled", "model": "m", "baseUrl": BASE})
    arena.join({"strategy": "conservative", "name": "c"})
    recs = [arena.tick() for _ in range(2)]
    d = {x["playerId"]: x for x in recs[0]["decisions"]}
    assert d["fixed"]["fallback"] and d["fixed"]["harvest"] == 1e-3
    assert d["scaled"]["harvest"] == pytest.approx(0.2 * (1 + 0.05 * 30.0) * 2.5e-3, rel=1e-6)  # float32 unit
    arena.close()
    again = replay(tmp_path / "s")  # verify: every record equal
    assert [strip_volatile(r) for r in again.records] == [strip_volatile(r) for r in recs]


def test_live_batch_arenas_talk_apart():
    """Arenas of one LiveBatch hold their discussions at once, each with its own players and
    transcript, equal to the same arena ticked alone."""
    from bdpd_jax.host.live.live_batch import LiveBatch

    says = {"A": ["C"], "C": ["B"], "B": ["A"]}
    alone, _ = _arena(_cfg(rounds=3), Script(says=says))
    pair = [_arena(_cfg(rounds=3), Script(says=says))[0] for _ in range(2)]
    batch = LiveBatch(pair)
    batch.tick()
    want = alone.tick()["discussion"]
    assert [a.records[-1]["discussion"] for a in pair] == [want, want]
    assert [u["speaker"] for u in want["utterances"]] == ["A", "C", "B"]


def test_discussion_changes_no_number():
    """Same answers with and without a discussion: the same turn records but for the talk."""
    talk, _ = _arena(_cfg(rounds=2), Script(says={"A": ["B"]}))
    quiet, _ = _arena(_cfg(), Script())
    got = [strip_volatile(talk.tick()) for _ in range(3)]
    want = [strip_volatile(quiet.tick()) for _ in range(3)]
    assert [("discussion" in g) for g in got] == [True, True, False]
    assert [{k: v for k, v in g.items() if k != "discussion"} for g in got] == want
