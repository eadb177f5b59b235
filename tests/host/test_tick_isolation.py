"""Issue 35: an arena's tick does not wait on another arena's players. The JS pool wakes only
the call it grants a worker: the waiting calls of an arena whose code is killed every tick
are not all woken at every grant (a ``notify_all`` herd that crowded the GIL; the honest
arena's median tick beside it was 600 ms, bench/tick_isolation.py)."""

from __future__ import annotations

import threading
import time

from bdpd_jax.host.agents import js_pool
from bdpd_jax.host.agents.js_pool import JsPool


def test_a_grant_wakes_only_the_call_it_is_for(monkeypatch) -> None:
    wakes: list[str] = []

    class Counting(threading.Condition):
        def wait(self, timeout=None):
            out = super().wait(timeout)
            wakes.append(threading.current_thread().name)
            return out

    class Ticket(js_pool._Ticket):
        def __init__(self, owner, lock) -> None:
            super().__init__(owner, lock)
            self.cv = Counting(lock)

    monkeypatch.setattr(js_pool, "_Ticket", Ticket)
    pool = JsPool(1)
    pool.warm()
    try:
        held = pool._acquire(time.perf_counter() + 10, "busy")  # the one worker, taken
        assert isinstance(held, js_pool._Worker)
        got: list = []

        def call(k: int) -> None:
            w = pool._acquire(time.perf_counter() + 30, f"arena{k % 2}")
            got.append(w)
            pool._release(w, True, f"arena{k % 2}")

        threads = [threading.Thread(target=call, args=(k,), name=f"call{k}") for k in range(8)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while sum(len(q) for q in pool._queues.values()) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        pool._release(held, True, "busy")  # eight grants follow, one by one
        for t in threads:
            t.join(timeout=30)
        assert len(got) == 8 and all(w is held for w in got)
        assert sorted(wakes) == sorted(t.name for t in threads), wakes  # each woken once: when granted
    finally:
        pool.close()
