// The arena page's export panel (issue 41): every frame as CSV or parquet and the whole arena
// as a zip that bdpd_jax.load reads. The list comes from the server (GET .../frames); the
// files are fetched with the page's key in a header (never in a URL) and saved from a blob.
"use strict";
async function download(path, filename, button) {
  await withBusy(button, async () => {
    const r = await fetch(path, { headers: VIEWER || {} });
    if (!r.ok) { showError(`${r.status}: ${(await r.text()).slice(0, 300)}`); return; }
    const url = URL.createObjectURL(await r.blob());
    const a = document.createElement("a");
    a.href = url; a.download = filename; document.body.appendChild(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  });
}

async function exportPanel() {
  if (!VIEWER) return;
  const base = `/api/arenas/${encodeURIComponent(ARENA)}`;
  let list;
  try { list = await api("GET", `${base}/frames`, undefined, VIEWER); } catch (e) { return; }
  const box = $("exportList");
  box.innerHTML = "";
  for (const name of list.frames) {
    const row = document.createElement("div"); row.className = "keyrow";
    row.innerHTML = `<span class="klabel">${esc(name)}</span>`;
    for (const fmt of list.formats) {
      const b = document.createElement("button"); b.className = "secondary"; b.textContent = fmt;
      b.setAttribute("aria-label", `download ${name} as ${fmt}`); b.dataset.frame = `${name}.${fmt}`;
      b.onclick = () => download(`${base}/frames/${name}.${fmt}`, `${ARENA}_${name}.${fmt}`, b);
      row.appendChild(b);
    }
    box.appendChild(row);
  }
  $("exportZip").onclick = () => download(list.archive, `${ARENA}.zip`, $("exportZip"));
  $("exportNote").textContent = list.privateTextHidden ? "Private messages' text is left out (spectator view)." : "";
  $("exportCard").hidden = false;
}
exportPanel();
