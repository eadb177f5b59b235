"""The tick path's rules (issue 24 item 4, docs/semantics/live/arena.md "The tick path"): one owner
of an arena's kernel state, the pact table synced once per tick, a tool action validated once,
the record built once per arena and tick."""

from __future__ import annotations

import asyncio
import copy
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import numpy as np
from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
import bdpd_jax.kernels
from bdpd_jax.host.agents import scripted, tools
from bdpd_jax.host.live import batch_runner, dispatch
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.live_batch import LiveBatch
from bdpd_jax.host.live.registry import PactRegistry
from bdpd_jax.host.live.sync_loop import drive


def _cfg(turns: int = 6) -> dict:
    c = copy.deepcopy(SEED_LOGISTIC)
    c["model"].update(maxTurns=turns, minPlayers=2)
    c["players"] = copy.deepcopy(MIXED_PLAYERS[:2])
    return c


def _talker() -> dict:
    """A scripted player using three tools every turn (a pledge writes the pact table)."""
    acts = [
        {"tool": "broadcast", "text": "hello"},
        {"tool": "announce_intended_harvest", "value": 1.25},
        {"tool": "pledge", "maxHarvest": 2.0},
    ]
    return {"agentType": "scripted", "name": "s", "script": [{"harvest": 1.0, "actions": acts}]}


def _arena(seed: int, talker: bool = False) -> Arena:
    a = Arena(_cfg(), seed=seed, fsync=False)
    if talker:
        a.join(_talker())
    a.start()
    return a


def _same(x, y) -> bool:
    return all(
        np.array_equal(np.asarray(p), np.asarray(q), equal_nan=True)
        for p, q in zip(jax.tree_util.tree_leaves(x), jax.tree_util.tree_leaves(y), strict=True)
    )


def test_an_arena_owns_its_state_through_group_and_solo_ticks():
    """Ticked twice in a group, then alone: the same state and records as ticked alone; the
    batch keeps no state between ticks."""
    ref = _arena(3)
    for _ in range(3):
        ref.tick()
    a, b = _arena(3), _arena(4)
    batch = Arena.regroup([a, b], 4)  # padded, as the server's groups are
    for _ in range(2):
        drive(batch.tick())
    assert not any(_is_state(v) for v in vars(batch).values())  # keys, params, programs only
    assert a.state is a._run.state  # noqa: SLF001 - the run owns it
    a.tick()  # alone now, no regroup
    assert a.turn == ref.turn == 3 and _same(a.state, ref.state)
    drop = lambda r: {k: v for k, v in r.items() if k != "arenaId"}  # noqa: E731
    assert [drop(r) for r in a.records] == [drop(r) for r in ref.records]
    drive(batch.tick())  # the group again: b goes on, a from turn 3
    assert (a.turn, b.turn) == (4, 3)


def _is_state(v) -> bool:
    return type(v).__name__ == "ArenaState"


def test_one_pact_sync_one_validation_one_record_per_tick(monkeypatch):
    counts = {"sync": 0, "validate": 0, "record": 0}

    def counted(name, fn):
        def wrapped(*args, **kwargs):
            counts[name] += 1
            return fn(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(PactRegistry, "sync", counted("sync", PactRegistry.sync))
    for mod in (scripted, dispatch):  # every place that imports the one validator
        monkeypatch.setattr(mod, "validate_action", counted("validate", tools.validate_action))
    monkeypatch.setattr(batch_runner, "turn_record", counted("record", batch_runner.turn_record))
    arenas = [_arena(1, talker=True), _arena(2, talker=True)]
    assert all(a.registry is not None for a in arenas)
    batch = LiveBatch(arenas)
    recs = batch.tick()
    assert counts == {"sync": 2, "validate": 6, "record": 2}  # per arena: 1 sync, 3 actions, 1 record
    assert all(t["result"]["ok"] for r in recs for t in r["tools"])
    assert [p["status"] for p in recs[0]["pacts"]] == ["active"]  # the pledge bound this turn
    # between ticks the table is the owner's kernel state (no copy to keep in step)
    a = arenas[0]
    assert a.registry.table.status is a.state.extra["governance"].pacts.status
    batch.close()


def test_an_owner_pact_write_between_ticks_goes_into_the_owners_state():
    a = _arena(5, talker=True)
    a.tick()
    out = a.dispatch("s", {"tool": "pledge", "maxHarvest": 3.0})
    assert out["ok"]
    slot = a.registry.slot_of(out["pactId"])
    assert int(a.state.extra["governance"].pacts.status[slot]) == int(a.registry.table.status[slot])
    a.close()


def test_built_in_arenas_tick_without_an_event_loop(monkeypatch):
    """Nothing to wait on (built-in players only): tick, run and close make no event loop."""

    def refused():
        raise AssertionError("an event loop was made")

    monkeypatch.setattr(asyncio, "new_event_loop", refused)
    a = _arena(6)
    assert a.tick()["turn"] == 1
    batch = LiveBatch([_arena(7), _arena(8)])
    assert [r["turn"] for r in batch.tick()] == [1, 1]
    assert a.run()["turnsPlayed"] == 6 and batch.run()


# -- the route's call path, counted as it runs (issue 36) ---------------------------------------
PACKAGE = Path(bdpd_jax.__file__).resolve().parent
KERNELS = Path(bdpd_jax.kernels.__file__).resolve().parent
MAX_CALLS = 10  # from the route handler to the kernel's jitted decide phase


def _ours(frame) -> bool:
    f = Path(frame.f_code.co_filename).resolve()
    return f.is_relative_to(PACKAGE) or f.is_relative_to(KERNELS)


def _chain(frame) -> list[str]:
    """The bdpd_jax frames under ``frame`` (itself included), outermost first."""
    out = []
    while frame is not None:
        if _ours(frame):
            out.append(f"{Path(frame.f_code.co_filename).stem}.{frame.f_code.co_qualname}")
        frame = frame.f_back
    return out[::-1]


def test_a_routes_tick_reaches_the_kernel_in_at_most_ten_calls(monkeypatch, tmp_path):
    """``POST /api/arenas/{id}/tick`` run for real: every bdpd_jax frame from the route handler
    to the one that calls the jitted decide phase, across the hand-off to the arena's worker
    thread (the submitting frames prefix the worker's), each frame one call."""
    from fastapi.testclient import TestClient
    from server_helpers import keys_of

    from bdpd_jax.host.server import create_app

    local = threading.local()
    seen: list[list[str]] = []
    submit = ThreadPoolExecutor.submit

    def traced_submit(pool, fn, *args, **kw):  # the caller's chain travels with the work
        parent = _chain(sys._getframe(1))

        def run(*a, **k):
            local.parent = parent
            try:
                return fn(*a, **k)
            finally:
                local.parent = []

        return submit(pool, run, *args, **kw)

    real = batch_runner.programs

    def traced_programs(game):
        init, decide, step = real(game)

        def traced_decide(*args):
            seen.append(getattr(local, "parent", []) + _chain(sys._getframe(1)))
            return decide(*args)

        return init, traced_decide, step

    monkeypatch.setattr(ThreadPoolExecutor, "submit", traced_submit)
    monkeypatch.setattr(batch_runner, "programs", traced_programs)
    with TestClient(create_app(tmp_path)) as client:
        created = client.post("/api/arenas", json={**_cfg(), "seed": 3}).json()
        owner, base = keys_of(created)[0], f"/api/arenas/{created['arenaId']}"
        assert client.post(f"{base}/start", headers=owner).status_code == 200
        assert client.post(f"{base}/tick", headers=owner).status_code == 200
    assert len(seen) == 1, seen
    path = seen[0][[i for i, f in enumerate(seen[0]) if f == "routes_arenas.tick"][0] :]
    assert path[-1] == "batch_runner.LockstepBatch._decided", path  # the kernel work's frame
    assert len(path) <= MAX_CALLS, " -> ".join(path)
