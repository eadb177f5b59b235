// Shared helpers of the dashboard pages: API calls (keys in headers, never in URLs),
// the keys kept in this browser (localStorage), HTML escaping, times, copy, busy buttons.
"use strict";
async function api(method, path, body, headers) {
  const init = { method, headers: Object.assign({}, headers || {}) };
  if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text }; }
  if (!r.ok) { const e = new Error(`${r.status}: ${(data && data.detail) || r.statusText}`); e.status = r.status; throw e; }
  return data;
}
// keys of one arena: {ownerKey, arenaKey, spectatorToken}; merged, so a pasted key adds a role
function saveKeys(id, keys) {
  localStorage.setItem("bdpd.keys." + id, JSON.stringify(Object.assign({}, loadKeys(id) || {}, keys)));
}
function loadKeys(id) { try { return JSON.parse(localStorage.getItem("bdpd.keys." + id)); } catch (e) { return null; } }
function forgetKeys(id) { localStorage.removeItem("bdpd.keys." + id); }
// the role a pasted key gives, from its prefix (004_* A.2 key prefixes)
const KEY_FIELDS = { owner_: "ownerKey", arena_: "arenaKey", spec_: "spectatorToken" };
function keyField(key) {
  const k = String(key || "").trim();
  if (k.length > 200 || !/^[A-Za-z0-9_-]+$/.test(k)) return null;
  for (const p in KEY_FIELDS) if (k.startsWith(p)) return KEY_FIELDS[p];
  return null;
}
function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
// "2026-12-01 20:15" in the reader's time zone (the ISO stamp stays in the title)
function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = n => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}
async function copyText(text, button) {
  try { await navigator.clipboard.writeText(text); } catch (e) {
    const t = document.createElement("textarea"); t.value = text; document.body.appendChild(t); t.select();
    document.execCommand("copy"); t.remove();
  }
  if (button) { const old = button.textContent; button.textContent = "copied"; setTimeout(() => { button.textContent = old; }, 1200); }
}
// run fn with the button marked busy (disabled, aria-busy) until it settles
async function withBusy(button, fn) {
  if (button) { button.disabled = true; button.setAttribute("aria-busy", "true"); button.classList.add("busy"); }
  try { return await fn(); } finally {
    if (button) { button.removeAttribute("aria-busy"); button.classList.remove("busy"); button.disabled = false; }
  }
}
const sleep = ms => new Promise(res => setTimeout(res, ms));
// The owner's firing reaches its page twice, in either order: the POST /perturb answer ("answer")
// and the stream's `perturbation` event ("event"). Each answer pairs with one event of the same
// firing, so a firing makes one row whichever comes first, and two equal firings make two rows.
function addOwnerFiring(rows, fired, via) {
  const key = JSON.stringify([fired.turn, fired.type, fired.target, fired.value, fired.spec]);
  const twin = rows.find(p => p.owner && p.pairKey === key && p.unpaired && p.unpaired !== via);
  if (twin) delete twin.unpaired;
  else rows.push({ ...fired, owner: true, pairKey: key, unpaired: via });
  return rows;
}
// Server-Sent Events over fetch, so the key travels in a header (EventSource cannot set one).
async function streamEvents(path, headers, onEvent, signal) {
  const r = await fetch(path, { headers, signal });
  if (!r.ok) { const e = new Error(`${r.status}: stream refused`); e.status = r.status; throw e; }
  const reader = r.body.getReader(), dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut); buf = buf.slice(cut + 2);
      let ev = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) ev = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) onEvent(ev, JSON.parse(data));
    }
  }
}
