// Shared helpers of the dashboard pages: API calls (keys in headers, never in URLs),
// the owner's keys kept in this browser (localStorage), HTML escaping.
"use strict";
async function api(method, path, body, headers) {
  const init = { method, headers: Object.assign({}, headers || {}) };
  if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text }; }
  if (!r.ok) throw new Error(`${r.status}: ${(data && data.detail) || r.statusText}`);
  return data;
}
function saveKeys(id, keys) { localStorage.setItem("bdpd.keys." + id, JSON.stringify(keys)); }
function loadKeys(id) { try { return JSON.parse(localStorage.getItem("bdpd.keys." + id)); } catch (e) { return null; } }
function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
// Server-Sent Events over fetch, so the key travels in a header (EventSource cannot set one).
async function streamEvents(path, headers, onEvent, signal) {
  const r = await fetch(path, { headers, signal });
  if (!r.ok) throw new Error(`${r.status}: stream refused`);
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
