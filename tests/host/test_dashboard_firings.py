"""The owner's perturbation reaches the arena page twice: the POST /perturb answer and the
stream's ``perturbation`` event, in either order (the order varies from firing to firing). The
page's ``addOwnerFiring`` (web/app.js) pairs them, so one firing is one row of the table. Run
in QuickJS (jsbox, a host dependency) on the two copies the server really sends: no browser."""

from __future__ import annotations

import json
from pathlib import Path

import jsbox
import pytest
from fastapi.testclient import TestClient
from server_helpers import keys_of, parse_sse, payload

from bdpd_jax.host.server import create_app
from bdpd_jax.host.server.live import Subscriber

APP_JS = Path(__file__).resolve().parents[2] / "bdpd_jax" / "host" / "server" / "web" / "app.js"


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> tuple[dict, dict]:
    """One ad-hoc firing as the owner's page gets it: (the POST answer, the stream event's data)."""
    app = create_app(tmp_path_factory.mktemp("arenas"))
    with TestClient(app) as c:
        created = c.post("/api/arenas", json=payload(max_turns=6)).json()
        aid, owner = created["arenaId"], keys_of(created)[0]
        assert c.post(f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "manual"}).status_code == 200
        assert c.post(f"/api/arenas/{aid}/tick", headers=owner).status_code == 200
        sub = Subscriber("owner")
        app.state.hub.live[aid].subscribers.add(sub)
        body = {"spec": {"type": "commons_shock", "payload": {"amount": -5}}}  # the page's ad-hoc form
        r = c.post(f"/api/arenas/{aid}/perturb", headers=owner, json=body)
        assert r.status_code == 200, r.text
        events = [sub.queue.get_nowait() for _ in range(sub.queue.qsize())]
    [(ev, data)] = [e for m in events for e in parse_sse(m.split("\n"))]
    assert ev == "perturbation"
    return json.loads(r.text), data


def _rows(steps: list[tuple[dict, str]]) -> list[dict]:
    """The owner rows after ``addOwnerFiring`` got each (firing, "answer" | "event") in order."""
    rt = jsbox.Runtime(memory_limit=32 << 20)
    rt.eval(APP_JS.read_text() + "\n;void 0;")
    got = rt.eval(f"JSON.stringify({json.dumps(steps)}.reduce((rows, [f, via]) => addOwnerFiring(rows, f, via), []))")
    return json.loads(got)


def test_owner_firing_makes_one_row_whichever_copy_comes_first(copies):
    answer, event = copies
    assert answer["type"] == "commons_shock" and answer["spec"]["payload"] == {"amount": -5}
    for steps in ([(answer, "answer"), (event, "event")], [(event, "event"), (answer, "answer")]):
        rows = _rows(steps)
        assert len(rows) == 1, [via for _, via in steps]
        assert rows[0]["owner"] is True and rows[0]["turn"] == answer["turn"] and rows[0]["value"] == answer["value"]
    # two equal firings (e.g. a stock clamped at 0): two rows, the copies arriving in any order
    assert len(_rows([(answer, "answer"), (answer, "answer"), (event, "event"), (event, "event")])) == 2
    assert len(_rows([(event, "event"), (answer, "answer"), (answer, "answer"), (event, "event")])) == 2
    # another owner tab's firing comes as an event only: its row still shows
    assert len(_rows([(event, "event")])) == 1 and len(_rows([(event, "event"), (event, "event")])) == 2
