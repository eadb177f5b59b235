// The arena page: controls (owner), join forms (arena key), live charts and tables from the
// SSE stream. Keys come from this browser's storage (set by the page that created the arena).
"use strict";
const $ = id => document.getElementById(id);
const ARENA = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
const KEYS = loadKeys(ARENA) || {};
const OWNER = KEYS.ownerKey ? { "X-Owner-Key": KEYS.ownerKey } : null;
// everything drawn comes from here; window.bdpd exposes it (the browser test reads it)
const S = window.bdpd = { arenaId: ARENA, view: null, ticks: [], messages: [], pacts: [], perturbations: [],
  sanctions: [], discussion: [], summary: null, charts: {}, drawnTurns: 0 };

function compact(rec) {  // a full tick record -> the compact form of the init history
  return { turn: rec.turn, stock: rec.stock, collapsed: rec.collapsed, engine: rec.engine || {},
    metrics: rec.metrics || {}, violations: (rec.violations || []).length, messages: (rec.messages || []).length,
    decisions: rec.decisions.map(d => ({ playerId: d.playerId, requested: d.requested, actual: d.actual,
      wealth: d.wealth, announced: d.announced, sanction: d.sanction })) };
}

function showError(e) { $("err").textContent = e ? String(e.message || e) : ""; }

function setView(v) {
  S.view = Object.assign(S.view || {}, v);
  const st = S.view.status || "?";
  $("status").textContent = st; $("status").className = "pill " + st;
  $("turn").textContent = S.view.turn ?? 0; $("maxTurns").textContent = S.view.maxTurns ?? "?";
  $("title").textContent = `${S.view.name || ""} · ${S.view.engineMode || ""} · ${ARENA}`;
  const players = S.view.players || [];
  $("playersLine").textContent = `(${players.length} joined: ${players.map(p => p.playerId).join(", ")})`;
  $("startBtn").disabled = !OWNER || st !== "waiting";
  $("tickBtn").disabled = !OWNER || st !== "running";
  $("closeBtn").disabled = !OWNER || st !== "running";
  $("joinCard").hidden = st !== "waiting" || !KEYS.arenaKey;
  $("replayBtn").hidden = st !== "closed";
}

function series(field) {
  const names = [...new Set(S.ticks.flatMap(t => t.decisions.map(d => d.playerId)))];
  return names.map(n => ({ name: n, points: S.ticks.map(t => {
    const d = t.decisions.find(x => x.playerId === n); return [t.turn, d ? d[field] : null]; }) }));
}

function draw() {
  const all = S.ticks;
  if (S.upto !== undefined) S.ticks = all.slice(0, S.upto);  // a replay draws the first turns only
  try { drawAll(); } finally { S.ticks = all; }
  S.drawnTurns = S.upto !== undefined ? S.upto : S.ticks.length;
}

function drawAll() {
  const seneca = S.view && S.view.engineMode === "seneca";
  const stock = [{ name: "stock", points: S.ticks.map(t => [t.turn, t.stock]) }];
  if (seneca) {
    stock.push({ name: "capital", points: S.ticks.map(t => [t.turn, (t.engine || {}).capital ?? null]) });
    stock.push({ name: "pollution", points: S.ticks.map(t => [t.turn, (t.engine || {}).pollution ?? null]) });
    $("stockTitle").textContent = "Resource, capital and pollution (Seneca)";
  }
  const names = S.ticks.length ? Object.keys(S.ticks[S.ticks.length - 1].metrics || {}) : [];
  const metrics = names.map(m => ({ name: m, points: S.ticks.map(t => [t.turn, (t.metrics || {})[m] ?? null]) }));
  S.charts = { stock, metrics, requested: series("requested"), actual: series("actual"), wealth: series("wealth") };
  for (const k in S.charts) lineChart($("chart-" + k), S.charts[k]);
  const last = S.ticks[S.ticks.length - 1];
  const kinds = Object.fromEntries(((S.view && S.view.players) || []).map(p => [p.playerId, p.agentType]));
  $("players").tBodies[0].innerHTML = last ? last.decisions.map(d => `<tr><td>${esc(d.playerId)}</td>
    <td>${esc(kinds[d.playerId] || "")}</td><td class="num">${fmt(d.requested)}</td><td class="num">${fmt(d.actual)}</td>
    <td class="num">${fmt(d.wealth)}</td></tr>`).join("") : "";
  drawTables();
}

function drawTables() {
  $("pacts").tBodies[0].innerHTML = S.pacts.map(p => `<tr><td title="${esc(p.id)}">${esc(p.id.slice(0, 8))}</td>
    <td>${esc(p.parties.join(", "))}</td><td>${esc(JSON.stringify(p.terms))}</td><td>${esc(p.status)}</td>
    <td class="num">${p.violationCount}</td></tr>`).join("");
  const scope = $("scope").value;
  $("messages").tBodies[0].innerHTML = S.messages.filter(m => !scope || m.scope === scope).slice(-300).reverse()
    .map(m => `<tr><td class="num">${m.turn}</td><td>${esc(m.scope)}</td><td>${esc(m.fromId)}</td><td>${esc(m.to || "all")}</td>
    <td>${m.scope === "announcement" ? fmt(m.value) : esc(m.text)}</td></tr>`).join("");
  $("perturbations").tBodies[0].innerHTML = S.perturbations.map(p => `<tr><td class="num">${p.turn}</td><td>${esc(p.type)}</td>
    <td>${esc(p.target)}</td><td class="num">${fmt(p.value)}</td><td>${p.owner ? "owner" : "trigger"}</td></tr>`).join("");
  $("discussion").tBodies[0].innerHTML = S.discussion.slice(-300).reverse().map(u => `<tr><td class="num">${u.turn}</td>
    <td>${esc(u.speaker)}</td><td>${u.text === null ? "<i>(no answer)</i>" : esc(u.text)}</td>
    <td>${esc(u.nextSpeaker)}${u.named ? "" : " (rr)"}</td></tr>`).join("");
  $("sanctions").tBodies[0].innerHTML = S.sanctions.map(s => `<tr><td class="num">${s.turn}</td><td>${esc(s.playerId)}</td>
    <td class="num">${fmt(s.amount)}</td></tr>`).join("");
  if (S.summary && S.summary.victory) {
    const v = S.summary.victory;
    $("summaryCard").hidden = false;
    $("outcome").textContent = `outcome: ${v.outcome}` + (v.collapseTurn ? ` at turn ${v.collapseTurn}` : "") +
      ` · winners: ${v.winners.length ? v.winners.join(", ") : "none"}`;
    $("rankings").tBodies[0].innerHTML = v.rankings.map(r => `<tr><td class="num">${r.rank}</td><td>${esc(r.playerId)}</td>
      <td class="num">${fmt(r.gain)}</td><td class="num">${fmt(r.wealth)}</td><td>${r.compliant ? "yes" : "no"}</td>
      <td>${v.winners.includes(r.playerId) ? "★" : ""}</td></tr>`).join("");
  }
}

function addTick(rec, full) {
  if (S.ticks.length && S.ticks[S.ticks.length - 1].turn >= rec.turn) return;
  S.ticks.push(full ? compact(rec) : rec);
  if (full) {
    S.messages.push(...(rec.messages || []));
    S.discussion.push(...((rec.discussion || {}).utterances || []));  // live ticks only (the init history is compact)
    S.pacts = rec.pacts || S.pacts;
    for (const p of rec.perturbations || []) S.perturbations.push({ turn: rec.turn, ...p, owner: false });
    for (const p of rec.ownerPerturbations || []) S.perturbations.push({ ...p, owner: true });
  }
  for (const d of (full ? compact(rec) : rec).decisions) if (d.sanction > 0) S.sanctions.push({ turn: rec.turn, playerId: d.playerId, amount: d.sanction });
}

async function loadTables() {
  if (!OWNER) return;
  try {
    const o = await api("GET", `/api/arenas/${ARENA}/owner`, undefined, OWNER);
    S.messages = o.messages || []; S.pacts = o.pacts || [];
    S.perturbations = (await api("GET", `/api/arenas/${ARENA}/perturbations`, undefined, OWNER)).log;
  } catch (e) { /* waiting arenas have no tables yet */ }
}

let scheduled = false;
function redraw() { if (!scheduled) { scheduled = true; requestAnimationFrame(() => { scheduled = false; draw(); }); } }

async function follow() {
  const headers = OWNER || (KEYS.spectatorToken ? { "X-Spectator-Token": KEYS.spectatorToken } : {});
  if (!OWNER && !KEYS.spectatorToken) {  // a visitor: live games show their frame only
    const v = await api("GET", `/api/arenas/${ARENA}`);
    setView(v);
    if (v.status !== "closed") {
      $("role").textContent = "(public: the state is shown to the owner and spectators only)";
      setTimeout(() => follow().catch(showError), 3000);
      return;
    }
  }
  $("role").textContent = OWNER ? "(owner)" : (KEYS.spectatorToken ? "(spectator)" : "(public)");
  await streamEvents(`/api/arenas/${ARENA}/stream`, headers, (ev, data) => {
    if (ev === "init") {
      setView(data); S.ticks = []; S.sanctions = [];
      for (const t of data.history || []) addTick(t, false);
      loadTables().then(redraw);
    } else if (ev === "tick") { addTick(data, true); setView({ turn: data.turn }); }
    else if (ev === "player_joined" || ev === "arena_started") setView(data);
    else if (ev === "perturbation") S.perturbations.push({ ...data, owner: true });
    else if (ev === "arena_closed") { S.summary = data; setView({ status: "closed" }); }
    redraw();
  });
  if (S.view && S.view.status !== "closed") setView(await api("GET", `/api/arenas/${ARENA}`));
  redraw();
}

async function ownerPost(path, body) {
  showError(null);
  try { return await api("POST", `/api/arenas/${ARENA}${path}`, body, OWNER); } catch (e) { showError(e); }
}
$("startBtn").onclick = async () => {
  const v = await ownerPost("/start", { tickMode: $("tickMode").value, tickIntervalMs: Number($("interval").value) });
  if (v) setView(v);
};
$("tickBtn").onclick = async () => { const v = await ownerPost("/tick"); if (v) setView(v); };
$("closeBtn").onclick = async () => { const s = await ownerPost("/close"); if (s) { S.summary = s; setView({ status: "closed" }); redraw(); } };
$("scope").onchange = drawTables;
$("replayBtn").onclick = () => {  // a closed arena, turn by turn from its history
  const n = S.ticks.length, step = Math.max(1, Math.ceil(n / 150));
  S.upto = 0;
  const timer = setInterval(() => {
    S.upto = Math.min(n, S.upto + step); draw();
    if (S.upto >= n) { clearInterval(timer); S.upto = undefined; draw(); }
  }, 30);
};

document.querySelectorAll("[data-tab]").forEach(b => b.onclick = () => {
  document.querySelectorAll("form[data-kind]").forEach(f => { f.hidden = f.dataset.kind !== b.dataset.tab; });
});
document.querySelectorAll("form[data-kind]").forEach(f => f.onsubmit = async ev => {
  ev.preventDefault(); showError(null);
  const body = { agentType: f.dataset.kind };
  for (const el of f.elements) {
    if (!el.name || el.value === "") continue;
    body[el.name] = el.type === "number" ? Number(el.value) : el.value;
  }
  try {
    const r = await api("POST", `/api/arenas/${ARENA}/join`, body, { "X-Arena-Key": KEYS.arenaKey });
    setView({ players: r.players.map(p => ({ playerId: p, agentType: p === r.playerId ? body.agentType
      : ((S.view.players || []).find(x => x.playerId === p) || {}).agentType })) });
  } catch (e) { showError(e); }
});
fetch("/static/example_agent.js").then(r => r.text()).then(t => { document.querySelector("#join-code textarea").value = t; });

api("GET", `/api/arenas/${ARENA}`).then(setView).catch(showError);
follow().catch(showError);
