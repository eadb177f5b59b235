"""One event loop per process (issue 24 item 4; docs/semantics/live/arena.md "One event loop").

The server ticks an arena that waits on players (HTTP here, and an HTTP governance agent) as a
coroutine on its own loop: every call to a player is made from the server's loop and no loop
is made during ticks or close. The sync API makes a loop only outside any running loop,
replay (scripted players) makes none, and a request cancelled mid-tick leaves the arena whole."""

from __future__ import annotations

import asyncio
import copy
import threading
import time

import httpx
import pytest
from payloads import SEED_LOGISTIC

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from server_helpers import keys_of, serve  # noqa: E402

from bdpd_jax.host.agents.transport import HttpClient  # noqa: E402
from bdpd_jax.host.live.arena import Arena  # noqa: E402
from bdpd_jax.host.live.live_batch import LiveBatch  # noqa: E402
from bdpd_jax.host.live.replay import replay, strip_volatile  # noqa: E402
from bdpd_jax.host.server.live import LiveArena, Workers  # noqa: E402
from bdpd_jax.host.server.ticker import Ticker  # noqa: E402


def _cfg(turns: int = 4) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxTurns=turns, minPlayers=3, maxPlayers=3)
    cfg["players"] = [{"strategy": "conservative", "name": "b0"}, {"strategy": "aggressive", "name": "b1"}]
    return cfg


class Loops:
    """The loops seen: where the server's routes tick, where players are called, and every
    event loop made (``asyncio.new_event_loop``, also what ``asyncio.run`` / ``Runner`` use)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.server: set[int] = set()
        self.calls: set[int] = set()
        self.made: list[str] = []
        self._lock = threading.Lock()
        post, tick_once, new = HttpClient.post, Ticker.tick_once, asyncio.events.new_event_loop

        async def counted_post(client, *args, **kwargs):
            self._add(self.calls)
            return await post(client, *args, **kwargs)

        async def counted_tick(ticker, lv):
            self._add(self.server)
            return await tick_once(ticker, lv)

        def counted_new():
            with self._lock:
                self.made.append(threading.current_thread().name)
            return new()

        monkeypatch.setattr(HttpClient, "post", counted_post)
        monkeypatch.setattr(Ticker, "tick_once", counted_tick)
        for mod in (asyncio, asyncio.events):
            monkeypatch.setattr(mod, "new_event_loop", counted_new)

    def _add(self, into: set[int]) -> None:
        with self._lock:
            into.add(id(asyncio.get_running_loop()))


def test_the_server_ticks_players_on_its_own_loop(tmp_path, live_server, stub_state, monkeypatch):
    with serve(tmp_path) as url, httpx.Client(base_url=url, timeout=60, trust_env=False) as c:
        body = {**_cfg(), "seed": 3, "governanceAgent": {"kind": "http", "url": f"{live_server.base}/echo"}}
        made = c.post("/api/arenas", json=body).json()
        owner, player, _ = keys_of(made)
        aid = made["arenaId"]
        r = c.post(
            f"/api/arenas/{aid}/join",
            headers=player,
            json={"agentType": "http", "name": "web", "url": f"{live_server.base}/ok"},
        )
        assert r.status_code == 200, r.text
        assert c.post(f"/api/arenas/{aid}/start", headers=owner).status_code == 200
        loops = Loops(monkeypatch)  # from here on: ticks and close
        ticks = [c.post(f"/api/arenas/{aid}/tick", headers=owner).json()["tick"] for _ in range(3)]
        summary = c.post(f"/api/arenas/{aid}/close", headers=owner).json()
    assert len(loops.server) == 1, loops.server
    assert loops.calls == loops.server  # every call to a player or governor from the server's loop
    assert loops.made == []  # and no other loop made
    assert [t["turn"] for t in ticks] == [1, 2, 3] and summary["turnsPlayed"] == 3
    web = [d for t in ticks for d in t["decisions"] if d["playerId"] == "web"]
    assert [d["harvest"] for d in web] == [1.25] * 3 and not any(d["fallback"] for d in web), web
    assert len(stub_state["requests"]) == 6  # 3 player calls, 3 governance calls


def test_the_sync_api_refuses_to_make_a_second_loop(live_server, monkeypatch):
    async def main() -> None:
        a = Arena(_cfg(), seed=1, fsync=False)
        a.join({"agentType": "http", "name": "web", "url": f"{live_server.base}/ok"})
        a.start()
        loops = Loops(monkeypatch)
        with pytest.raises(ValueError, match=r"await Arena\.atick\(\)"):
            a.tick()
        with pytest.raises(ValueError, match=r"await Arena\.arun\(\)"):
            a.run(max_ticks=1)
        batch = LiveBatch([a])
        with pytest.raises(ValueError, match=r"await LiveBatch\.atick\(\)"):
            batch.tick()
        assert a.turn == 0 and loops.made == []
        assert (await a.atick())["turn"] == 1  # the caller's loop
        with pytest.raises(ValueError, match=r"await Arena\.aclose\(\)"):
            a.close()
        assert (await a.aclose())["turnsPlayed"] == 1
        assert loops.made == [] and loops.calls == {id(asyncio.get_running_loop())}

    asyncio.run(main())


def test_replay_makes_no_event_loop(tmp_path, live_server, monkeypatch):
    a = Arena(_cfg(), seed=2, out_dir=tmp_path / "a", fsync=False)
    a.join({"agentType": "http", "name": "web", "url": f"{live_server.base}/ok"})
    summ = a.run()  # a script: its one loop
    loops = Loops(monkeypatch)
    b = replay(tmp_path / "a")  # scripted players answer at once: no loop
    assert b.turn == a.turn and b.close()["turnsPlayed"] == summ["turnsPlayed"]
    assert loops.made == []


def test_a_request_cancelled_mid_tick_leaves_the_arena_whole(tmp_path, live_server):
    """The tick runs on to its end; the next one follows it, as ticks never cancelled do."""

    def arena(k: str) -> Arena:
        a = Arena(_cfg(), seed=4, out_dir=tmp_path / k, fsync=False)
        a.join({"agentType": "http", "name": "web", "url": f"{live_server.base}/slow?d=0.4&h=0.5"})
        a.start()
        return a

    ref = arena("ref")
    ref.tick()
    ref.tick()
    ref.close()

    async def main() -> list[dict]:
        workers = Workers(cpu=1)
        lv = LiveArena(arena("cut"), workers, {})
        ticker = Ticker(workers, lambda lv, s: None)
        try:
            await ticker.tick_once(lv)  # compiled; turn 1
            req = asyncio.ensure_future(ticker.tick_once(lv))
            await asyncio.sleep(0.2)  # the player is being asked
            assert lv.arena.in_tick
            req.cancel()
            with pytest.raises(asyncio.CancelledError):
                await req
            rec = await ticker.tick_once(lv)  # waits for the cancelled request's tick, then plays turn 3
            assert rec is not None and rec["turn"] == 3
            await lv.close()
            return list(lv.arena.records)
        finally:
            workers.shutdown()

    recs = asyncio.run(main())
    again = replay(tmp_path / "cut")  # the folder is whole: every line, in order
    assert [r["turn"] for r in recs] == [1, 2, 3] and again.turn == 3
    assert [strip_volatile(r) for r in recs[:2]] == [strip_volatile(r) for r in ref.records]


def test_a_wait_on_a_player_holds_no_worker_slot(tmp_path, live_server):
    """One ``--workers`` slot: an arena whose player answers at once ticks while another
    waits on its slow player (both of one Game: one compiled program)."""

    async def main() -> tuple[float, float]:
        workers = Workers(cpu=1)
        ticker = Ticker(workers, lambda lv, s: None)
        slow = Arena(_cfg(), seed=5, fsync=False)
        slow.join({"agentType": "http", "name": "web", "url": f"{live_server.base}/slow?d=1.5&h=0.5"})
        slow.start()
        fast = Arena(_cfg(), seed=6, fsync=False)
        fast.join({"agentType": "http", "name": "web", "url": f"{live_server.base}/ok"})
        fast.start()
        lv_slow, lv_fast = LiveArena(slow, workers, {}), LiveArena(fast, workers, {})
        try:
            await ticker.tick_once(lv_fast)  # compiled first (one Game: for both)
            t0 = time.perf_counter()
            waiting = asyncio.ensure_future(ticker.tick_once(lv_slow))
            await asyncio.sleep(0.3)
            assert slow.in_tick  # its player is being asked
            await ticker.tick_once(lv_fast)
            fast_s = time.perf_counter() - t0
            assert (await waiting)["turn"] == 1
            return fast_s, time.perf_counter() - t0
        finally:
            await lv_slow.close()  # their HTTP clients, on this loop
            await lv_fast.close()
            workers.shutdown()

    fast_s, slow_s = asyncio.run(main())
    assert fast_s < slow_s - 0.5, (fast_s, slow_s)
