"""The server never stalls: ticks and compiles off the event loop, SSE fan-out in order,
bounded subscribers, streams that end after close and DELETE, closed arenas from disk."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
from payloads import size
from server_helpers import keys_of, parse_sse, payload, read_stream, serve

from bdpd_jax.host.server.live import LiveArena, Subscriber


def test_health_answers_while_a_tick_compiles(tmp_path, monkeypatch):
    """A tick's work (a compile on a new game shape: seconds) runs in a worker thread; the
    work is made slow here on purpose (a compile may come from a cache), so the test does not
    depend on what other tests compiled before it."""
    from bdpd_jax.host.server.ticker import Ticker

    step = Ticker.step

    def slow_step(self, lv):
        time.sleep(0.6)  # the GIL is released, as in XLA's compile
        return step(self, lv)

    monkeypatch.setattr(Ticker, "step", slow_step)
    with serve(tmp_path) as base, httpx.Client(base_url=base, timeout=60, trust_env=False) as client:
        c = client.post("/api/arenas", json=payload(max_turns=3, players=3)).json()
        owner = keys_of(c)[0]
        client.post(f"/api/arenas/{c['arenaId']}/start", headers=owner)
        done = threading.Event()
        th = threading.Thread(
            target=lambda: (client.post(f"/api/arenas/{c['arenaId']}/tick", headers=owner), done.set())
        )
        th.start()
        answered_during = 0
        with httpx.Client(base_url=base, timeout=60, trust_env=False) as probe:
            while not done.is_set():
                assert probe.get("/api/health").json()["ok"] is True
                answered_during += not done.is_set()
        th.join()
        assert answered_during >= 3  # the loop kept answering while the worker ticked


@pytest.mark.heavy
def test_fanout_every_tick_once_in_order_then_end(tmp_path):
    n_clients, turns = size(30, 200), 8
    with serve(tmp_path) as base, httpx.Client(base_url=base, timeout=60, trust_env=False) as client:
        c = client.post("/api/arenas", json=payload(max_turns=turns)).json()
        aid, (owner, akey, spec) = c["arenaId"], keys_of(c)
        got: list[list[tuple[str, int | None]]] = []

        async def listen(k: int, ready: asyncio.Event, counter: list[int]):
            headers = [owner, akey, spec][k % 3]
            async with (
                httpx.AsyncClient(base_url=base, timeout=60, trust_env=False) as ac,
                ac.stream("GET", f"/api/arenas/{aid}/stream", headers=headers) as s,
            ):
                evs = []
                lines = s.aiter_lines()
                async for line in lines:
                    if line.startswith("event: "):
                        evs.append(line[7:])
                        if line == "event: init":
                            counter[0] += 1
                            if counter[0] == n_clients:
                                ready.set()
                    elif line.startswith("data: ") and evs[-1] == "tick":
                        evs[-1] = ("tick", int(line.split('"turn":')[1].split(",")[0].rstrip("}")))
                got.append(evs)

        async def main():
            ready, counter = asyncio.Event(), [0]
            tasks = [asyncio.create_task(listen(k, ready, counter)) for k in range(n_clients)]
            await asyncio.wait_for(ready.wait(), 60)
            async with httpx.AsyncClient(base_url=base, timeout=60, trust_env=False) as ac:
                r = await ac.post(
                    f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "auto", "tickIntervalMs": 5}
                )
                assert r.status_code == 200
            await asyncio.wait_for(asyncio.gather(*tasks), 120)

        asyncio.run(main())
        assert len(got) == n_clients
        for evs in got:  # each client: init, started, every tick once in order, closed, end
            ticks = [e[1] for e in evs if isinstance(e, tuple)]
            assert ticks == list(range(1, len(ticks) + 1)) and len(ticks) >= 1, evs
            assert evs[0] == "init" and evs[1] == "arena_started" and evs[-1] == "arena_closed", evs
        assert len({tuple(map(str, e)) for e in got}) == 1  # all saw the same sequence
        # a subscriber to the closed arena: init with the whole history, arena_closed, end
        evs = read_stream(client, f"/api/arenas/{aid}/stream", spec)
        assert [e for e, _ in evs] == ["init", "arena_closed"]
        assert [t["turn"] for t in evs[0][1]["history"]] == list(range(1, len(ticks) + 1))
        assert evs[1][1]["victory"]["turnsPlayed"] == len(ticks)
        assert aid not in [a["arenaId"] for a in client.get("/api/arenas").json()["arenas"]]  # left memory


def test_delete_ends_streams_with_arena_closed(tmp_path):
    with serve(tmp_path) as base, httpx.Client(base_url=base, timeout=60, trust_env=False) as client:
        c = client.post("/api/arenas", json=payload(max_turns=20)).json()
        aid, (owner, akey, _) = c["arenaId"], keys_of(c)
        client.post(f"/api/arenas/{aid}/start", headers=owner)
        client.post(f"/api/arenas/{aid}/tick", headers=owner)
        out = []
        th = threading.Thread(target=lambda: out.extend(read_stream(client, f"/api/arenas/{aid}/stream", akey)))
        th.start()
        time.sleep(0.5)
        assert client.delete(f"/api/arenas/{aid}", headers=owner).json() == {"deleted": aid}
        th.join(timeout=10)
        assert not th.is_alive()
        assert [e for e, _ in out] == ["init", "arena_closed"] and out[1][1]["deleted"] is True
        assert client.get(f"/api/arenas/{aid}").status_code == 404 and not (tmp_path / aid).exists()


def test_slow_subscriber_is_dropped_with_a_final_event():
    sub = Subscriber("spectator", limit=3)

    class Fake(LiveArena):
        def __init__(self):  # only the subscriber set is used by publish
            self.subscribers = {sub}

    async def main():
        lv = Fake()
        for t in range(10):
            lv.publish("tick", {"turn": t})
        msgs = [sub.queue.get_nowait() for _ in range(sub.queue.qsize())]
        return lv, msgs

    lv, msgs = asyncio.run(main())
    assert len(msgs) == 4 and msgs[-1].startswith("event: dropped") and sub.dropped
    assert [m.split("\n")[0] for m in msgs[:3]] == ["event: tick"] * 3
    assert sub not in lv.subscribers  # no more work for it
    assert list(parse_sse(msgs[-1].split("\n")))[0][0] == "dropped"
