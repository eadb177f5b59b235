// The arena page's state and its live stream: the view, the ticks and the tables, kept in S
// (window.bdpd, which the browser tests read). Drawing: arena_draw.js; actions: arena_owner.js.
// Keys come from this browser's storage (the creating page, or "Use a key"), never a URL.
"use strict";
const $ = id => document.getElementById(id);
const ARENA = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
const KEYS = loadKeys(ARENA) || {};
const OWNER = KEYS.ownerKey ? { "X-Owner-Key": KEYS.ownerKey } : null;
const VIEWER = OWNER || (KEYS.spectatorToken ? { "X-Spectator-Token": KEYS.spectatorToken } : null);
const S = window.bdpd = { arenaId: ARENA, view: null, ticks: [], messages: [], pacts: [], perturbations: [],
  sanctions: [], discussion: [], players: [], summary: null, charts: {}, drawnTurns: 0, tickMode: "manual", tickIntervalMs: null,
  conn: "connecting", busy: 0, replay: null, reconnects: 0 };
const COMPACT_DECISION = ["playerId", "requested", "actual", "wealth", "announced", "sanction", "fallback", "error"];

function compact(rec) {  // a full tick record -> the compact form of the init history (views.compact_tick)
  return { turn: rec.turn, stock: rec.stock, collapsed: rec.collapsed, engine: rec.engine || {},
    metrics: rec.metrics || {}, violations: (rec.violations || []).length, messages: (rec.messages || []).length,
    decisions: rec.decisions.map(d => Object.fromEntries(COMPACT_DECISION.map(k => [k, d[k] ?? null]))) };
}

function showError(e) { $("err").textContent = e ? String(e.message || e) : ""; }

// what to do next, by status and connection
function notice() {
  const st = (S.view || {}).status, el = $("notice");
  let text = "";
  if (S.starting) text = "Starting: compiling the first run of this shape (a few seconds the first time; "
    + "later arenas of the same shape start at once).";
  else if (S.conn === "lost") text = "Connection to the server lost: reconnecting… (the page catches up by itself)";
  else if (st === "interrupted") text = OWNER ? "Interrupted: the server restarted while this arena ran. Resume it to "
    + "go on from its last saved turn, or delete it." : "Interrupted: the server restarted while this arena ran; "
    + "its owner can resume it.";
  else if (st === "closed") text = "Closed: the game is over. The report is below; Replay redraws it turn by turn.";
  else if (st === "waiting") text = OWNER ? "Waiting: invite or join players, then Start." : "Waiting for the owner to start.";
  else if (st === "running" && S.tickMode === "auto") text = `Running: auto ticks every ${fmt(S.tickIntervalMs ?? 0)} ms.`;
  else if (st === "running") text = OWNER ? "Running: manual ticks (Tick plays one turn)." : "Running.";
  el.textContent = text; el.hidden = !text;
  el.className = "notice " + (S.conn === "lost" || st === "interrupted" ? "warn" : "");
  $("conn").textContent = S.conn === "live" ? "live" : S.conn === "lost" ? "reconnecting…" : S.conn;
}

function setView(v) {
  S.view = Object.assign(S.view || {}, v);
  const st = S.view.status || "?";
  $("status").textContent = st; $("status").className = "pill " + st;
  if (!S.replay) $("turn").textContent = S.view.turn ?? 0;
  $("maxTurns").textContent = S.view.maxTurns ?? "?";
  $("title").textContent = `${S.view.name || ""} · ${S.view.engineMode || ""} · ${ARENA}`;
  const players = S.view.players || [];
  $("playersLine").textContent = `(${players.length} joined: ${players.map(p => p.playerId).join(", ")})`;
  controls();
  notice();
}

function addTick(rec, full) {
  if (S.ticks.length && S.ticks[S.ticks.length - 1].turn >= rec.turn) return;
  S.ticks.push(full ? compact(rec) : rec);
  if (!full) return;
  S.messages.push(...(rec.messages || []));
  S.pacts = rec.pacts || S.pacts;
  for (const p of rec.perturbations || []) S.perturbations.push({ turn: rec.turn, ...p, owner: false });
  // the owner's firings came as `perturbation` events already: the record's copy replaces them
  S.perturbations = S.perturbations.filter(p => !(p.owner && p.turn === rec.turn));
  for (const p of rec.ownerPerturbations || []) S.perturbations.push({ ...p, owner: true });
  S.sanctions.push(...(rec.sanctions || []));
  S.discussion.push(...((rec.discussion || {}).utterances || []));  // live ticks only (the init history is compact)
}

async function loadTables() {
  if (!VIEWER) return;
  try {
    const t = await api("GET", `/api/arenas/${encodeURIComponent(ARENA)}/dashboard`, undefined, VIEWER);
    const known = S.ticks.length ? S.ticks[S.ticks.length - 1].turn : 0;  // rows of ticks not drawn yet wait
    S.messages = t.messages.filter(m => (m.turn ?? 0) <= known); S.pacts = t.pacts;
    S.perturbations = t.perturbations.filter(p => p.turn <= known + 1);
    S.sanctions = t.sanctions.filter(s => s.turn <= known);
    S.players = t.players; S.tickMode = t.tickMode; S.tickIntervalMs = t.tickIntervalMs;
    S.privateText = t.spectatorPrivateText; if (typeof invitePanel === "function") invitePanel();
    setView({});
  } catch (e) { showError(e); }
}

let scheduled = false;
function redraw() { if (!scheduled) { scheduled = true; requestAnimationFrame(() => { scheduled = false; draw(); }); } }

function onEvent(ev, data) {
  if (ev === "init") {
    S.conn = "live";
    setView(data); S.ticks = []; S.messages = []; S.sanctions = []; S.perturbations = []; S.discussion = [];
    for (const t of data.history || []) addTick(t, false);
    loadTables().then(redraw);
  } else if (ev === "tick") { addTick(data, true); setView({ turn: data.turn }); }
  else if (ev === "player_joined" || ev === "arena_started") { setView(data); if (ev === "arena_started") loadTables(); }
  else if (ev === "perturbation") addOwnerFiring(S.perturbations, data, "event");
  else if (ev === "arena_closed") { S.summary = data; S.tickMode = "manual"; setView({ status: "closed" }); }
  else if (ev === "arena_interrupted") { S.tickMode = "manual"; setView({ status: "interrupted", turn: data.turn }); }
  else if (ev === "error") { S.tickMode = "manual"; showError(data.detail); setView({}); }
  else if (ev === "dropped") showError("the stream dropped this page (too slow); reconnecting");
  redraw();
}

// the stream, reconnected with backoff until the arena is closed or interrupted
let following = false;
async function follow() {
  if (following) return;
  following = true;
  let delay = 1000;
  try {
    for (;;) {
      if (!VIEWER) {  // a visitor: a live game shows its frame only; a closed one its history
        const v = await api("GET", `/api/arenas/${encodeURIComponent(ARENA)}`);
        setView(v);
        $("role").textContent = v.status === "closed" ? "(public)" : "(public: the state is shown to the owner and spectators only)";
        if (v.status !== "closed") { if (v.status === "interrupted") return; await sleep(3000); continue; }
      } else $("role").textContent = OWNER ? "(owner)" : "(spectator)";
      try {
        await streamEvents(`/api/arenas/${encodeURIComponent(ARENA)}/stream`, VIEWER || {}, onEvent);
        delay = 1000;
      } catch (e) {
        if (e.status === 404) { showError("this arena no longer exists"); S.conn = "gone"; notice(); return; }
        if (e.status === 403) { showError(e); return; }
        S.conn = "lost"; S.reconnects += 1; notice();
        await sleep(delay); delay = Math.min(delay * 2, 15000);
        continue;
      }
      const st = (S.view || {}).status;
      if (st === "closed" || st === "interrupted") { S.conn = "ended"; notice(); return; }
      S.conn = "lost"; notice();  // the stream ended while the game runs: a restart, or this page was dropped
      await sleep(delay); delay = Math.min(delay * 2, 15000);
    }
  } finally { following = false; }
}
