"""Issue 35: a conversation has an overall deadline (``discussion.deadlineMs``), and the
owner's close and delete interrupt a running tick or conversation instead of waiting behind
speakers that never answer (the issue: 20 rounds of 1 s, close answered after 17-23 s)."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time

import httpx
import pytest
from fake_llm import BASE, OPERATOR, completion, tool_call
from payloads import SEED_LOGISTIC
from server_helpers import keys_of, payload, serve

from bdpd_jax.config.discussion import DEFAULT_DISCUSSION_DEADLINE_MS, MAX_DISCUSSION_DEADLINE_MS, DiscussionConfig
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.interrupt import INTERRUPTED
from bdpd_jax.host.live.replay import load, replay, strip_volatile

LLMS = ("A", "B", "C")  # the shapes of test_discussion.py / test_discussion_server.py (their compiled programs)


class Mute:
    """A stub model: harvests at once; in the discussion answers ``talk`` times, then never
    (or, with ``harvest_hangs``, never answers the harvest either)."""

    def __init__(self, talk: int = 0, harvest_hangs: bool = False) -> None:
        self.talk, self.harvest_hangs = talk, harvest_hangs
        self.asked = 0
        self.hanging = threading.Event()  # a call is waiting that will never be answered

    async def post(self, url, body, headers, timeout_s, max_bytes):
        tail = json.loads(json.loads(body)["messages"][-1]["content"])
        if tail.get("phase") == "discussion":
            self.asked += 1
            if self.asked <= self.talk:
                return 200, completion([tool_call(0, "speak", {"text": f"{tail['playerId']} talks"})])
        elif not self.harvest_hangs:
            return 200, completion([tool_call(0, "harvest", {"amount": 1})])
        self.hanging.set()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        pass


def test_the_deadline_is_a_bounded_option_with_a_default() -> None:
    assert DiscussionConfig(rounds=2).deadline_ms == DEFAULT_DISCUSSION_DEADLINE_MS
    assert DiscussionConfig.model_validate({"rounds": 2, "deadlineMs": 500}).deadline_ms == 500
    for bad in (0, MAX_DISCUSSION_DEADLINE_MS + 1, 1.5):
        with pytest.raises(ValueError, match="deadlineMs"):
            DiscussionConfig.model_validate({"rounds": 2, "deadlineMs": bad})


def test_a_conversation_ends_at_its_deadline_and_replays(tmp_path) -> None:
    """Speakers that answer twice, then never: the conversation ends at its deadline with the
    two utterances (the record says ``cut: deadline``), well before 20 rounds of agentTimeout;
    the folder replays to the same records (the replayed speakers end it where it ended)."""
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=4, minPlayers=4, maxTurns=3)
    cfg["players"] = [{"strategy": "conservative", "name": "z"}]
    cfg["agentTimeout"] = 30_000
    cfg["discussion"] = {"rounds": 20, "deadlineMs": 400}
    arena = Arena(cfg, seed=5, client=Mute(talk=2), operator=OPERATOR, out_dir=tmp_path)
    for name in LLMS:
        arena.join({"agentType": "llm", "name": name, "model": "m", "baseUrl": BASE})
    rec = arena.tick()
    assert rec is not None
    d = rec["discussion"]
    assert d["cut"] == "deadline" and [u["text"] for u in d["utterances"]] == ["A talks", "B talks"]
    arena.close()
    again = replay(tmp_path)  # verifies turn by turn
    assert strip_volatile(again.records[-1]) == strip_volatile(load(tmp_path)[1][-1])


def _arena_with_mute_speakers(http: httpx.Client) -> tuple[str, dict]:
    body = {**payload(max_turns=4, players=1), "agentTimeout": 1000, "discussion": {"rounds": 20}}
    c = http.post("/api/arenas", json=body).json()
    aid, (owner, akey, _) = c["arenaId"], keys_of(c)
    for name in LLMS[:2]:
        r = http.post(
            f"/api/arenas/{aid}/join",
            headers=akey,
            json={"agentType": "llm", "name": name, "model": "m", "baseUrl": BASE},
        )
        assert r.status_code == 200, r.text
    http.post(f"/api/arenas/{aid}/start", headers=owner).raise_for_status()
    return aid, owner


@pytest.mark.parametrize("route,harvest_hangs", [("close", False), ("delete", False), ("close", True)])
def test_close_and_delete_interrupt_a_running_tick(tmp_path, monkeypatch, route, harvest_hangs) -> None:
    """The issue's case: ``rounds: 20``, ``agentTimeout: 1000``, speakers that never answer
    (and, in one case, players that never answer the harvest): a close or delete sent while
    the tick runs answers at once, not after the 20 s the conversation would take; the tick
    in flight completes (recorded: its discussion cut, unanswered harvests the fallback)."""
    model = Mute(talk=0, harvest_hangs=harvest_hangs)
    monkeypatch.setattr("bdpd_jax.host.live.arena_callers.own_client", lambda specs, n: model)
    with serve(tmp_path, operator=OPERATOR) as base, httpx.Client(base_url=base, timeout=60, trust_env=False) as http:
        aid, owner = _arena_with_mute_speakers(http)
        ticked: dict = {}
        t = threading.Thread(target=lambda: ticked.update(r=http.post(f"/api/arenas/{aid}/tick", headers=owner)))
        t.start()
        assert model.hanging.wait(60)  # the tick waits on a player that will never answer
        time.sleep(0.2)
        t0 = time.monotonic()
        if route == "close":
            r = http.post(f"/api/arenas/{aid}/close", headers=owner)
        else:
            r = http.delete(f"/api/arenas/{aid}", headers=owner)
        waited = time.monotonic() - t0
        t.join(timeout=30)
        assert r.status_code == 200, r.text
        assert waited < 3, waited  # the old wait: 17-23 s (20 rounds of 1 s)
        tick = ticked["r"].json()["tick"]
        assert tick["turn"] == 1
        if harvest_hangs:
            llm = [d for d in tick["decisions"] if d["playerId"] in LLMS]
            assert all(d["fallback"] and d["error"] == INTERRUPTED for d in llm)
        else:
            assert tick["discussion"]["cut"] == "interrupted"
        if route == "close":
            assert r.json()["turnsPlayed"] == 1
            again = replay(tmp_path / aid)  # the interrupted turn replays as recorded
            assert strip_volatile(again.records[-1]) == strip_volatile(load(tmp_path / aid)[1][-1])
        else:
            assert not (tmp_path / aid).exists()
