// The arena page's "What if" panel (issue 41): POST .../fork (the page's key in a header) with
// a turn, replicates, optional turns, seed and changes; the answer's fan (per turn the 5 / 25 /
// 50 / 75 / 95 % quantiles of the stock over the fork's arenas) is drawn on the stock chart as
// one toggled series (its median a line, the 25-75 % and 5-95 % bands shaded) and its frames
// download like the export's (arena_export.js). The newest fork is kept in S.fork.
"use strict";
const FORK_MAX_REPLICATES = 10000, FORK_MAX_CHANGES_CHARS = 20000;
const FORK_ERRORS = { 400: "The fork was refused", 403: "Forking needs this arena's owner key or spectator token",
  404: "This arena no longer exists", 409: "This arena cannot be forked now", 422: "The fork was refused",
  429: "Forks are busy (others are running or waiting): retry in a moment",
  503: "The fork worker stopped (too large a fork?): retry with fewer replicates or turns" };

// the fan as one series of the stock chart, from the live stock at the fork's turn on
function fanSeries(ans) {
  const at = S.ticks.find(t => t.turn === ans.turn), rows = ans.fan || [];
  const anchor = at ? [[ans.turn, at.stock, at.stock]] : [];
  const band = (lo, hi) => anchor.concat(rows.map(r => [r.turn, r[lo], r[hi]]));
  return { name: "fork", label: `what if: median of ${ans.replicates} (bands 25-75 %, 5-95 %)`, color: "#5d6678",
    points: anchor.map(a => [a[0], a[1]]).concat(rows.map(r => [r.turn, r.median])),
    bands: [band("q05", "q95"), band("q25", "q75")] };
}

function forkNotice(text, bad) {
  const el = $("forkNotice");
  el.textContent = text || ""; el.hidden = !text; el.className = "notice" + (bad ? " warn" : "");
}

function intField(id, name, lo, hi) {  // "" -> undefined (the server's default)
  const raw = $(id).value.trim();
  if (!raw) return undefined;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${name}: a whole number in [${lo}, ${hi}], got ${raw.slice(0, 20)}`);
  return v;
}

function forkBody() {
  const body = { replicates: intField("forkReplicates", "replicates", 1, FORK_MAX_REPLICATES) ?? 100 };
  const turn = intField("forkTurn", "turn", 0, (S.view || {}).turn ?? 0);
  const turns = intField("forkTurns", "turns", 1, 10000), seed = intField("forkSeed", "seed", 0, 2 ** 32 - 1);
  if (turn !== undefined) body.turn = turn;
  if (turns !== undefined) body.turns = turns;
  if (seed !== undefined) body.seed = seed;
  const text = $("forkChanges").value.trim();
  if (text) {
    if (text.length > FORK_MAX_CHANGES_CHARS) throw new Error(`changes: at most ${FORK_MAX_CHANGES_CHARS} characters`);
    let changes;
    try { changes = JSON.parse(text); } catch (e) { throw new Error("changes: not valid JSON (e.g. {\"model.regenRate\": 0.3})"); }
    if (!changes || typeof changes !== "object" || Array.isArray(changes)) throw new Error("changes: a JSON object of config paths and values");
    body.changes = changes;
  }
  return body;
}

function forkLinks(ans) {
  const box = $("forkLinks");
  box.innerHTML = "";
  for (const [name, href] of Object.entries(ans.links || {})) {
    const row = document.createElement("div"); row.className = "keyrow";
    row.innerHTML = `<span class="klabel">fork ${esc(name)}</span>`;
    for (const ext of ["csv", "parquet"]) {
      const url = href.replace(/\.csv$/, "." + ext), b = document.createElement("button");
      b.className = "secondary"; b.textContent = ext; b.dataset.href = url; b.dataset.frame = `${name}.${ext}`;
      b.setAttribute("aria-label", `download the fork's ${name} as ${ext}`);
      b.onclick = () => download(url, `${ARENA}_fork_${ans.forkId}_${name}.${ext}`, b);
      row.appendChild(b);
    }
    box.appendChild(row);
  }
}

function showFork(ans) {
  S.fork = ans;
  const surv = ans.survived === null || ans.survived === undefined ? "–" : `${Math.round(ans.survived * 100)} %`;
  $("forkResult").textContent = `fork ${ans.forkId}: ${ans.replicates} arenas from turn ${ans.turn}, ${ans.turns} turns, ` +
    `seed ${ans.seed}, ${Object.keys(ans.changes || {}).length} change(s); survived: ${surv}. Its fan is on the stock chart.`;
  forkLinks(ans);
  redraw();
}

async function postFork() {
  let body;
  try { body = forkBody(); } catch (e) { forkNotice(e.message, true); return; }
  forkNotice(S.forked ? `Forking: ${body.replicates} arenas…` : `Forking: ${body.replicates} arenas; the first fork ` +
    "compiles its program (a few seconds to a minute), later ones answer faster.", false);
  await withBusy($("forkBtn"), async () => {
    let r, data = null;
    try {
      r = await fetch(`/api/arenas/${encodeURIComponent(ARENA)}/fork`, { method: "POST",
        headers: Object.assign({ "Content-Type": "application/json" }, VIEWER), body: JSON.stringify(body) });
      data = await r.json().catch(() => null);
    } catch (e) { forkNotice("The server could not be reached: retry in a moment.", true); return; }
    if (!r.ok) {
      const why = data && typeof data.detail === "string" ? `: ${data.detail.slice(0, 300)}` : "";
      forkNotice(`${FORK_ERRORS[r.status] || `The fork failed (${r.status})`}${why}`, true);
      return;
    }
    S.forked = true; forkNotice(null); showFork(data);
  });
}

// shown to the owner and spectators once the arena has started (a waiting arena has no state)
function forkPanel() {
  const st = (S.view || {}).status;
  $("forkCard").hidden = !VIEWER || !st || st === "waiting";
  $("forkTurn").placeholder = `now (${(S.view || {}).turn ?? 0})`;
}

$("forkForm").onsubmit = ev => { ev.preventDefault(); postFork(); };
