// The arena page's actions: owner controls (start, tick, mode, close, perturb, resume, delete),
// the invite panel, "Use a key", the join forms and replay; then the page starts following.
"use strict";
const BASE = location.origin;

function controls() {
  const st = (S.view || {}).status, auto = S.tickMode === "auto", busy = S.busy > 0;
  const set = (id, show, enabled) => { const b = $(id); b.hidden = !show; if (!b.classList.contains("busy")) b.disabled = !enabled || busy; };
  set("startBtn", !!OWNER && st === "waiting", true);
  set("tickBtn", !!OWNER && st === "running", !auto);
  set("closeBtn", !!OWNER && st === "running", true);
  set("modeBtn", !!OWNER && st === "running", true);
  set("resumeBtn", !!OWNER && st === "interrupted", true);
  set("deleteBtn", !!OWNER && st !== undefined, true);
  $("tickBtn").title = auto ? "auto ticks are running: switch to manual to tick by hand" : "";
  for (const id of ["tickMode", "interval"]) {
    $(id).disabled = !OWNER || !["waiting", "running", "interrupted"].includes(st);
    $(id).closest("label").hidden = !OWNER || !["waiting", "running", "interrupted"].includes(st);
  }
  $("replayBtn").hidden = st !== "closed" || !S.ticks.length || !!S.replay;
  $("keysCard").hidden = !OWNER;
  if (st && st !== "waiting" && !S.keysFolded) { S.keysFolded = true; $("keysCard").open = false; }  // folded once running
  $("joinCard").hidden = st !== "waiting" || !KEYS.arenaKey;
  $("perturbCard").hidden = !OWNER || st !== "running";
  $("resumeCard").hidden = !OWNER || st !== "interrupted";
}

// an owner request with its button busy; the view follows the answer
async function ownerDo(button, method, path, body) {
  showError(null);
  S.busy += 1; controls();
  try {
    return await withBusy(button, () => api(method, `/api/arenas/${encodeURIComponent(ARENA)}${path}`, body, OWNER));
  } catch (e) {
    showError(e);
    if (e.status === 409) api("GET", `/api/arenas/${encodeURIComponent(ARENA)}`).then(setView).catch(() => {});
    return null;
  } finally { S.busy -= 1; controls(); }
}
const modeBody = () => ({ tickMode: $("tickMode").value, tickIntervalMs: Number($("interval").value) });

$("startBtn").onclick = async () => {
  S.starting = true; notice();  // the first start of a game shape compiles its program (seconds)
  let v;
  try { v = await ownerDo($("startBtn"), "POST", "/start", modeBody()); } finally { S.starting = false; notice(); }
  if (v) { S.tickMode = v.tickMode; S.tickIntervalMs = modeBody().tickIntervalMs; setView(v); }
};
$("tickBtn").onclick = async () => { const v = await ownerDo($("tickBtn"), "POST", "/tick"); if (v) setView(v); };
$("modeBtn").onclick = async () => {
  const m = await ownerDo($("modeBtn"), "POST", "/mode", modeBody());
  if (m) { S.tickMode = m.tickMode; S.tickIntervalMs = m.tickIntervalMs; setView({}); }
};
$("closeBtn").onclick = async () => {
  const s = await ownerDo($("closeBtn"), "POST", "/close");
  if (s) { S.summary = s; S.tickMode = "manual"; setView({ status: "closed" }); redraw(); }
};
$("resumeBtn").onclick = async () => {
  let players;
  try { players = JSON.parse($("resumePlayers").value || "{}"); } catch (e) { showError("players: " + e.message); return; }
  const v = await ownerDo($("resumeBtn"), "POST", "/resume", { players, ...modeBody() });
  if (v) { S.tickMode = v.tickMode; S.tickIntervalMs = modeBody().tickIntervalMs; setView(v); follow().catch(showError); }
};
$("deleteBtn").onclick = async () => {
  if (!confirm(`Delete arena ${ARENA} from memory and disk? This cannot be undone.`)) return;
  const d = await ownerDo($("deleteBtn"), "DELETE", "");
  if (d) { forgetKeys(ARENA); location.href = "/"; }
};
$("scope").onchange = drawTables;

// -- invite panel ---------------------------------------------------------------------------
function invitePanel() {
  if (!OWNER) return;
  $("arenaKey").textContent = KEYS.arenaKey || "(not in this browser)";
  $("spectatorToken").textContent = KEYS.spectatorToken || "(not in this browser)";
  $("ownerKey").textContent = KEYS.ownerKey;
  $("privateTextLine").textContent = S.privateText === undefined ? ""
    : S.privateText ? "Spectators read private messages' text (chosen at create)."
    : "Spectators see who sent a private message to whom and when, not its text (the default).";
  const url = `${BASE}/api/arenas/${ARENA}/join`, key = KEYS.arenaKey || "<ARENA_KEY>";
  $("snipCurl").textContent = `curl -X POST ${url} \\\n  -H "X-Arena-Key: ${key}" \\\n`
    + `  -H "Content-Type: application/json" \\\n  -d '{"agentType": "http", "displayName": "Remote", `
    + `"url": "http://YOUR-HOST:9000/decide"}'`;
  $("snipA4").textContent = `CODE=$(python3 -c 'import json, urllib.request; print(json.dumps(urllib.request.urlopen(`
    + `"${BASE}/static/example_agent.js").read().decode()))')\ncurl -X POST ${url} \\\n  -H "X-Arena-Key: ${key}" \\\n`
    + `  -H "Content-Type: application/json" \\\n  -d "{\\"agentType\\": \\"code\\", \\"displayName\\": \\"TrendConservative\\", `
    + `\\"privateResource\\": 30, \\"strategyCode\\": $CODE}"`;
}
document.querySelectorAll("[data-copy]").forEach(b => b.onclick = () => copyText($(b.dataset.copy).textContent, b));

$("useKeyForm").onsubmit = ev => {
  ev.preventDefault();
  const key = $("useKey").value.trim(), field = keyField(key);
  if (!field) { $("useKeyErr").textContent = "key: not an owner_, arena_ or spec_ key"; return; }
  saveKeys(ARENA, { [field]: key });
  location.reload();  // the key goes to storage and headers only, never into the URL
};
$("forgetBtn").onclick = () => { forgetKeys(ARENA); location.reload(); };

// -- join forms -----------------------------------------------------------------------------
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
    const r = await withBusy(f.querySelector("button[type=submit]"),
      () => api("POST", `/api/arenas/${encodeURIComponent(ARENA)}/join`, body, { "X-Arena-Key": KEYS.arenaKey }));
    setView({ players: r.players.map(p => ({ playerId: p, agentType: p === r.playerId ? body.agentType
      : ((S.view.players || []).find(x => x.playerId === p) || {}).agentType })) });
    if (VIEWER) loadTables().then(redraw);
    const code = f.querySelector("textarea[name=strategyCode]"), kept = code ? code.value : null;
    f.reset();  // the next player starts from a blank form (the example code stays)
    if (code) code.value = kept;
  } catch (e) { showError(e); }
});
// every registered built-in, from the server (kernels.policies.BUILTINS)
api("GET", "/api/builtins").then(r => {
  $("builtinPick").innerHTML = r.strategies.map(s => `<option${s === "conservative" ? " selected" : ""}>${esc(s)}</option>`).join("");
}).catch(showError);
fetch("/static/example_agent.js").then(r => r.text()).then(t => { document.querySelector("#join-code textarea").value = t; });

// -- perturbation form: the config's specs by id, or an ad-hoc spec built from the registry ----
let PTYPES = [];
async function perturbForm() {
  if (!OWNER) return;
  try {
    const engine = (S.view || {}).engineMode;
    PTYPES = (await api("GET", `/api/perturbation-types${engine ? "?engine=" + encodeURIComponent(engine) : ""}`)).types
      .filter(t => t.supported !== false);
    const specs = (await api("GET", `/api/arenas/${encodeURIComponent(ARENA)}/perturbations`, undefined, OWNER)).specs
      .filter(s => PTYPES.some(t => t.type === s.type));
    $("perturbPick").innerHTML = specs.map(s => `<option value="id:${esc(s.id)}">configured: ${esc(s.id)} (${esc(s.type)})</option>`).join("")
      + PTYPES.map(t => `<option value="type:${esc(t.type)}">ad hoc: ${esc(t.type)}</option>`).join("");
    perturbFields();
  } catch (e) { showError(e); }
}
function fieldKinds(schema) {  // the JSON-schema types a payload field accepts
  const alts = schema.anyOf || [schema];
  return { types: alts.map(a => a.type).filter(Boolean), enums: alts.flatMap(a => a.enum || []) };
}
function perturbFields() {
  const pick = $("perturbPick").value || "", box = $("perturbFields");
  box.innerHTML = "";
  if (!pick.startsWith("type:")) { $("perturbHelp").textContent = "fires the configured spec now"; return; }
  const t = PTYPES.find(x => x.type === pick.slice(5));
  $("perturbHelp").textContent = t.description;
  const props = (t.payloadSchema || {}).properties || {}, req = (t.payloadSchema || {}).required || [];
  for (const [name, sch] of Object.entries(props)) {
    const { types, enums } = fieldKinds(sch), label = document.createElement("label");
    label.textContent = name + (req.includes(name) ? " " : " (optional) ");
    let input;
    if (enums.length) {
      input = document.createElement("select");
      input.innerHTML = (req.includes(name) ? "" : '<option value=""></option>') + enums.map(v => `<option>${esc(v)}</option>`).join("");
    } else {
      input = document.createElement("input");
      input.className = "w8";
      if (types.length && types.every(x => x === "number" || x === "integer" || x === "null")) { input.type = "number"; input.step = "any"; }
    }
    input.name = name; input.dataset.types = types.join(",");
    if (t.example[name] !== undefined) input.value = t.example[name];
    label.appendChild(input); box.appendChild(label);
  }
}
$("perturbPick").onchange = perturbFields;
$("perturbForm").onsubmit = async ev => {
  ev.preventDefault();
  const pick = $("perturbPick").value || "";
  let body;
  if (pick.startsWith("id:")) body = { specId: pick.slice(3) };
  else {
    const payload = {};
    for (const el of $("perturbFields").querySelectorAll("input, select")) {
      if (el.value === "") continue;
      const types = el.dataset.types.split(","), n = Number(el.value);
      const numeric = (types.includes("number") || types.includes("integer")) && el.value.trim() !== "" && Number.isFinite(n);
      payload[el.name] = numeric ? n : el.value;
    }
    body = { spec: { type: pick.slice(5), payload } };
  }
  const fired = await ownerDo($("perturbBtn"), "POST", "/perturb", body);
  if (fired) addOwnerFiring(S.perturbations, fired, "answer");
  redraw();
};

// -- replay: a closed arena turn by turn, with progress, pause and speed ---------------------------
function replayStep() {
  const r = S.replay;
  if (!r || r.paused) return;
  r.upto = Math.min(S.ticks.length, r.upto + 1); draw();
  if (r.upto >= S.ticks.length) { r.paused = true; $("replayPause").textContent = "Play"; return; }
  r.timer = setTimeout(replayStep, 120 / Number($("replaySpeed").value));
}
$("replayBtn").onclick = () => {
  S.replay = { upto: 0, paused: false, timer: null };
  $("replayPos").max = S.ticks.length; $("replayBar").hidden = false; $("replayPause").textContent = "Pause";
  controls(); replayStep();
};
$("replayPause").onclick = () => {
  const r = S.replay; if (!r) return;
  if (r.paused && r.upto >= S.ticks.length) r.upto = 0;
  r.paused = !r.paused; $("replayPause").textContent = r.paused ? "Play" : "Pause";
  clearTimeout(r.timer); if (!r.paused) replayStep();
};
$("replayPos").oninput = () => { if (S.replay) { S.replay.upto = Number($("replayPos").value); draw(); } };
$("replayStop").onclick = () => {
  if (S.replay) clearTimeout(S.replay.timer);
  S.replay = null; $("replayBar").hidden = true; setView({}); draw();
};

invitePanel();
api("GET", `/api/arenas/${encodeURIComponent(ARENA)}`).then(v => { setView(v); perturbForm(); }).catch(showError);
follow().catch(showError);
