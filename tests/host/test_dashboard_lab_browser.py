"""The dashboard as an experiment lab (issue 41), in Debian's chromium driven by Playwright:
export (each frame and the whole arena downloaded from the arena page, read back with
``bdpd_jax.load``), the index's outcome columns and the comparison page, and the create
box's presets, and the arena page's "What if" fork panel. One server, one browser and one pair
of played arenas per module."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pandas as pd
import pytest
from server_helpers import keys_of, payload, serve

import bdpd_jax
from bdpd_jax.host.server import routes_fork

LADDER = {"id": "g", "type": "sanction_graduated", "trigger": {"kind": "pact_violation"}, "payload": {"ladder": [1.0]}}
SHOCK = {"type": "commons_shock", "payload": {"amount": -5}}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A server with two closed arenas of the logistic example (3 turns of 3 built-ins; the
    second regrows slower), played through the API."""
    root = tmp_path_factory.mktemp("arenas")
    with serve(root) as base, httpx.Client(base_url=base, timeout=120) as c:
        made = []
        for k, extra in enumerate(({}, {"regenRate": 0.05})):
            cfg = payload(max_turns=5, players=3, name=f"lab{k}", **extra)
            # a cap the aggressive player breaks, fined on a ladder (both arenas: one compiled shape)
            cfg["pacts"] = [{"parties": [0, 1, 2], "terms": {"type": "harvest_cap", "maxHarvest": 0.5}}]
            cfg["perturbations"] = [LADDER]
            m = c.post("/api/arenas", json=cfg).json()
            owner = keys_of(m)[0]
            c.post(f"/api/arenas/{m['arenaId']}/start", headers=owner)
            for t in range(3):
                c.post(f"/api/arenas/{m['arenaId']}/tick", headers=owner)
                if t == 0:
                    c.post(f"/api/arenas/{m['arenaId']}/perturb", headers=owner, json=SHOCK)
            c.post(f"/api/arenas/{m['arenaId']}/close", headers=owner)
            made.append(m)
        yield base, root, made


def _visit(browser, url: str, **options):
    """``(context, page, errors)``: ``url`` open in a fresh desktop-sized context, its page
    errors collected."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, **options)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return ctx, page, errors


def _open(browser, base: str, arena_id: str, key: str):
    ctx, page, errors = _visit(browser, f"{base}/arenas/{arena_id}", accept_downloads=True)
    page.click("#useKeyCard summary")
    page.fill("#useKey", key)
    page.click("#useKeyForm button[type=submit]")
    page.wait_for_load_state()
    page.wait_for_function("window.bdpd && window.bdpd.view !== null")
    return ctx, page, errors


def _download(page, selector: str) -> bytes:
    with page.expect_download() as d:
        page.click(selector)
    return Path(d.value.path()).read_bytes()


def test_export_from_the_arena_page(browser, lab, tmp_path):
    base, root, made = lab
    aid, spec = made[0]["arenaId"], made[0]["spectatorToken"]
    ctx, page, errors = _open(browser, base, aid, spec)
    page.wait_for_selector("#exportCard:not([hidden])")
    frames = page.eval_on_selector_all("#exportList button", "bs => bs.map(b => b.dataset.frame)")
    assert {"turns.csv", "turns.parquet", "players.parquet", "discussion.csv", "messages.csv"} <= set(frames)
    want = bdpd_jax.load(root / aid)
    turns = pd.read_parquet(io.BytesIO(_download(page, "button[data-frame='turns.parquet']")))
    pd.testing.assert_frame_equal(turns, want.turns)
    players = pd.read_csv(io.BytesIO(_download(page, "button[data-frame='players.csv']")))
    assert list(players.columns) == list(want.players.columns) and len(players) == len(want.players)
    path = tmp_path / "arena.zip"
    path.write_bytes(_download(page, "#exportZip"))
    pd.testing.assert_frame_equal(bdpd_jax.load(path).turns, want.turns)
    assert "left out" in page.inner_text("#exportNote") and not errors
    ctx.close()


def test_index_outcomes_sort_and_compare(browser, lab):
    base, root, made = lab
    ids = [m["arenaId"] for m in made]
    with httpx.Client(base_url=base) as c:
        reports = [c.get(f"/api/arenas/history/{a}/summary").json() for a in ids]
        series = [c.get(f"/api/arenas/history/{a}/series").json() for a in ids]
    ctx, page, errors = _visit(browser, base)
    page.wait_for_function("window.bdpdIndex.rows.filter(r => r.finalStock !== undefined).length === 2")
    rows = {r["arenaId"]: r for r in page.evaluate("window.bdpdIndex.rows")}
    for a, rep in zip(ids, reports, strict=True):
        assert rows[a]["finalStock"] == rep["finalStock"] and rows[a]["survived"] is True
        assert rows[a]["endTurn"] == 3 and abs(rows[a]["gini"] - (1 - rep["govsim"]["govsim_equality"])) < 1e-6
    metrics = page.eval_on_selector_all("th.metric", "ths => ths.map(t => t.title)")
    assert "govsim_efficiency" in metrics and "govsim_survival_time" in metrics
    lower = min(ids, key=lambda a: rows[a]["finalStock"])
    page.click("button[data-sort=finalStock]")  # ascending: the lower final stock first
    assert lower in page.inner_text("#arenas tbody tr:first-child")
    page.click("button[data-sort=finalStock]")
    assert lower not in page.inner_text("#arenas tbody tr:first-child")
    for a in ids:
        page.check(f"input.pick[data-id='{a}']")
    page.click("#compareBtn")
    page.wait_for_function("window.bdpdCompare && window.bdpdCompare.charts")
    stock = page.evaluate("window.bdpdCompare.charts.stock")
    want = [[[t, v] for t, v in zip(s["turn"], s["stock"], strict=True)] for s in series]
    assert [s["points"] for s in stock] == want
    assert page.locator("#chart-wealth svg path, #chart-wealth svg polyline").count() >= 2
    assert len(page.eval_on_selector_all("#outcomes tbody tr", "r => r")) == 2 and not errors
    ctx.close()


def test_create_presets_numbers_join_forms_and_compile_notice(browser, lab):
    base = lab[0]
    ctx, page, errors = _visit(browser, base)
    page.wait_for_function("document.querySelectorAll('#example option').length >= 17")
    groups = page.eval_on_selector_all("#example optgroup", "gs => gs.map(g => [g.label, g.children.length])")
    assert ["GovSim cells", 12] in groups and ["Governance", 3] in groups
    page.select_option("#example", "govsim/fishery/default")
    assert [page.input_value(f"#{i}") for i in ("nRegen", "nCapacity", "nTurns")] == ["1", "100", "12"]
    page.fill("#nTurns", "7")
    assert '"maxTurns": 7' in page.input_value("#payload")
    page.select_option("#example", "logistic")
    page.fill("#nTurns", "4")
    page.click("#createBtn")
    page.wait_for_url("**/arenas/*")
    page.wait_for_function("window.bdpd && window.bdpd.view && window.bdpd.view.status === 'waiting'")
    assert page.evaluate("window.bdpd.view.maxTurns") == 4
    with httpx.Client(base_url=base) as c:
        want = c.get("/api/builtins").json()["strategies"]
    assert page.eval_on_selector_all("#builtinPick option", "os => os.map(o => o.value)") == want
    assert {"idle", "threshold_taker"} <= set(want)
    page.click("[data-tab=llm]")
    assert page.is_visible("#join-llm textarea[name=rulesText]") and page.is_visible("#join-llm [name=credential]")
    page.click("[data-tab=builtin]")
    for k, s in enumerate(["idle", "threshold_taker", "conservative", "aggressive"]):
        page.fill("#join-builtin [name=displayName]", f"p{k}")
        page.select_option("#builtinPick", s)
        page.click("#join-builtin button[type=submit]")
        page.wait_for_function(f"(window.bdpd.view.players || []).length === {k + 1}")
        assert page.input_value("#join-builtin [name=displayName]") == ""  # the form starts blank again
    seen: list[str] = []
    page.route("**/start", lambda route: (seen.append(page.inner_text("#notice")), route.continue_()))
    page.click("#startBtn")
    page.wait_for_function("window.bdpd.view.status === 'running'", timeout=120_000)
    assert seen and "compiling the first run of this shape" in seen[0] and not errors
    ctx.close()


def test_arena_page_reads_well(browser, lab):
    base, root, made = lab
    ctx, page, errors = _open(browser, base, made[1]["arenaId"], made[1]["ownerKey"])
    page.wait_for_function("window.bdpd.summary && window.bdpd.ticks.length === 3 && window.bdpd.sanctions.length > 0")
    assert page.evaluate("document.getElementById('keysCard').open") is False  # folded: the arena is closed
    kinds = {m["kind"] for m in page.evaluate("window.bdpd.markers")}
    assert kinds == {"perturbation", "sanction"}
    assert page.locator("#chart-stock line.marker[data-kind=sanction]").count() >= 1
    assert "harvest_cap: maxHarvest 0.5" in page.inner_text("#pacts tbody")
    shares = page.evaluate(
        """['pacts', 'messages', 'perturbations', 'discussion', 'sanctions'].map(id => {
            const card = document.getElementById(id).closest('.card');
            return card.getBoundingClientRect().width / card.parentElement.getBoundingClientRect().width; })"""
    )
    assert min(shares) > 0.95, shares  # the tables take the grid's full width (issue 41)
    assert "cooperation index" in page.inner_text("#chart-metrics .legend")
    assert "000" not in page.inner_text("main h2:has(+ #chart-metrics)")
    dashes = page.eval_on_selector_all(
        "#chart-wealth path[data-series]", "ps => ps.map(p => p.getAttribute('stroke-dasharray'))"
    )
    assert len(dashes) == 3 and len(set(dashes)) == 3
    page.click("#chart-wealth .legend button[data-series=b0]")
    assert page.get_attribute("#chart-wealth path[data-series=b0]", "visibility") == "hidden"
    page.evaluate("window.bdpd.ticks.push(...[]); redraw()")  # a redraw keeps the reader's choice
    page.wait_for_timeout(100)
    assert page.get_attribute("#chart-wealth path[data-series=b0]", "visibility") == "hidden"
    family = page.eval_on_selector_all("#familyReport th", "ths => ths.map(t => t.title)")
    assert len(family) == 7 and "govsim_equality" in family
    # the discussion reads in chat order: the oldest month first, its speakers as they spoke
    page.evaluate("""() => { bdpd.discussion = [1, 2].flatMap(t => ['A', 'B', 'C'].map((s, k) =>
        ({turn: t, order: k, speaker: s, text: s + t, nextSpeaker: null, named: true}))); drawTables(); }""")
    rows = page.eval_on_selector_all("#discussion tbody tr td:nth-child(3)", "tds => tds.map(t => t.innerText)")
    assert rows == ["A1", "B1", "C1", "A2", "B2", "C2"] and not errors
    ctx.close()


def test_fork_fan_on_the_stock_chart(browser, lab):
    """A spectator forks a closed arena from the page (8 arenas from turn 1, 4 turns, a regen
    change): errors read as sentences, the busy notice names the first compile, the fan's bands
    and median are drawn on the stock chart with the answer's numbers and toggle with their
    legend entry, and the download buttons fetch the fork's frames."""
    base, root, made = lab
    aid = made[1]["arenaId"]
    pool = ThreadPoolExecutor(1)
    routes_fork.use_executor(pool)  # the fork runs in this process: no worker start, no jax import
    try:
        ctx, page, errors = _open(browser, base, aid, made[1]["spectatorToken"])
        page.wait_for_selector("#forkCard:not([hidden])")
        page.fill("#forkTurn", "1")
        page.fill("#forkReplicates", "8")
        page.fill("#forkChanges", "{regen: 0.3")
        page.click("#forkBtn")
        assert "changes: not valid JSON" in page.inner_text("#forkNotice")
        page.fill("#forkChanges", '{"model.regenRate": 0.3}')
        busy = '{"detail": "fork: 2 forks are running or waiting; retry later"}'
        page.route("**/fork", lambda route: route.fulfill(status=429, content_type="application/json", body=busy))
        page.click("#forkBtn")
        page.wait_for_function("document.getElementById('forkNotice').innerText.includes('retry')")
        assert page.inner_text("#forkNotice").startswith("Forks are busy") and "{" not in page.inner_text("#forkNotice")
        page.unroute("**/fork")
        seen: list[str] = []
        page.route("**/fork", lambda route: (seen.append(page.inner_text("#forkNotice")), route.continue_()))
        with page.expect_response("**/fork", timeout=300_000) as resp:
            page.click("#forkBtn")
        ans = resp.value.json()
        assert resp.value.status == 200 and "compiles" in seen[0]
        assert (ans["turn"], ans["replicates"], ans["turns"]) == (1, 8, 4)
        page.wait_for_selector("#chart-stock polygon.band[data-series=fork]")
        assert page.locator("#chart-stock polygon.band[data-series=fork]").count() == 2
        assert page.locator("#chart-stock path[data-series=fork]").count() == 1
        points = page.evaluate("window.bdpd.charts.stock.find(s => s.name === 'fork').points")
        assert [[r["turn"], r["median"]] for r in ans["fan"]] == points[1:]  # after the live stock at turn 1
        assert points[0] == [1, page.evaluate("window.bdpd.ticks.find(t => t.turn === 1).stock")]
        page.click("#chart-stock .legend button[data-series=fork]")
        hidden = page.eval_on_selector_all(
            "#chart-stock svg [data-series=fork]", "es => es.map(e => e.getAttribute('visibility'))"
        )
        assert hidden == ["hidden"] * 3
        hrefs = page.eval_on_selector_all("#forkLinks button[data-frame$='.csv']", "bs => bs.map(b => b.dataset.href)")
        assert sorted(hrefs) == sorted(ans["links"].values()) and ans["forkId"] in hrefs[0]
        turns = pd.read_csv(io.BytesIO(_download(page, "#forkLinks button[data-frame='turns.csv']")))
        assert list(turns.columns[:2]) == ["arena", "turn"] and len(turns) == 8 * 4
        assert turns.groupby("turn").stock.median().round(4).tolist() == [round(r["median"], 4) for r in ans["fan"]]
        assert not errors
        ctx.close()
    finally:
        routes_fork.use_executor(None)
        pool.shutdown(wait=False)
