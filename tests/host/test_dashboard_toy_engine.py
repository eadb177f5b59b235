"""The dashboard charts an engine it has never heard of: the toy engine of tests/test_toy_engine.py
(registered there, nowhere else) is created on the server, ticked, and drawn in a real browser:
its stock under the label it declares and its own recorded variable on its own axis, equal to
the API's history, with no console error."""

from __future__ import annotations

import httpx
import pytest
from server_helpers import keys_of, read_stream, serve
from test_dashboard_browser import DESKTOP, Watch, use_key
from test_toy_engine import config, toy  # noqa: F401 (toy: the one registration of the engine)

TURNS = 6


@pytest.fixture(scope="module")
def toy_server(tmp_path_factory, toy):  # noqa: F811 (the imported fixture)
    with serve(tmp_path_factory.mktemp("toy_arenas")) as base:
        yield base


def test_dashboard_charts_the_toy_engine(browser, toy_server):
    base = toy_server
    body = {**config(regrowth=5.0), "seed": 4}
    body["players"] = [{"strategy": "threshold_taker", "name": "t0"}, {"strategy": "idle", "name": "i1"}]
    with httpx.Client(base_url=base, timeout=120, trust_env=False) as client:
        made = client.post("/api/arenas", json=body)
        assert made.status_code == 200, made.text
        made = made.json()
        aid, owner = made["arenaId"], keys_of(made)[0]
        assert client.get(f"/api/arenas/{aid}").json()["stockLabel"] == "biomass"
        assert client.post(f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "manual"}).status_code == 200
        for _ in range(TURNS):
            assert client.post(f"/api/arenas/{aid}/tick", headers=owner).status_code == 200
        (_, init), *_ = read_stream(client, f"/api/arenas/{aid}/stream", headers=owner, until="init")
    hist = init["history"]
    assert len(hist) == TURNS and all("regrown" in t["engine"] for t in hist)
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    watch = Watch(page)
    use_key(page, base, aid, made["ownerKey"])
    page.wait_for_function(f"window.bdpd.drawnTurns === {TURNS}", timeout=60_000)
    charts = page.evaluate("window.bdpd.charts")
    assert charts["stock"][0]["points"] == [[t["turn"], t["stock"]] for t in hist]
    assert charts["engine.regrown"][0]["points"] == [[t["turn"], t["engine"]["regrown"]] for t in hist]
    assert [p[1] for p in charts["engine.regrown"][0]["points"]] == pytest.approx([5.0 * k for k in range(1, 7)])
    assert page.is_visible("#engineCard") and page.locator("#chart-engine svg").count() == 1
    assert page.eval_on_selector_all("#chart-stock text.axis", "ts => ts.map(t => t.textContent)") == [
        "turn",
        "biomass",
    ]
    assert "biomass" in page.text_content("#stockTitle") and "toy_constant" in page.text_content("#stockTitle")
    axis = page.eval_on_selector_all("#chart-engine text.axis", "ts => ts.map(t => t.textContent)")
    assert axis == ["turn", "regrown"]
    assert not watch.errors, watch.errors
    ctx.close()
