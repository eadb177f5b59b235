// The comparison page (issue 41): closed arenas' stock and mean wealth on shared axes, one
// line each, with their outcomes. The arenas are named by ?ids=a,b (at most MAX_COMPARE);
// their series come from GET /api/arenas/history/{id}/series (public once closed).
"use strict";
const $ = id => document.getElementById(id);
const MAX_COMPARE = 8;
const C = window.bdpdCompare = { arenas: [] };

function label(a) { return `${a.name || "(unnamed)"} · ${a.arenaId}`; }

async function compare() {
  const ids = (new URLSearchParams(location.search).get("ids") || "").split(",")
    .filter(id => /^[A-Za-z0-9_-]{1,64}$/.test(id)).slice(0, MAX_COMPARE);
  if (!ids.length) { $("err").textContent = "ids: name closed arenas to compare (?ids=a,b)"; return; }
  const got = await Promise.all(ids.map(id => api("GET", `/api/arenas/history/${encodeURIComponent(id)}/series`)
    .catch(e => { $("err").textContent = `${id}: ${e.message}`; return null; })));
  C.arenas = got.filter(Boolean);
  const none = v => v === null || v === undefined;
  $("outcomes").tBodies[0].innerHTML = C.arenas.map(a => {
    const o = a.outcome || {};
    return `<tr><td><a href="/arenas/${encodeURIComponent(a.arenaId)}">${esc(label(a))}</a></td><td>${esc(a.engineMode)}</td>
      <td>${none(o.survived) ? "" : o.survived ? "yes" : "no"}</td>
      <td class="num">${none(o.collapseTurn) ? esc(o.endTurn ?? "") : esc(o.collapseTurn) + " (collapse)"}</td>
      <td class="num">${esc(fmt(o.finalStock))}</td><td class="num">${esc(fmt(o.gini))}</td></tr>`;
  }).join("");
  const mean = xs => { const v = xs.filter(x => !none(x)); return v.length ? v.reduce((s, x) => s + x, 0) / v.length : null; };
  C.charts = {
    stock: C.arenas.map(a => ({ name: label(a), points: a.turn.map((t, i) => [t, a.stock[i]]) })),
    wealth: C.arenas.map(a => ({ name: label(a),
      points: a.turn.map((t, i) => [t, mean(Object.values(a.wealth).map(w => w[i]))]) })),
  };
  lineChart($("chart-stock"), C.charts.stock, { x: "turn", y: "stock" });
  lineChart($("chart-wealth"), C.charts.wealth, { x: "turn", y: "mean wealth" });
}
compare();
