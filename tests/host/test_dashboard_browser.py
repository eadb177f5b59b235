"""The dashboard in a real browser (Debian's chromium, driven by Playwright; no browser
download), as researchers use it (issue 26): create and invite through the page, every owner
action, charts equal to the API's history, spectator tables, a failing JS player marked, a
server restart shown and resumed from the page, 390 px phones, no console error, and the
bundled axe-core checks. Screenshots at desktop and phone width go to the folder named by
``BDPD_SCREENSHOTS`` when it is set. One server and one browser per module."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

import httpx
import pytest
from payloads import SEED_LOGISTIC
from server_helpers import keys_of, read_stream, serve

AXE = Path(__file__).with_name("vendor") / "axe.min.js"
DESKTOP = {"width": 1400, "height": 1000}
PHONE = {"width": 390, "height": 844}
FAILING_JS = "function decide(obs, memory) { throw new Error('boom: no model\\nsecond line'); }"
TALKER_JS = (
    "function decide(obs, memory) { return {harvest: 1, actions: [{tool: 'broadcast', text: '<b>hi</b>'}, "
    "{tool: 'send_private', target: 'p0', text: 'psst'}]}; }"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("arenas")


@pytest.fixture(scope="module")
def server(root):
    with serve(root) as base:
        yield base


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = os.environ.get("BDPD_SCREENSHOTS") or os.environ.get("BDPD_SCREENSHOT_DIR")
    out = Path(folder) if folder else tmp_path_factory.mktemp("shots")
    out.mkdir(parents=True, exist_ok=True)
    return out


class Watch:
    """A page's console errors, page errors and requested URLs."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        self.urls: list[str] = []
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("request", lambda r: self.urls.append(r.url))
        page.on(
            "response",
            lambda r: self.errors.append(f"{r.status} {r.request.method} {r.url}") if r.status >= 400 else None,
        )


def _page(browser, viewport=DESKTOP):
    ctx = browser.new_context(viewport=viewport)
    page = ctx.new_page()
    return ctx, page, Watch(page)


def use_key(page, base: str, arena_id: str, key: str) -> None:
    """Open an arena with a pasted key (the "Use a key" form), as a second device would."""
    page.goto(f"{base}/arenas/{arena_id}")
    page.click("#useKeyCard summary")
    page.fill("#useKey", key)
    page.click("#useKeyForm button[type=submit]")
    page.wait_for_load_state()
    page.wait_for_function("window.bdpd && window.bdpd.view !== null")


def no_overflow(page) -> list[str]:
    """Elements whose right edge lies beyond the viewport (or a page wider than it)."""
    return page.evaluate("""() => {
      const w = document.documentElement.clientWidth, out = [];
      if (document.documentElement.scrollWidth > w) out.push('page ' + document.documentElement.scrollWidth);
      for (const el of document.querySelectorAll('header, main, .card, .grid, .row, textarea, pre, svg.chart')) {
        const r = el.getBoundingClientRect();
        if (r.width && r.right > w + 0.5) out.push((el.id || el.className || el.tagName) + ' ' + Math.round(r.right));
      }
      return out; }""")


def axe_serious(page) -> list[dict]:
    """The bundled axe-core run on the page: its serious and critical violations."""
    page.add_script_tag(path=str(AXE))
    res = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map(n => n.target)}))"
    )
    return [v for v in res if v["impact"] in ("serious", "critical")]


def table_rows(page, table: str) -> list[str]:
    return page.eval_on_selector_all(f"#{table} tbody tr", "rows => rows.map(r => r.innerText.trim())")


def test_owner_flow_invite_actions_charts(browser, server, shots):
    """Create through the page, invite a second browser as a player from the key panel, start
    auto, switch to manual while running, tick, fire an ad-hoc perturbation from the registry
    form (one row, also after the next tick), close; charts equal the API's history; no
    console error; keys never in a URL; axe finds nothing serious."""
    base = server
    ctx, page, watch = _page(browser)
    page.goto(base + "/")
    page.select_option("#example", "logistic")
    page.fill("#seed", "11")
    page.click("#createBtn")
    page.wait_for_url(f"{base}/arenas/**")
    aid = page.url.rsplit("/", 1)[-1]
    page.wait_for_function("document.getElementById('arenaKey').textContent.startsWith('arena_')")
    arena_key = page.text_content("#arenaKey")
    assert page.is_visible("#keysCard") and arena_key in page.text_content("#snipCurl")
    assert arena_key in page.text_content("#snipA4") and "strategyCode" in page.text_content("#snipA4")
    assert page.text_content("#spectatorToken").startswith("spec_")
    # the invited player: another browser context with only the arena key
    gctx, guest, gwatch = _page(browser)
    use_key(guest, base, aid, arena_key)
    guest.wait_for_selector("#joinCard:not([hidden])")
    assert guest.is_hidden("#keysCard") and guest.is_hidden("#startBtn")
    guest.fill("#join-builtin input[name=displayName]", "guest")
    guest.select_option("#join-builtin select[name=strategy]", "adaptive")
    guest.click("#join-builtin button[type=submit]")
    guest.wait_for_function("document.getElementById('playersLine').textContent.includes('guest')")
    gctx.close()
    for k, strategy in enumerate(("conservative", "aggressive")):
        page.click("[data-tab=builtin]")
        page.select_option("#join-builtin select[name=strategy]", strategy)
        page.click("#join-builtin button[type=submit]")
        page.wait_for_function(f"document.getElementById('playersLine').textContent.includes('{k + 2} joined')")
    page.click("[data-tab=code]")
    page.wait_for_function("document.querySelector('#join-code textarea').value.includes('memory.stockHistory')")
    page.click("#join-code button[type=submit]")
    page.wait_for_function("document.getElementById('playersLine').textContent.includes('TrendConservative')")
    page.select_option("#tickMode", "auto")
    page.fill("#interval", "150")
    page.click("#startBtn")
    page.wait_for_function("window.bdpd.drawnTurns >= 2", timeout=120_000)
    assert page.is_disabled("#tickBtn")  # auto ticks run: no manual tick
    page.select_option("#tickMode", "manual")
    page.click("#modeBtn")
    page.wait_for_function("window.bdpd.tickMode === 'manual' && !document.getElementById('tickBtn').disabled")
    page.wait_for_timeout(400)  # a tick in flight when the mode switched lands
    turn = page.evaluate("window.bdpd.view.turn")
    page.wait_for_timeout(500)
    assert page.evaluate("window.bdpd.view.turn") == turn  # no auto tick any more
    page.click("#tickBtn")
    page.wait_for_function(f"window.bdpd.drawnTurns >= {turn + 1}", timeout=120_000)
    page.wait_for_selector("#perturbPick option[value='type:commons_shock']", state="attached")
    page.select_option("#perturbPick", "type:commons_shock")
    page.fill("#perturbFields input[name=amount]", "-5")
    page.click("#perturbBtn")
    assert page.get_attribute("#perturbBtn", "aria-busy") == "true"  # busy while the firing compiles
    page.wait_for_function("document.querySelectorAll('#perturbations tbody tr').length === 1", timeout=180_000)
    page.click("#tickBtn")
    page.wait_for_function(f"window.bdpd.drawnTurns >= {turn + 2}", timeout=120_000)
    page.wait_for_timeout(300)
    rows = table_rows(page, "perturbations")
    assert len(rows) == 1 and "commons_shock" in rows[0] and "owner" in rows[0] and "→" in rows[0], rows
    before, after = (float(x.replace(",", "")) for x in rows[0].split("\t")[3].split("→"))
    assert after == pytest.approx(max(before - 5, 0), abs=2e-3)
    # the hover readout names the turn and each series' value
    page.locator("#chart-stock svg").hover(position={"x": 300, "y": 100})
    tip = page.text_content("#chart-stock .tip")
    assert tip.startswith("turn ") and "stock:" in tip
    axis = page.eval_on_selector_all("#chart-stock text.axis", "ts => ts.map(t => t.textContent)")
    assert axis == ["turn", "stock"]
    kinds = dict(
        page.eval_on_selector_all(
            "#players tbody tr", "rs => rs.map(r => [r.cells[0].innerText.trim(), r.cells[1].innerText])"
        )
    )
    assert kinds["guest"] == "built-in: adaptive" and kinds["TrendConservative"] == "JS code", kinds
    page.screenshot(path=str(shots / "arena_desktop.png"), full_page=True)
    assert axe_serious(page) == []
    page.click("#closeBtn")
    page.wait_for_function("window.bdpd.view.status === 'closed' && window.bdpd.summary !== null", timeout=120_000)
    page.wait_for_function("window.bdpd.drawnTurns === window.bdpd.ticks.length")
    assert "errors" in page.text_content("#rankings thead") and len(table_rows(page, "rankings")) == 4
    charts = page.evaluate("window.bdpd.charts")
    # replay: progress, pause, speed; the header follows the replayed turn
    page.click("#replayBtn")
    page.select_option("#replaySpeed", "0.5")
    page.wait_for_function("window.bdpd.replay && window.bdpd.replay.upto >= 1")
    page.click("#replayPause")
    page.wait_for_function("window.bdpd.replay.paused")
    upto = page.evaluate("window.bdpd.replay.upto")
    page.wait_for_timeout(400)
    assert page.evaluate("[window.bdpd.replay.upto, window.bdpd.drawnTurns]") == [upto, upto]
    assert page.text_content("#turn") == str(upto) and page.input_value("#replayPos") == str(upto)
    assert f"turn {upto} of {turn + 2}" in page.text_content("#replayAt")
    page.click("#replayStop")
    page.wait_for_function(f"window.bdpd.drawnTurns === {turn + 2} && window.bdpd.replay === null")
    assert page.text_content("#turn") == str(turn + 2)
    assert not watch.errors, watch.errors
    assert all(u.startswith(base) for u in watch.urls), [u for u in watch.urls if not u.startswith(base)]
    keys = page.evaluate("Object.values(loadKeys(window.bdpd.arenaId))")
    assert len(keys) == 3 and not any(k in u for u in watch.urls + [page.url] for k in keys)
    ctx.close()
    with httpx.Client(base_url=base, timeout=30, trust_env=False) as client:
        (_, init), (_, closed) = read_stream(client, f"/api/arenas/{aid}/stream")
    hist = init["history"]
    assert len(hist) == closed["turnsPlayed"] == turn + 2
    assert charts["stock"][0]["points"] == [[t["turn"], t["stock"]] for t in hist]
    players = [d["playerId"] for d in hist[0]["decisions"]]
    assert sorted(players) == sorted(["guest", "p1", "p2", "TrendConservative"])
    for field in ("requested", "actual", "wealth"):
        assert [s["name"] for s in charts[field]] == players
        for s in charts[field]:
            want = [[t["turn"], next(d[field] for d in t["decisions"] if d["playerId"] == s["name"])] for t in hist]
            assert s["points"] == want, (field, s["name"])
    metric_names = list(hist[-1]["metrics"])
    assert [s["name"] for s in charts["metrics"]] == metric_names and len(metric_names) == 5
    for s in charts["metrics"]:
        assert s["points"] == [[t["turn"], t["metrics"][s["name"]]] for t in hist]
    assert charts["engine.reserve"][0]["points"] == [[t["turn"], t["engine"]["reserve"]] for t in hist]


def _governed() -> dict:
    """Scripted talk (announcements, a pledge, a proposal), a pact with a graduated sanction,
    a triggered commons shock, and room for a failing JS player."""
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update({"maxTurns": 12, "maxPlayers": 5, "minPlayers": 2})
    honest = {"announce": "honest", "comply": True, "pledge": {"turn": 2, "maxHarvest": 1.2}}
    biased = {"announce": "biased", "bias": 0.3, "accept": "min_cap", "acceptMinCap": 1.5}
    cfg["players"] = [
        {"strategy": "conservative", "talk": honest},
        {"strategy": "aggressive", "talk": biased},
        {
            "strategy": "random",
            "talk": {
                "propose": {"turn": 2, "parties": [0, 1, 2], "terms": {"type": "no_aggression", "tolerance": 0.1}}
            },
        },
    ]
    cfg["pacts"] = [{"parties": [1, 2], "terms": {"type": "harvest_cap", "maxHarvest": 1.0}}]
    cfg["perturbations"] = [
        {
            "id": "g",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": [0.5, 2.0]},
        },
        {"id": "c", "type": "commons_shock", "trigger": {"kind": "turn", "turn": 3}, "payload": {"amount": -10.0}},
    ]
    return {**cfg, "seed": 5}


def test_spectator_tables_failing_player_and_phone(browser, server, root, shots):
    """A spectator sees the owner's tables (minus the keys); a JS player that throws every turn
    is marked with its error's first line and its counts; at 390 px nothing overflows; the index
    pages, filters and sorts 120 stored arenas; keyboard focus follows the page."""
    base = server
    with httpx.Client(base_url=base, timeout=120, trust_env=False) as client:
        made = client.post("/api/arenas", json=_governed()).json()
        aid = made["arenaId"]
        owner, player, spec = keys_of(made)
        for name, code in (("broken", FAILING_JS), ("talker", TALKER_JS)):
            r = client.post(
                f"/api/arenas/{aid}/join",
                headers=player,
                json={"agentType": "code", "displayName": name, "strategyCode": code},
            )
            assert r.status_code == 200, r.text
        client.post(f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "manual"})
        for _ in range(5):
            assert client.post(f"/api/arenas/{aid}/tick", headers=owner).status_code == 200
        client.post(
            f"/api/arenas/{aid}/perturb",
            headers=owner,
            json={"type": "wealth_shock", "payload": {"factor": 0.5, "player": 0}},
        )
        assert client.get(f"/api/arenas/{aid}/dashboard", headers=player).status_code == 403
    octx, opage, owatch = _page(browser)
    use_key(opage, base, aid, made["ownerKey"])
    sctx, spage, swatch = _page(browser)
    use_key(spage, base, aid, made["spectatorToken"])
    for p in (opage, spage):
        p.wait_for_function("window.bdpd.drawnTurns === 5 && window.bdpd.players.length === 5")
        p.wait_for_timeout(300)
    tables = ("messages", "pacts", "perturbations", "sanctions", "players")
    seen = {t: table_rows(opage, t) for t in tables}
    assert all(seen[t] for t in tables), seen
    for t in tables[1:-1]:
        assert table_rows(spage, t) == seen[t], t
    # issue 35: a spectator reads an error's category, not its text (it may quote private text)
    hidden = [re.sub(r"\t(\w+): [^\t]*$", r"\t\1: details hidden from spectators", r) for r in seen["players"]]
    assert table_rows(spage, "players") == hidden
    assert any("boom" in r for r in seen["players"]) and not any("boom" in r for r in hidden)
    # a private message: the spectator sees its row (turn, sender, recipient), not its text (issue 35)
    spec_msgs = table_rows(spage, "messages")
    assert len(spec_msgs) == len(seen["messages"]) and not any("psst" in r for r in spec_msgs)
    assert any("private" in r and "text hidden" in r for r in spec_msgs)
    assert spage.is_hidden("#keysCard") and made["ownerKey"] not in spage.content()
    assert made["arenaKey"] not in spage.content() and spage.is_hidden("#perturbCard")
    assert any("c" in r and "trigger" in r for r in seen["perturbations"])
    assert any("private" in r and "psst" in r for r in seen["messages"])
    assert any("<b>hi</b>" in r for r in seen["messages"])  # player text shown as text
    assert any("wealth_shock" in r and "owner" in r for r in seen["perturbations"])
    broken = opage.eval_on_selector("#players tr[data-player=broken]", "r => [r.className, r.innerText]")
    assert broken[0] == "fellback" and "⚠ fallback" in broken[1] and "JS code" in broken[1]
    assert "1 / 5" in broken[1] and "boom: no model" in broken[1] and "second line" not in broken[1]
    assert opage.eval_on_selector("#players tr[data-player=p0]", "r => r.className") == ""
    opage.screenshot(path=str(shots / "arena_spectated_desktop.png"), full_page=True)
    opage.set_viewport_size(PHONE)
    opage.wait_for_timeout(300)
    assert no_overflow(opage) == []
    opage.screenshot(path=str(shots / "arena_phone.png"), full_page=True)
    assert not owatch.errors and not swatch.errors, owatch.errors + swatch.errors
    octx.close()
    sctx.close()
    for k in range(120):  # closed arenas on disk, as a long-running server has them
        folder = root / f"fake-{k:03d}"
        folder.mkdir()
        (folder / "meta.json").write_text(
            json.dumps(
                {
                    "arenaId": folder.name,
                    "status": "closed",
                    "createdAt": f"2026-11-{1 + k % 28:02d}T10:00:00+00:00",
                    "closedAt": f"2026-11-{1 + k % 28:02d}T11:{k % 60:02d}:00+00:00",
                    "turnsPlayed": k % 30,
                    "seed": k,
                    "config": {"model": {"name": f"study_{k % 3}", "engineMode": "seneca" if k % 2 else "logistic"}},
                }
            )
        )
    ctx, page, watch = _page(browser, viewport=PHONE)
    page.goto(base + "/")
    page.wait_for_function("document.querySelectorAll('#arenas tbody tr a').length >= 1")
    assert no_overflow(page) == []
    page.screenshot(path=str(shots / "index_phone.png"), full_page=True)
    page.set_viewport_size(DESKTOP)
    page.wait_for_function("document.getElementById('count').textContent.includes('of 1')")
    assert page.text_content("#count").startswith("50 of 1") and len(table_rows(page, "arenas")) == 50
    page.click("#more")
    assert len(table_rows(page, "arenas")) == 100
    page.fill("#fText", "study_1")
    page.select_option("#fEngine", "seneca")
    rows = table_rows(page, "arenas")
    assert rows and all("study_1" in r and "seneca" in r for r in rows)
    assert len(rows) == sum(1 for k in range(120) if k % 3 == 1 and k % 2)
    page.click("button.sort[data-sort=turns]")  # ascending by turns played
    turns = [int(r.split("\t")[3]) for r in table_rows(page, "arenas")]
    assert turns == sorted(turns)
    assert all(re.search(r"2026-11-\d\d \d\d:\d\d", r) for r in table_rows(page, "arenas"))
    page.fill("#fText", "")
    page.select_option("#fEngine", "")
    # keyboard order follows the page: the create form first, then "Use a key", then the filters
    page.focus("#example")
    order = []
    for _ in range(12):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id || document.activeElement.tagName"))
    numbers = ["privateText", "nRegen", "nCapacity", "nTurns", "seed"]  # (issue 41: the common numbers)
    assert order[:11] == [*numbers, "payload", "createBtn", "useArena", "useKey", "BUTTON", "fText"], order
    page.select_option("#fStatus", "running")
    page.wait_for_function(
        "[...document.querySelectorAll('#arenas tbody tr')].every(r => r.innerText.includes('running'))"
    )
    page.screenshot(path=str(shots / "index_desktop.png"), full_page=True)
    assert axe_serious(page) == []
    assert not watch.errors, watch.errors
    ctx.close()


def test_restart_shows_interrupted_and_resumes(browser, tmp_path):
    """A server restart under an open page: the stream reconnects, the page says
    "interrupted" with what to do, and Resume then Tick work from the page."""
    root = tmp_path / "arenas"
    with serve(root) as base:
        port = int(base.rsplit(":", 1)[1])
        with httpx.Client(base_url=base, timeout=120, trust_env=False) as client:
            cfg = copy.deepcopy(SEED_LOGISTIC)
            cfg["model"].update({"maxTurns": 10, "minPlayers": 2})
            cfg["players"] = [{"strategy": "conservative"}, {"strategy": "aggressive"}]
            made = client.post("/api/arenas", json={**cfg, "seed": 2}).json()
            aid, owner = made["arenaId"], keys_of(made)[0]
            client.post(f"/api/arenas/{aid}/start", headers=owner)
            for _ in range(3):
                client.post(f"/api/arenas/{aid}/tick", headers=owner)
        ctx, page, _ = _page(browser)
        use_key(page, base, aid, made["ownerKey"])
        page.wait_for_function("window.bdpd.drawnTurns === 3 && window.bdpd.view.status === 'running'")
    page.wait_for_function("window.bdpd.conn === 'lost'", timeout=30_000)
    with serve(root, port=port) as base2:
        assert base2 == base
        page.wait_for_function("window.bdpd.view.status === 'interrupted'", timeout=60_000)
        assert "Interrupted" in page.text_content("#notice") and page.is_visible("#resumeBtn")
        assert page.text_content("#turn") == "3"
        page.click("#resumeBtn")
        page.wait_for_function("window.bdpd.view.status === 'running' && window.bdpd.conn === 'live'", timeout=120_000)
        page.click("#tickBtn")
        page.wait_for_function("window.bdpd.drawnTurns === 4", timeout=120_000)
        assert page.evaluate("window.bdpd.reconnects") >= 1
        ctx.close()
