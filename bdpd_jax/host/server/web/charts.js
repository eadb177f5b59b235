// Inline-SVG line charts for the dashboard (no library). lineChart(el, series, opts):
// series = [{name, label, color, points: [[x, y], ...]}]; null y values break the line; label
// (default name) is what the reader sees. Each series has its own colour, dash and width (the
// first drawn widest, so identical series show as nested strokes), and its legend entry is a
// toggle (kept per chart element across redraws). opts: {x, y} axis titles, height,
// gap(series) -> why its last value is missing, markers: [{x, kind, label}] vertical event lines.
// A series may carry bands: [[[x, lo, hi], ...], ...] (outer first), shaded areas drawn under
// the lines in its colour and toggled with it (a fork's fan: arena_fork.js).
"use strict";
const PALETTE = ["#2f6fdf", "#d35400", "#1e8449", "#8e44ad", "#c0392b", "#16a085", "#7d6608", "#2c3e50",
  "#6c3483", "#b9770e"];

const DASHES = ["", "7 3", "2 3", "9 3 2 3", "4 4", "1 3"];
const MARK_COLORS = { perturbation: "#8e44ad", sanction: "#d35400", collapse: "#c0392b" };
const HIDDEN = new Map();  // chart element id -> the series names its reader switched off
const labelOf = s => s.label || s.name;

function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
  return (Math.round(v * 1000) / 1000).toLocaleString("en-US", { maximumFractionDigits: 3 });
}

function niceTicks(lo, hi, n) {
  if (!(hi > lo)) { hi = lo + 1; }
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= step0) || step0;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

function svgEl(tag, attrs, parent) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

function lineChart(el, series, opts) {
  opts = opts || {};
  el.innerHTML = "";
  el.classList.add("chartbox");
  const W = 560, H = opts.height || 220, L = 58, R = 10, T = 10, B = 34;
  const svg = svgEl("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img",
    "aria-label": `${opts.y || "value"} by ${opts.x || "turn"}: ${series.map(labelOf).join(", ")}` }, el);
  svg.style.height = H + "px";
  const bandPts = series.flatMap(s => (s.bands || []).flat().flatMap(([x, lo, hi]) => [[x, lo], [x, hi]]));
  const pts = series.flatMap(s => s.points).concat(bandPts).filter(p => p[1] !== null && Number.isFinite(p[1]));
  let x0 = 1, x1 = 2, y0 = 0, y1 = 1;
  if (pts.length) {
    x0 = Math.min(...pts.map(p => p[0])); x1 = Math.max(...pts.map(p => p[0]));
    y0 = Math.min(0, ...pts.map(p => p[1])); y1 = Math.max(...pts.map(p => p[1]));
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) y1 = y0 + 1;
  }
  const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const sy = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  for (const t of niceTicks(y0, y1, 4)) {
    svgEl("line", { x1: L, x2: W - R, y1: sy(t), y2: sy(t), stroke: "#eef0f4" }, svg);
    svgEl("text", { x: L - 4, y: sy(t) + 4, "text-anchor": "end" }, svg).textContent = fmt(t);
  }
  for (const t of niceTicks(x0, x1, 6).filter(v => Number.isInteger(v))) {
    svgEl("text", { x: sx(t), y: H - 20, "text-anchor": "middle" }, svg).textContent = t;
  }
  svgEl("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", class: "axis" }, svg).textContent = opts.x || "turn";
  svgEl("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", class: "axis",
    transform: `rotate(-90 12 ${(T + H - B) / 2})` }, svg).textContent = opts.y || "";
  svgEl("line", { x1: L, x2: L, y1: T, y2: H - B, stroke: "#c5cad6" }, svg);
  svgEl("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: "#c5cad6" }, svg);
  const colors = series.map((s, k) => s.color || PALETTE[k % PALETTE.length]);
  const hidden = HIDDEN.get(el.id) || new Set();
  for (const m of opts.markers || []) {
    if (!(m.x >= x0 && m.x <= x1)) continue;
    const line = svgEl("line", { x1: sx(m.x), x2: sx(m.x), y1: T, y2: H - B, stroke: MARK_COLORS[m.kind] || "#555",
      "stroke-dasharray": m.kind === "collapse" ? "" : "4 3", "stroke-width": 1.2, class: "marker", "data-kind": m.kind }, svg);
    svgEl("title", {}, line).textContent = `${m.kind} at ${opts.x || "turn"} ${m.x}${m.label ? ": " + m.label : ""}`;
  }
  series.forEach((s, k) => (s.bands || []).forEach((band, b) => {  // upper edge on, lower edge back
    const ok = band.filter(([, lo, hi]) => Number.isFinite(lo) && Number.isFinite(hi));
    if (!ok.length) return;
    const edge = ok.map(([x, , hi]) => `${sx(x).toFixed(1)},${sy(hi).toFixed(1)}`)
      .concat(ok.slice().reverse().map(([x, lo]) => `${sx(x).toFixed(1)},${sy(lo).toFixed(1)}`));
    svgEl("polygon", { points: edge.join(" "), fill: colors[k], "fill-opacity": (0.14 * (b + 1)).toFixed(2), stroke: "none",
      class: "band", "data-series": s.name, "data-band": b, visibility: hidden.has(s.name) ? "hidden" : "visible" }, svg);
  }));
  series.forEach((s, k) => {
    let d = "", pen = false;
    for (const [x, y] of s.points) {
      if (y === null || !Number.isFinite(y)) { pen = false; continue; }
      d += (pen ? "L" : "M") + sx(x).toFixed(1) + "," + sy(y).toFixed(1);
      pen = true;
    }
    const width = series.length > 1 ? 1.4 + 1.2 * (series.length - 1 - k) / (series.length - 1) : 1.8;
    svgEl("path", { d, fill: "none", stroke: colors[k], "stroke-width": width.toFixed(2), "vector-effect": "non-scaling-stroke",
      "stroke-dasharray": DASHES[k % DASHES.length], "data-series": s.name,
      visibility: hidden.has(s.name) ? "hidden" : "visible" }, svg);
  });
  // hover readout: the nearest turn's value of every series
  const cursor = svgEl("line", { y1: T, y2: H - B, stroke: "#8a93a6", "stroke-dasharray": "3 3", visibility: "hidden" }, svg);
  const tip = document.createElement("div");
  tip.className = "tip"; tip.hidden = true; tip.setAttribute("role", "status");
  el.appendChild(tip);
  const xs = [...new Set(series.flatMap(s => s.points.map(p => p[0])))].sort((a, b) => a - b);
  svg.addEventListener("mousemove", ev => {
    if (!xs.length) return;
    const box = svg.getBoundingClientRect();
    const vx = (ev.clientX - box.left) / box.width * W;
    const x = xs.reduce((best, v) => Math.abs(sx(v) - vx) < Math.abs(sx(best) - vx) ? v : best, xs[0]);
    cursor.setAttribute("x1", sx(x)); cursor.setAttribute("x2", sx(x)); cursor.setAttribute("visibility", "visible");
    tip.textContent = "";
    const head = document.createElement("b"); head.textContent = `${opts.x || "turn"} ${x}`; tip.appendChild(head);
    series.forEach((s, k) => {
      const p = s.points.find(q => q[0] === x);
      const row = document.createElement("div");
      row.innerHTML = `<i style="background:${colors[k]}"></i>`;
      row.appendChild(document.createTextNode(`${labelOf(s)}: ${fmt(p ? p[1] : null)}`));
      tip.appendChild(row);
    });
    tip.hidden = false;
    tip.style.left = Math.min(box.width - 150, Math.max(0, ev.clientX - box.left + 12)) + "px";
  });
  svg.addEventListener("mouseleave", () => { tip.hidden = true; cursor.setAttribute("visibility", "hidden"); });
  const legend = document.createElement("div");
  legend.className = "legend";
  series.forEach((s, k) => {
    const span = document.createElement(el.id ? "button" : "span");
    const last = s.points.length ? s.points[s.points.length - 1][1] : null;
    span.innerHTML = `<i style="background:${colors[k]}"></i>`;
    const missing = last === null || last === undefined || Number.isNaN(last);
    const why = missing && opts.gap ? opts.gap(s) : "";
    span.appendChild(document.createTextNode(`${labelOf(s)} ${fmt(last)}` + (why ? ` (${why})` : "")));
    if (el.id) {  // a toggle: show or hide the series (kept across redraws)
      span.type = "button"; span.className = "toggle"; span.dataset.series = s.name;
      span.setAttribute("aria-pressed", String(!hidden.has(s.name)));
      span.onclick = () => {
        if (hidden.has(s.name)) hidden.delete(s.name); else hidden.add(s.name);
        HIDDEN.set(el.id, hidden);
        span.setAttribute("aria-pressed", String(!hidden.has(s.name)));
        svg.querySelectorAll("[data-series]").forEach(p => {
          if (p.dataset.series === s.name) p.setAttribute("visibility", hidden.has(s.name) ? "hidden" : "visible");
        });
      };
    }
    legend.appendChild(span);
  });
  el.appendChild(legend);
}
