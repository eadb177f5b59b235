// The arena page's drawing: charts (each with axis titles and a hover readout), the players
// table (kind, errors, fallbacks), the tables and the report. Everything from S (arena.js).
"use strict";

function series(field) {
  const names = [...new Set(S.ticks.flatMap(t => t.decisions.map(d => d.playerId)))];
  return names.map(n => ({ name: n, points: S.ticks.map(t => {
    const d = t.decisions.find(x => x.playerId === n); return [t.turn, d ? d[field] : null]; }) }));
}

// why a metric has no value at the last turn (kernels/metrics.py: NaN where its input is undefined)
function metricGap(name) {
  const last = S.ticks[S.ticks.length - 1] || {};
  if (name === "cooperation_index" || name === "silent_defection") {
    if ((S.view || {}).noShareNote) return S.view.noShareNote;  // the engine's own (Engine.no_share_note)
    return last.collapsed ? "no share: collapse turn" : "no share";
  }
  if (name === "lie_score") return "no announcements";
  if (name === "sanction_rate") return "no players";
  return "no value";
}

const readable = id => String(id).replace(/_/g, " ");  // an identifier as words (cooperation_index -> cooperation index)

// the stock and wealth charts' event lines: perturbations, sanctions (one per turn) and the collapse
function eventMarkers() {
  const out = S.perturbations.map(p => ({ x: p.turn, kind: "perturbation", label: `${p.type} ${p.target ?? ""}` }));
  const fined = [...new Set(S.sanctions.map(x => x.turn))];
  out.push(...fined.map(t => ({ x: t, kind: "sanction",
    label: S.sanctions.filter(x => x.turn === t).map(x => `${x.playerId} ${fmt(x.amount)}`).join(", ") })));
  const fall = S.ticks.find(t => t.collapsed);
  if (fall) out.push({ x: fall.turn, kind: "collapse", label: "the commons collapsed" });
  S.markers = out;
  return out;
}

// a pact's terms as words: "harvest_cap: maxHarvest 2" (any term type, its fields as sent)
function termsText(t) {
  if (!t || typeof t !== "object") return String(t ?? "");
  const rest = Object.entries(t).filter(([k]) => k !== "type")
    .map(([k, v]) => `${k} ${typeof v === "number" ? fmt(v) : typeof v === "object" ? JSON.stringify(v) : v}`);
  return `${t.type || "terms"}${rest.length ? ": " + rest.join(", ") : ""}`;
}

function draw() {
  const all = S.ticks;
  if (S.replay) S.ticks = all.slice(0, S.replay.upto);  // a replay draws the first turns only
  try { drawAll(); } finally { S.ticks = all; }
  S.drawnTurns = S.replay ? S.replay.upto : S.ticks.length;
  if (S.replay) {
    const t = S.replay.upto ? all[S.replay.upto - 1].turn : 0;
    $("turn").textContent = t; $("replayPos").value = S.replay.upto;
    $("replayAt").textContent = `replay: turn ${t} of ${all.length ? all[all.length - 1].turn : 0}`;
  }
}

function drawAll() {
  // the stock as the engine names it (Engine.stock_label): the page names no engine
  const label = (S.view && S.view.stockLabel) || "stock";
  $("stockTitle").textContent = label === "stock" ? "Commons stock" : `Commons stock: ${label} (${S.view.engineMode})`;
  const stock = [{ name: "stock", points: S.ticks.map(t => [t.turn, t.stock]) }];
  if (typeof forkPanel === "function") forkPanel();
  if (S.fork) stock.push(fanSeries(S.fork));  // a "what if" fork's fan beside the live series (arena_fork.js)
  const names = S.ticks.length ? Object.keys(S.ticks[S.ticks.length - 1].metrics || {}) : [];
  const metrics = names.map(m => ({ name: m, label: readable(m), points: S.ticks.map(t => [t.turn, (t.metrics || {})[m] ?? null]) }));
  S.charts = { stock, metrics, requested: series("requested"), actual: series("actual"), wealth: series("wealth") };
  const yTitle = { stock: label, metrics: "share / score", requested: "requested",
    actual: "harvest", wealth: "wealth" };
  const markers = eventMarkers();
  for (const k in S.charts) {
    lineChart($("chart-" + k), S.charts[k], { x: "turn", y: yTitle[k], gap: k === "metrics" ? s => metricGap(s.name) : null,
      markers: k === "stock" || k === "wealth" ? markers : [] });
  }
  // the engine's recorded variables (Engine.recorded, whatever the engine): one axis each
  const evars = [...new Set(S.ticks.flatMap(t => Object.keys(t.engine || {})))];
  const box = $("chart-engine");
  $("engineCard").hidden = !evars.length;
  box.querySelectorAll(":scope > div").forEach(d => { if (!evars.includes(d.dataset.var)) d.remove(); });
  for (const v of evars) {
    let sub = box.querySelector(`:scope > div[data-var="${CSS.escape(v)}"]`);
    if (!sub) { sub = document.createElement("div"); sub.dataset.var = v; box.appendChild(sub); }
    const s = [{ name: v, points: S.ticks.map(t => [t.turn, (t.engine || {})[v] ?? null]) }];
    S.charts["engine." + v] = s;
    lineChart(sub, s, { x: "turn", y: v, height: 150 });
  }
  drawPlayers();
  drawTables();
}

function drawPlayers() {
  const last = S.ticks[S.ticks.length - 1];
  const known = Object.fromEntries((S.players || []).map(p => [p.playerId, p]));
  // a kind's label comes from the server (PlayerKind.label); the page never compares kind names
  const kinds = Object.fromEntries(((S.view && S.view.players) || []).map(p => [p.playerId, p.kindLabel || p.agentType]));
  const ids = last ? last.decisions.map(d => d.playerId) : ((S.view && S.view.players) || []).map(p => p.playerId);
  const rows = ids.map(id => {
    const d = last ? last.decisions.find(x => x.playerId === id) || {} : {};
    const mine = S.ticks.map(t => t.decisions.find(x => x.playerId === id)).filter(Boolean);
    const errs = mine.filter(x => x.error), lastErr = errs.length ? String(errs[errs.length - 1].error).split("\n")[0] : "";
    const p = known[id] || {}, kind = p.kindLabel || kinds[id] || p.agentType || "";
    return { id, kind: p.strategy ? `${kind}: ${p.strategy}` : kind, d,
      errTurn: d.error ? 1 : 0, errTotal: errs.length, fbTurn: d.fallback ? 1 : 0,
      fbTotal: mine.filter(x => x.fallback).length, lastErr };
  });
  S.playerRows = rows;
  $("players").tBodies[0].innerHTML = rows.map(r => `<tr class="${r.fbTurn ? "fellback" : ""}" data-player="${esc(r.id)}">
    <td>${esc(r.id)}${r.fbTurn ? ' <span class="mark" title="fell back this turn: its harvest is the fallback (0.2 × capacity)">⚠ fallback</span>' : ""}</td>
    <td>${esc(r.kind)}</td><td class="num">${fmt(r.d.requested)}</td><td class="num">${fmt(r.d.actual)}</td>
    <td class="num">${fmt(r.d.wealth)}</td><td class="num">${r.errTurn} / ${r.errTotal}</td>
    <td class="num">${r.fbTurn} / ${r.fbTotal}</td><td class="errtext">${esc(r.lastErr)}</td></tr>`).join("");
}

function beforeAfter(p, k) {  // the stock before a firing: the last value known before it
  if (p.target !== "stock") return `→ ${fmt(p.value)}`;
  const prev = S.perturbations.slice(0, k).reverse().find(q => q.target === "stock" && q.turn === p.turn && q.owner === p.owner);
  const tick = S.ticks.filter(t => t.turn < p.turn).pop();
  const before = p.owner ? (prev ? prev.value : tick ? tick.stock : null) : null;
  return before === null ? `→ ${fmt(p.value)}` : `${fmt(before)} → ${fmt(p.value)}`;
}

function drawTables() {
  $("pacts").tBodies[0].innerHTML = S.pacts.map(p => `<tr><td title="${esc(p.id)}">${esc(String(p.id).slice(0, 8))}</td>
    <td>${esc((p.parties || []).join(", "))}</td><td>${esc(termsText(p.terms))}</td><td>${esc(p.status)}</td>
    <td class="num">${esc(p.violationCount)}</td></tr>`).join("");
  const scope = $("scope").value;
  $("messages").tBodies[0].innerHTML = S.messages.filter(m => !scope || m.scope === scope).slice(-300).reverse()
    .map(m => `<tr><td class="num">${esc(m.turn)}</td><td>${esc(m.scope)}</td><td>${esc(m.fromId)}</td><td>${esc(m.to || "all")}</td>
    <td>${m.scope === "announcement" ? fmt(m.value) : m.textHidden ? "<i>(private: text hidden)</i>" : esc(m.text)}</td></tr>`).join("");
  $("perturbations").tBodies[0].innerHTML = S.perturbations.map((p, k) => `<tr><td class="num">${esc(p.turn)}</td>
    <td>${esc(p.type)}${p.spec && p.spec.id ? ` <span class="muted">${esc(p.spec.id)}</span>` : p.id ? ` <span class="muted">${esc(p.id)}</span>` : ""}</td>
    <td>${esc(p.target)}</td><td class="num">${beforeAfter(p, k)}</td><td>${p.owner ? "owner" : "trigger"}</td></tr>`).join("");
  // chat order: the oldest month first, each month's speakers in the order they spoke
  $("discussion").tBodies[0].innerHTML = S.discussion.slice(-300).map(u => `<tr><td class="num">${esc(u.turn)}</td>
    <td>${esc(u.speaker)}</td><td>${u.text === null ? "<i>(no answer)</i>" : esc(u.text)}</td>
    <td>${esc(u.nextSpeaker)}${u.named ? "" : " (rr)"}</td></tr>`).join("");
  $("sanctions").tBodies[0].innerHTML = S.sanctions.map(s => `<tr><td class="num">${esc(s.turn)}</td><td>${esc(s.playerId)}</td>
    <td class="num">${fmt(s.amount)}</td><td>${esc(s.paidBy ?? "automatic")}</td><td class="num">${fmt(s.cost)}</td>
    <td>${esc(s.reason ?? (s.specId ? `rule ${s.specId}` : ""))}</td><td title="${esc(s.pactId ?? "")}">${esc(String(s.pactId ?? "").slice(0, 8))}</td><td>${esc(s.termType ?? "")}</td>
    <td class="num">${esc(s.ordinal ?? "")}</td></tr>`).join("");
  if (S.summary && S.summary.victory) {
    const v = S.summary.victory, per = Object.fromEntries((S.summary.players || []).map(p => [p.playerId, p]));
    $("summaryCard").hidden = false;
    $("outcome").textContent = `outcome: ${v.outcome}` + (v.collapseTurn ? ` at turn ${v.collapseTurn}` : "") +
      ` · winners: ${v.winners.length ? v.winners.join(", ") : "none"}` + tokens(S.summary);
    $("rankings").tBodies[0].innerHTML = v.rankings.map(r => `<tr><td class="num">${r.rank}</td><td>${esc(r.playerId)}</td>
      <td class="num">${fmt(r.gain)}</td><td class="num">${fmt(r.wealth)}</td><td>${r.compliant ? "yes" : "no"}</td>
      <td class="num">${esc((per[r.playerId] || {}).errors ?? "")}</td><td class="num">${esc((per[r.playerId] || {}).fallbacks ?? "")}</td>
      <td>${v.winners.includes(r.playerId) ? "★" : ""}</td></tr>`).join("");
    // the engine's metric family of the report (GovSim's six), as the server reports it
    const fam = Object.entries(S.summary.govsim || {});
    $("familyReport").hidden = !fam.length;
    $("familyReport").tBodies[0].innerHTML = fam.map(([k, x]) => `<tr><th scope="row" title="${esc(k)}">${esc(readable(k))}</th>
      <td class="num">${typeof x === "boolean" ? (x ? "yes" : "no") : esc(fmt(x))}</td></tr>`).join("");
  }
}

function tokens(summ) {  // the LLM players' tokens and the budget stop of the report (issue 38), or nothing
  const u = summ.usage;
  if (!u) return "";
  return ` · LLM tokens: ${u.promptTokens} prompt + ${u.completionTokens} completion` +
    (summ.stopped ? ` · stopped: ${summ.stopped}` : "");
}
