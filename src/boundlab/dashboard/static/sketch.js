// A first picture of views 1 and 2 while plotly.min.js (4.8 MB) is still being parsed and run, which
// takes 1.5-3 s on a loaded machine after its last byte arrived, longer than the data takes. It is
// drawn from the very traces and layout that Plotly.react gets next, as plain SVG, and plotly's
// interactive plot replaces it as soon as plotly is ready (app.js `render`). It draws only what those
// two views use: lines and markers on a linear or log x axis with y in layout.yaxis.range, "tonexty"
// bands, dashes, error bars, markers on a second (log) y axis, full-width horizontal shapes, and a
// legend when there are few traces (view 2; view 1's 50 checkpoints wait for plotly's). Hover,
// zoom and the rest wait for plotly. Text is set with textContent only.
"use strict";

window.BoundlabSketch = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const M = { l: 60, r: 20, t: 10, b: 40 };  // margins, px
  const DASH = { dot: "2,3", dash: "6,4" };
  const DEFAULT = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"];

  function node(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function scale(log, lo, hi, a, b) {
    const f = log ? Math.log10 : (v) => v;
    const L = f(lo), H = f(hi), span = H - L || 1;
    return (v) => a + ((f(v) - L) / span) * (b - a);
  }

  function ticks(log, lo, hi) {
    if (log) {  // decades; 2 and 5 times them too when there are fewer than three
      const dec = [];
      for (let p = Math.floor(Math.log10(lo)); p <= Math.floor(Math.log10(hi)); p++) dec.push(Math.pow(10, p));
      const mult = dec.filter((v) => v >= lo && v <= hi).length < 3 ? [1, 2, 5] : [1];
      return dec.flatMap((v) => mult.map((m) => v * m)).filter((v) => v >= lo && v <= hi);
    }
    const step = Math.pow(10, Math.floor(Math.log10((hi - lo) / 4 || 1)));
    const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => (hi - lo) / s <= 6) || step * 10;
    const out = [];
    for (let v = Math.ceil(lo / nice) * nice; v <= hi + 1e-9; v += nice) out.push(Number(v.toPrecision(6)));
    return out;
  }

  // Draw `traces` into `div` (replacing an earlier sketch); false when there is nothing to draw.
  function draw(div, traces, layout) {
    const w = div.clientWidth || 800, h = div.clientHeight || 380;
    const log = (layout.xaxis || {}).type === "log";
    const main = traces.filter((t) => (t.yaxis || "y") === "y"), right = traces.filter((t) => t.yaxis === "y2");
    const ok = (x, y) => x !== null && x !== undefined && y !== null && y !== undefined && (!log || x > 0);
    let x0 = Infinity, x1 = -Infinity;
    for (const t of main) t.x.forEach((x, i) => { if (ok(x, t.y[i])) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); } });
    if (!(x0 <= x1)) return false;
    const yr = (layout.yaxis || {}).range || [0, 1];
    const named = traces.filter((t) => t.showlegend !== false && t.name);
    const legend = named.length <= 10 ? named : [];
    const R = w - M.r - (legend.length ? 170 : 0) - (right.length ? 40 : 0);  // the plot's right edge
    const X = scale(log, x0, x1, M.l, R), Y = scale(false, yr[0], yr[1], h - M.b, M.t);
    const svg = node("svg", { class: "sketch", width: w, height: h, viewBox: `0 0 ${w} ${h}` });
    svg.appendChild(node("rect", { x: M.l, y: M.t, width: R - M.l, height: h - M.t - M.b, fill: "none", stroke: "#ddd" }));
    for (const v of ticks(log, x0, x1)) {
      svg.appendChild(node("line", { x1: X(v), x2: X(v), y1: M.t, y2: h - M.b, stroke: "#eee" }));
      svg.appendChild(node("text", { x: X(v), y: h - M.b + 15, "text-anchor": "middle", "font-size": 11, fill: "#444" }, String(v)));
    }
    for (const v of ticks(false, yr[0], Math.min(yr[1], 1))) {
      svg.appendChild(node("line", { x1: M.l, x2: R, y1: Y(v), y2: Y(v), stroke: "#eee" }));
      svg.appendChild(node("text", { x: M.l - 6, y: Y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#444" }, String(v)));
    }
    const title = (a) => ((layout[a] || {}).title || {}).text || "";
    svg.appendChild(node("text", { x: (M.l + R) / 2, y: h - 6, "text-anchor": "middle", "font-size": 12, fill: "#444" }, title("xaxis")));
    const pts = (t) => t.x.flatMap((x, i) => (ok(x, t.y[i]) ? [X(x).toFixed(1) + "," + Y(t.y[i]).toFixed(1)] : []));
    main.forEach((t, i) => {
      if (!pts(t).length) return;  // a legend-only trace (x: [null])
      const line = t.line || {}, colour = line.color || DEFAULT[i % DEFAULT.length];
      const g = node("g", { opacity: t.opacity === undefined ? 1 : t.opacity });
      if (t.fill === "tonexty" && i > 0) {
        g.appendChild(node("polygon", { points: pts(t).concat(pts(main[i - 1]).reverse()).join(" "),
          fill: t.fillcolor || "rgba(0,0,0,0.1)", stroke: "none" }));
      }
      const mode = t.mode || "lines", width = line.width === undefined ? 2 : line.width;
      if (mode.includes("lines") && width > 0) {
        const attrs = { points: pts(t).join(" "), fill: "none", stroke: colour, "stroke-width": width, class: "sketch-line" };
        if (DASH[line.dash]) attrs["stroke-dasharray"] = DASH[line.dash];
        g.appendChild(node("polyline", attrs));
      }
      const err = t.error_y;
      if (err && err.array) {
        t.x.forEach((x, j) => {
          const y = t.y[j], up = err.array[j], down = err.arrayminus ? err.arrayminus[j] : up;
          if (!ok(x, y) || up === null || down === null || isNaN(up) || isNaN(down)) return;
          g.appendChild(node("line", { x1: X(x), x2: X(x), y1: Y(y + up), y2: Y(y - down), stroke: colour }));
        });
      }
      if (mode.includes("markers")) {
        for (const p of pts(t)) {
          const [cx, cy] = p.split(",");
          g.appendChild(node("circle", { cx, cy, r: 3, fill: (t.marker || {}).color || colour }));
        }
      }
      svg.appendChild(g);
    });
    // The second y axis (log, on the right): markers only, as view 2's crossing k.
    const r2 = right.flatMap((t) => t.y.filter((y, j) => y > 0 && ok(t.x[j], y)));
    if (r2.length) {
      const lo = Math.min(...r2), hi = Math.max(...r2);
      const Y2 = scale(true, lo / 1.5, hi * 1.5, h - M.b, M.t);
      for (const v of ticks(true, lo / 1.5, hi * 1.5)) {
        svg.appendChild(node("text", { x: R + 6, y: Y2(v) + 4, "font-size": 11, fill: "#444" }, String(v)));
      }
      for (const t of right) {
        const colour = (t.marker || {}).color || "#2ca02c";
        t.x.forEach((x, j) => {
          if (!(t.y[j] > 0) || !ok(x, t.y[j])) return;
          const cx = X(x), cy = Y2(t.y[j]);
          svg.appendChild(node("path", { d: `M${cx - 4},${cy - 4}L${cx + 4},${cy + 4}M${cx - 4},${cy + 4}L${cx + 4},${cy - 4}`, stroke: colour, "stroke-width": 2 }));
        });
      }
    }
    legend.forEach((t, j) => {
      const line = t.line || {}, colour = line.color || (t.marker || {}).color || DEFAULT[j % DEFAULT.length];
      const x = w - M.r - 160, y = M.t + 30 + 18 * j;
      if (t.fill) {  // a band: its area's colour
        svg.appendChild(node("rect", { x, y: y - 9, width: 24, height: 10, fill: t.fillcolor || "rgba(0,0,0,0.1)" }));
      } else {
        const attrs = { x1: x, x2: x + 24, y1: y - 4, y2: y - 4, stroke: colour, "stroke-width": 2 };
        if (DASH[line.dash]) attrs["stroke-dasharray"] = DASH[line.dash];
        svg.appendChild(node("line", attrs));
      }
      svg.appendChild(node("text", { x: x + 30, y, "font-size": 11, fill: "#222" }, t.name));
    });
    for (const s of layout.shapes || []) {
      if (s.type !== "line" || s.xref !== "paper" || s.y0 === null || s.y0 === undefined) continue;
      const attrs = { x1: M.l, x2: R, y1: Y(s.y0), y2: Y(s.y1), stroke: (s.line || {}).color || "#444" };
      if (DASH[(s.line || {}).dash]) attrs["stroke-dasharray"] = DASH[s.line.dash];
      svg.appendChild(node("line", attrs));
    }
    svg.appendChild(node("text", { x: R - 4, y: M.t + 14, "text-anchor": "end", "font-size": 11, fill: "#888" },
      "loading the interactive plot..."));
    const old = div.querySelector(":scope > svg.sketch");
    if (old) old.remove();
    div.appendChild(svg);
    return true;
  }

  return { draw };
})();
