"""Persistence and replay: a run killed mid-game (SIGKILL) loses at most the turn in flight,
and ``replay(dir)`` reaches the state of an uninterrupted run bit for bit."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from payloads import SEED_LOGISTIC

from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.persist import read_jsonl
from bdpd_jax.host.live.registry import num
from bdpd_jax.host.live.replay import replay, strip_volatile

ROOT = Path(__file__).resolve().parents[2]

CODE = """function decide(obs, memory) {
  memory.n = (memory.n || 0) + 1;
  const s = obs.commonsStock ?? 100;
  return Math.min(obs.myCapacity, 0.01 * s + 0.05 * (memory.n % 3) + 0.1 * Math.random());
}"""

SCRIPT = [
    {
        "harvest": 1.5,
        "actions": [
            {"tool": "propose_pact", "parties": ["js"], "terms": {"type": "harvest_cap", "maxHarvest": 1.2}},
            {"tool": "broadcast", "text": "cap 1.2?"},
        ],
    },
    {"harvest": 1.1, "actions": [{"tool": "announce_intended_harvest", "value": 1.0}]},
    {"harvest": 2.0, "actions": [{"tool": "pledge", "maxHarvest": 1.8}]},
    {"harvest": 1.3},
]


def _config() -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"]["maxTurns"] = 40
    cfg["observability"]["commonsStock"]["noise"] = 0.1
    cfg["perturbations"] = [
        {
            "id": "s",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": [0.5, 1.0]},
        },
        {"id": "drought", "type": "regen_shock", "trigger": {"kind": "turn", "turn": 2}, "payload": {"factor": 0.5}},
        {"id": "gift", "type": "wealth_shock", "trigger": {"kind": "manual"}, "payload": {"amount": 5.0, "player": 2}},
    ]
    cfg["players"] = [{"strategy": "adaptive", "name": "ada"}, {"strategy": "random", "name": "rand"}]
    return cfg


def _arena(out_dir=None, max_turns=None) -> Arena:
    cfg = _config()
    if max_turns:
        cfg["model"]["maxTurns"] = max_turns
    a = Arena(cfg, seed=21, out_dir=out_dir, perturbable=True)
    a.join({"agentType": "code", "name": "js", "strategyCode": CODE, "rngSeed": 5})
    a.join({"agentType": "scripted", "name": "scr", "script": SCRIPT})
    return a


CHILD = textwrap.dedent("""
    import sys, time
    sys.path[:0] = [{tests!r}, {tests!r} + "/.."]
    from test_host_arena_replay import _arena
    a = _arena({out!r})
    a.start()
    while not a.done:
        a.tick()
        print(a.turn, flush=True)
        time.sleep(0.15)
""")


def _same_state(x, y) -> bool:
    leaves = jax.tree_util.tree_map(lambda p, q: np.array_equal(np.asarray(p), np.asarray(q), equal_nan=True), x, y)
    return all(jax.tree_util.tree_leaves(leaves))


def test_killed_run_replays_to_the_uninterrupted_state(tmp_path):
    out = tmp_path / "killed"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(tests=str(Path(__file__).parent), out=str(out))],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        reached = 0
        deadline = time.monotonic() + 60
        while reached < 6 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            reached = int(line)
        assert reached >= 6, child.stderr.read()
        os.kill(child.pid, signal.SIGKILL)  # mid-run, possibly mid-write
        child.wait(timeout=10)
        for line in child.stdout.read().split():  # turns completed while we were reading
            reached = max(reached, int(line))
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=10)
    logged = read_jsonl(out / "turns.jsonl")
    k = len(logged)
    assert reached <= k <= reached + 1  # at most the turn in flight is lost
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "running" and not (out / "summary.json").exists()

    # a torn line left by a kill mid-write is skipped
    with open(out / "turns.jsonl", "a") as fh:
        fh.write('{"arenaId": "x", "turn": ')
    replayed = replay(out)  # verify=True: every record re-derived equal
    assert replayed.turn == k

    # the uninterrupted run, stopped at the same turn: bit-identical state and records
    ref = _arena()
    for _ in range(k):
        ref.tick()
    assert _same_state(replayed.state, ref.state)
    assert [strip_volatile(r) for r in ref.records] == [strip_volatile(r) for r in logged]
    assert replayed.registry.compact() == ref.registry.compact()
    assert [m["id"] for m in replayed.bus.to_json()["messages"]] == [m["id"] for m in ref.bus.to_json()["messages"]]
    assert any(r["violations"] for r in logged) and any(r["sanctions"] for r in logged)

    # resume: the killed run goes on in its own folder with live players, to the end
    with pytest.raises(ValueError, match="missing"):
        replay(out, resume={"js": {"agentType": "code", "strategyCode": CODE}})
    resumed = replay(
        out,
        resume={
            "js": {"agentType": "code", "strategyCode": CODE, "rngSeed": 5},
            "scr": {"agentType": "scripted", "script": SCRIPT[-1:]},
        },
    )
    resumed.run()
    full = read_jsonl(out / "turns.jsonl")
    assert [r["turn"] for r in full] == list(range(1, resumed.turn + 1)) and resumed.turn > k
    assert json.loads((out / "meta.json").read_text())["status"] == "closed"
    assert _same_state(replay(out).state, resumed.state)  # the whole folder replays


def test_replay_of_a_closed_run(tmp_path):
    a = _arena(tmp_path)
    a.run()
    b = replay(tmp_path)
    assert b.turn == a.turn and _same_state(a.state, b.state)
    assert b.summary()["players"][0] == a.summary()["players"][0]


def test_replay_detects_a_doctored_log(tmp_path):
    a = _arena(tmp_path)
    a.run(max_ticks=3)
    lines = (tmp_path / "turns.jsonl").read_text().splitlines()
    rec = json.loads(lines[1])
    rec["decisions"][0]["actual"] += 1.0  # a builtin's outcome that the kernels will not reproduce
    lines[1] = json.dumps(rec)
    (tmp_path / "turns.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="turn 2"):
        replay(tmp_path)


def test_owner_fired_perturbations_are_logged_and_replayed(tmp_path):
    a = _arena(tmp_path, max_turns=6)
    a.start()
    a.tick()
    with pytest.raises(ValueError, match="specId"):
        a.perturb("nope")
    before = float(a.state.wealth[2])
    out = a.perturb("gift")
    assert out == {
        "turn": 2,
        "spec": out["spec"],
        "type": "wealth_shock",
        "target": "wealth[2]",
        "value": num(np.float32(before) + np.float32(5.0)),
    }
    shock = a.perturb(
        {"id": "boom", "type": "commons_shock", "trigger": {"kind": "manual"}, "payload": {"amount": -30.0}}
    )
    assert shock["target"] == "stock"
    r2 = a.tick()
    assert [p["type"] for p in r2["ownerPerturbations"]] == ["wealth_shock", "commons_shock"]
    assert [(p["id"], p["type"]) for p in r2["perturbations"]] == [("drought", "regen_shock")]
    a.run()
    b = replay(tmp_path)
    assert b.turn == a.turn == 6 and _same_state(a.state, b.state)
    plain = Arena(_config(), seed=2)  # not perturbable: only the config's types
    plain.join({"agentType": "scripted", "name": "scr", "script": SCRIPT})
    plain.join({"agentType": "scripted", "name": "s2", "script": [{"harvest": 0.5}]})
    plain.start()
    with pytest.raises(ValueError, match="perturbable"):
        plain.perturb({"id": "x", "type": "capacity_shock", "trigger": {"kind": "manual"}, "payload": {"factor": 0.5}})


def test_replay_reproduces_summary_with_owner_events(tmp_path):
    """Nothing lost (issue 14): owner firings and owner tool actions between ticks, including
    ones after the last tick, are in turns.jsonl; replay + close gives summary.json exactly."""
    a = _arena(tmp_path, max_turns=8)
    a.start()
    a.tick()
    a.perturb({"id": "cut", "type": "commons_shock", "trigger": {"kind": "manual"}, "payload": {"amount": -40.0}})
    assert a.dispatch("ada", {"tool": "broadcast", "text": "owner speaking for ada"})["ok"]
    a.tick()
    a.tick()
    a.perturb("gift")
    a.perturb({"id": "late", "type": "commons_shock", "trigger": {"kind": "manual"}, "payload": {"amount": -100.0}})
    summary = a.close()  # closed before the perturbations' next turn
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert not any("event" in r for r in read_jsonl(tmp_path / "turns.jsonl"))  # one line per turn (issue 23)
    events = [r["event"] for r in read_jsonl(tmp_path / "events.jsonl")]
    assert events == ["ownerPerturbation", "ownerAction", "ownerPerturbation", "ownerPerturbation"]
    b = replay(tmp_path)
    assert _same_state(a.state, b.state)
    assert json.loads(json.dumps(b.close())) == on_disk
    c = replay(tmp_path, turns=2)  # the firings after turn 2's record are left out
    assert c.turn == 2 and float(c.state.wealth[2]) != float(a.state.wealth[2])
