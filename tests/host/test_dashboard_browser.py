"""The dashboard in a real browser (Debian's chromium, driven by Playwright; no browser
download): create an arena through the page, join 4 players (one the seed's §A.4 JS agent),
start auto, wait for ticks drawn, check the charts' data against the API's history."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest
from server_helpers import read_stream, serve

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


def test_dashboard_end_to_end(tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("no chromium found (apt-get install chromium); the browser test needs the system browser")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (test extra)")
    shot_dir = Path(os.environ.get("BDPD_SCREENSHOT_DIR", tmp_path))
    with serve(tmp_path / "arenas") as base, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base + "/")
        page.select_option("#example", "logistic")
        page.fill("#seed", "11")
        page.click("#createBtn")
        page.wait_for_url(f"{base}/arenas/**")
        aid = page.url.rsplit("/", 1)[-1]
        for strategy in ("conservative", "aggressive", "adaptive"):
            page.click("[data-tab=builtin]")
            page.select_option("#join-builtin select[name=strategy]", strategy)
            page.click("#join-builtin button[type=submit]")
            joined = strategy == 'conservative' and 1 or strategy == 'aggressive' and 2 or 3
            page.wait_for_function(
                f"document.getElementById('playersLine').textContent.includes('{joined} joined')")
        page.click("[data-tab=code]")
        page.wait_for_function("document.querySelector('#join-code textarea').value.includes('memory.stockHistory')")
        page.click("#join-code button[type=submit]")
        page.wait_for_function("document.getElementById('playersLine').textContent.includes('TrendConservative')")
        page.select_option("#tickMode", "auto")
        page.fill("#interval", "20")
        page.click("#startBtn")
        page.wait_for_function("window.bdpd.drawnTurns >= 5", timeout=120_000)
        page.click("#closeBtn")  # or the game's end, whichever comes first
        page.wait_for_function("window.bdpd.view.status === 'closed' && window.bdpd.summary !== null", timeout=120_000)
        page.wait_for_function("window.bdpd.drawnTurns === window.bdpd.ticks.length")
        charts = page.evaluate("window.bdpd.charts")
        page.screenshot(path=str(shot_dir / "dashboard.png"), full_page=True)
        assert not errors, errors
        assert all(u.startswith(base) for u in requests), [u for u in requests if not u.startswith(base)]
        assert not any(k in u for u in requests + [page.url] for k in ("owner_", "arena_", "spec_"))
        browser.close()
        with httpx.Client(base_url=base, timeout=30, trust_env=False) as client:
            (_, init), (_, closed) = read_stream(client, f"/api/arenas/{aid}/stream")
    hist = init["history"]
    assert len(hist) == closed["turnsPlayed"] >= 5
    assert charts["stock"][0]["points"] == [[t["turn"], t["stock"]] for t in hist]
    players = [d["playerId"] for d in hist[0]["decisions"]]
    assert players == ["p0", "p1", "p2", "TrendConservative"]
    for field in ("requested", "actual", "wealth"):
        assert [s["name"] for s in charts[field]] == players
        for s in charts[field]:
            want = [[t["turn"], next(d[field] for d in t["decisions"] if d["playerId"] == s["name"])] for t in hist]
            assert s["points"] == want, (field, s["name"])
    metric_names = list(hist[-1]["metrics"])
    assert [s["name"] for s in charts["metrics"]] == metric_names and len(metric_names) == 5
    for s in charts["metrics"]:
        assert s["points"] == [[t["turn"], t["metrics"][s["name"]]] for t in hist]
