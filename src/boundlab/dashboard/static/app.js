// BoundLab dashboard page. Plain JS + Plotly. Every string from a run (model text, problem ids,
// labels) reaches the DOM through textContent, never innerHTML, so markup in it stays text.
"use strict";

performance.mark("boundlab:app-start");
const STATIC = window.BOUNDLAB_STATIC || null;  // set in an exported file: no server
const POLL_MS = 2000;
const state = { run: null, overview: null, map: null, slider: 0, version: null, problem: null, page: 0 };

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

// plotly.min.js (4.8 MB) is loaded by this script, once the data of views 1-2 is here: a
// <script src> before app.js held every request back until Chromium had parsed and run it (2-3 s on
// a loaded machine), and while it runs it holds the main thread, so a response that arrives
// meanwhile is handled only after it. Views 1-2 are sketched (sketch.js) from that data first, then
// drawn by plotly. An exported file inlines plotly.min.js before this script.
let plotlyAsked = false, plotlyOk, plotlyBad;
const plotlyLoaded = new Promise((ok, bad) => { plotlyOk = ok; plotlyBad = bad; });
function loadPlotly() {
  if (window.Plotly) { plotlyOk(window.Plotly); return; }
  if (plotlyAsked) return;
  plotlyAsked = true;
  const meta = document.querySelector('meta[name="boundlab-plotly"]');  // the versioned URL
  const s = el("script", { src: meta ? meta.content : "static/plotly.min.js" });
  s.async = true;
  s.addEventListener("load", () => { performance.mark("boundlab:plotly-ready"); plotlyOk(window.Plotly); });
  s.addEventListener("error", () => plotlyBad(new Error("static/plotly.min.js did not load")));
  document.head.appendChild(s);
}
// Resolves once plotly is there; it does not ask for it (loadRun does, start() at the latest).
const plotlyReady = () => (window.Plotly ? Promise.resolve(window.Plotly) : plotlyLoaded);

// Draw a plot with plotly; until plotly.min.js is ready, a plain SVG sketch of the same traces
// (sketch.js) stands in, and plotly replaces it. Marks `boundlab:sketch-ID` / `boundlab:plotly-ID`
// and the div's data-drawn say which one is shown.
async function render(div, traces, layout) {
  div = typeof div === "string" ? document.getElementById(div) : div;
  if (!window.Plotly && window.BoundlabSketch && BoundlabSketch.draw(div, traces, layout)) {
    div.setAttribute("data-drawn", "sketch");
    performance.mark("boundlab:sketch-" + div.id);
  }
  const Plotly = await plotlyReady();
  const sketch = div.querySelector(":scope > svg.sketch");
  if (sketch) sketch.remove();
  await Plotly.react(div, traces, layout);
  div.setAttribute("data-drawn", "plotly");
  performance.mark("boundlab:plotly-" + div.id);
}

async function getJSON(url) {
  if (STATIC) return staticLookup(url);
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(url + ": " + r.status);
  return r.json();
}

function staticLookup(url) {
  let m;
  if (url === "api/runs") return STATIC.runs_list;
  if (url === "api/sweep") return STATIC.sweep;
  if ((m = url.match(/^api\/run\/(\d+)\/overview$/))) return STATIC.runs[m[1]].overview;
  if ((m = url.match(/^api\/run\/(\d+)\/problems$/))) return STATIC.runs[m[1]].problems;
  if ((m = url.match(/^api\/run\/(\d+)\/band\/(\d+)$/))) {
    const b = STATIC.runs[m[1]].bands[m[2]];
    if (!b) throw new Error("no band");
    return b;
  }
  throw new Error("not in this export: " + url);
}

const fmt = (x, d = 3) => (x === null || x === undefined ? "-" : Number(x).toFixed(d));
const probeName = (p) => (p.kind === "base" ? "base" : p.kind === "null" ? "null (base, seed " + p.seed + ")" : "step " + p.step);
const checkpoints = () => state.overview.probes.filter((p) => p.kind === "checkpoint");
const baseProbe = () => state.overview.probes.find((p) => p.kind === "base");

function ramp(t) {  // a light-to-dark blue ramp, t in [0, 1]
  const a = [198, 219, 239], b = [8, 48, 107];
  return "rgb(" + a.map((x, i) => Math.round(x + (b[i] - x) * t)).join(",") + ")";
}

const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
function colourBy(values) {  // numeric values: a ramp; others: a palette
  const uniq = [...new Set(values.map(String))];
  const nums = uniq.map(Number);
  if (uniq.length > 1 && nums.every((x) => !isNaN(x))) {
    const lo = Math.min(...nums), hi = Math.max(...nums);
    return (v) => ramp(hi === lo ? 1 : 0.15 + 0.85 * (Number(v) - lo) / (hi - lo));
  }
  return (v) => PALETTE[uniq.indexOf(String(v)) % PALETTE.length];
}

// Axes every view shares. k on a log axis is labelled at 1, 2, 4, ..., n (plotly's own log ticks
// read "... 9, 10, 2, 3" with 2 meaning 20); a step axis shows the steps probed, never 2.5; the top
// margin leaves room for plotly's toolbar above the legend.
const TOP = 40;
function pow2Ticks(n) {
  const t = [];
  for (let k = 1; k < n; k *= 2) t.push(k);
  if (n >= 1) t.push(n);
  return t;
}
function logKAxis(n, title) {
  const t = pow2Ticks(Math.max(1, n));
  return { type: "log", title: { text: title }, tickmode: "array", tickvals: t, ticktext: t.map(String),
    range: [-0.05, Math.log10(Math.max(2, n)) + 0.05] };
}
function stepAxis(steps, title) {
  const uniq = [...new Set(steps)].sort((a, b) => a - b);
  // up to a dozen probed steps: each one a tick; more span >= 11 steps, where plotly's own ticks
  // are whole numbers
  return uniq.length && uniq.length <= 12
    ? { title: { text: title }, tickmode: "array", tickvals: uniq, ticktext: uniq.map(String) }
    : { title: { text: title }, tickformat: "d" };
}

function band(ks, low, high, name, colour) {
  return [
    { x: ks, y: high, mode: "lines", line: { width: 0 }, showlegend: false, hoverinfo: "skip", name: name + " hi" },
    { x: ks, y: low, mode: "lines", line: { width: 0 }, fill: "tonexty", fillcolor: colour, name: name, hoverinfo: "skip" },
  ];
}

// -- view 1 -----------------------------------------------------------------------------------
// The probes whose per-k band view 1 draws: the null (when the run has one), the base and the
// selected checkpoint.
function bandProbes() {
  const ov = state.overview, sel = checkpoints()[state.slider];
  return { nul: ov.probes.find((p) => p.kind === "null"), base: baseProbe(), sel };
}

// Every band view 1 needs, requested at once (they used to leave one after another); a band the
// server cannot give (no store) is null, and the view draws without it.
function fetchBands() {
  const ov = state.overview, want = bandProbes(), out = {};
  for (const [k, p] of Object.entries(want)) {
    out[k] = p ? getJSON("api/run/" + ov.id + "/band/" + p.index).catch(() => null) : Promise.resolve(null);
  }
  return out;
}

async function drawBoundary(bandsFetched) {
  const ov = state.overview, cks = checkpoints();
  const slider = document.getElementById("step-slider");
  slider.max = Math.max(cks.length - 1, 0);
  if (state.slider > cks.length - 1) state.slider = Math.max(cks.length - 1, 0);
  slider.value = state.slider;
  const { nul, base, sel } = bandProbes();
  const bands = bandsFetched || fetchBands();
  document.getElementById("step-label").textContent = sel ? "step " + sel.step + " of " + cks.map((c) => c.step).join(", ") : "no checkpoint probed yet";
  // k on a log axis: at n = 1024 about 160 log-spaced k (every k up to 64) draw the same picture as
  // 1024, and 50 checkpoints stay fast. Every value drawn is the run's own, at that k.
  const pick = (n) => [...new Set(Array.from({ length: 160 }, (_, j) => Math.round(Math.pow(n, j / 159))))]
    .concat(Array.from({ length: Math.min(n, 64) }, (_, i) => i + 1)).filter((k) => k >= 1 && k <= n);
  const kset = (n) => [...new Set(pick(n))].sort((a, b) => a - b);
  const thin = (p, ys) => { const ks = kset(ys.length); return [ks, ks.map((k) => ys[k - 1])]; };
  const ks = (p) => kset(p.curve.length);
  const ys = (p) => thin(p, p.curve)[1];
  const build = (bNul, bBase, bSel) => {
    const traces = [], notes = [];
    const addBand = (p, b, name, colour) => {
      if (!b) return null;
      traces.push(...band(ks(p), thin(p, b.low)[1], thin(p, b.high)[1], name, colour));
      return b.method;
    };
    if (nul) {
      const m = addBand(nul, bNul, "null band (base re-probed)", "rgba(120,120,120,0.25)");
      if (!m) traces.push({ x: ks(nul), y: ys(nul), mode: "lines", line: { dash: "dot", color: "#888" }, name: "null (base re-probed)" });
    }
    if (base) {
      const m = addBand(base, bBase, "base 95% band", "rgba(0,0,0,0.12)");
      if (m) notes.push("Bands: " + m + "; the pass@1 and pass@n intervals in view 2 are the run's bootstrap CIs.");
    }
    if (sel) addBand(sel, bSel, "step " + sel.step + " 95% band", "rgba(214,39,40,0.18)");
    cks.forEach((p, j) => {
      if (p === sel) return;
      traces.push({ x: ks(p), y: ys(p), mode: "lines", line: { color: ramp(cks.length > 1 ? j / (cks.length - 1) : 1), width: 1 },
        opacity: 0.6, name: "step " + p.step });
    });
    if (base) traces.push({ x: ks(base), y: ys(base), mode: "lines", line: { color: "#000", width: 3 }, name: "base" });
    if (sel) traces.push({ x: ks(sel), y: ys(sel), mode: "lines", line: { color: "#d62728", width: 3 }, name: "step " + sel.step + " (selected)" });
    return { traces, notes };
  };
  const div = document.getElementById("plot-boundary");
  div.setAttribute("data-step", sel ? sel.step : "");
  const nMax = Math.max(1, ...[base, nul, ...cks].filter(Boolean).map((p) => p.curve.length));
  const layout = { margin: { t: TOP }, xaxis: logKAxis(nMax, "k"),
    yaxis: { title: { text: "pass@k (" + (base ? base.metric : "") + ")" }, range: [0, 1.02] }, legend: { orientation: "v" } };
  // Until plotly is there, the curves are sketched at once and the bands added when they come (a
  // store that no counts index knows yet is counted for them: seconds).
  if (!window.Plotly && window.BoundlabSketch && BoundlabSketch.draw(div, build(null, null, null).traces, layout)) {
    div.setAttribute("data-drawn", "sketch");
    performance.mark("boundlab:sketch-curves-plot-boundary");
  }
  const { traces, notes } = build(...(await Promise.all([bands.nul, bands.base, bands.sel])));
  document.getElementById("band-note").textContent = notes.join(" ");
  await render(div, traces, layout);
}

// -- view 2 -----------------------------------------------------------------------------------
async function drawSteps() {
  const cks = checkpoints(), base = baseProbe();
  const x = cks.map((p) => p.step);
  const err = (key) => ({ type: "data", symmetric: false, array: cks.map((p) => p[key + "_ci_high"] - p[key]), arrayminus: cks.map((p) => p[key] - p[key + "_ci_low"]) });
  const n = base ? base.n : cks.length ? cks[0].n : "n";
  const traces = [
    { x, y: cks.map((p) => p["pass@1"]), error_y: err("pass@1"), mode: "lines+markers", name: "pass@1", line: { color: "#1f77b4" } },
    { x, y: cks.map((p) => p["pass@n"]), error_y: err("pass@n"), mode: "lines+markers", name: "pass@" + n, line: { color: "#d62728" } },
    { x, y: cks.map((p) => p.crossing_k), mode: "markers", yaxis: "y2", marker: { symbol: "x", size: 10, color: "#2ca02c" },
      name: cks.some((p) => p.crossing_k !== null && p.crossing_k !== undefined) ? "crossing k" : "crossing k (none: no curve crosses the base)" },
  ];
  const shapes = [];
  if (base) {
    for (const [key, c] of [["pass@1", "#1f77b4"], ["pass@n", "#d62728"]]) {
      shapes.push({ type: "line", xref: "paper", x0: 0, x1: 1, y0: base[key], y1: base[key], line: { color: c, dash: "dash" } });
      traces.push({ x: [null], y: [null], mode: "lines", line: { color: c, dash: "dash" }, name: "base " + (key === "pass@n" ? "pass@" + n : key) });
    }
  }
  // The crossing k lies in 1..n: that axis has fixed ticks even when no checkpoint has one (plotly's
  // autorange over no data drew "2, 7, 3, 122.3813, 5, 2").
  const nK = typeof n === "number" ? n : 1;
  await render("plot-steps", traces, { margin: { t: TOP }, shapes, xaxis: stepAxis(x, "training step"),
    yaxis: { title: { text: "pass@k" }, range: [0, 1.02] },
    yaxis2: { ...logKAxis(nK, "crossing k"), overlaying: "y", side: "right" },
    legend: { x: 1.07, xanchor: "left" } });  // right of the crossing-k axis's title, not over it
}

// -- view 3 -----------------------------------------------------------------------------------
function drawMap() {
  const m = state.map, t = document.getElementById("problem-map");
  t.replaceChildren();
  if (!m || !m.has_store) { t.appendChild(el("caption", {}, "No probe store found for this run (pass --store)")); return; }
  const head = el("tr");
  head.appendChild(el("th", {}, "problem"));
  m.columns.forEach((c) => head.appendChild(el("th", {}, (c.kind === "checkpoint" ? "step " + c.step : c.kind)
    + (c.unlike_base && c.unlike_base.length ? " (unlike base)" : ""))));
  // Lost/gained against a base probed with other settings: named under the table (boundlab.probe.alike).
  const unlike = m.columns.filter((c) => c.unlike_base && c.unlike_base.length)
    .map((c) => (c.kind === "checkpoint" ? "step " + c.step : c.kind) + " was probed unlike the base: " + c.unlike_base.join("; "));
  if (unlike.length) t.appendChild(el("caption", { class: "note", style: "caption-side: bottom" }, unlike.join(" · ")));
  const thead = el("thead"); thead.appendChild(head); t.appendChild(thead);
  const tb = el("tbody");
  const lost = m.columns.map((c) => new Set(c.lost)), gained = m.columns.map((c) => new Set(c.gained));
  m.problems.forEach((pid, j) => {
    const tr = el("tr", { "data-p": j });
    tr.appendChild(el("td", { class: "pid" }, pid));
    m.columns.forEach((c, ci) => {
      const cell = c.cells[j];
      const td = el("td", {}, cell ? cell[0] + "/" + cell[1] : "-");
      if (cell && cell[1] > 0) {
        const r = cell[0] / cell[1];
        td.style.background = "rgba(31,119,180," + (0.08 + 0.6 * r).toFixed(2) + ")";
      }
      if (lost[ci].has(j)) { td.className = "lost"; td.title = "lost"; }
      if (gained[ci].has(j)) { td.className = "gained"; td.title = "gained"; }
      tr.appendChild(td);
    });
    tr.addEventListener("click", () => { state.problem = j; state.page = 0; drawSamples(); });
    tb.appendChild(tr);
  });
  t.appendChild(tb);
}

// -- view 5 -----------------------------------------------------------------------------------
async function drawSamples() {
  const box = document.getElementById("samples");
  if (state.problem === null) return;
  document.querySelectorAll("#problem-map tr.selected").forEach((r) => r.classList.remove("selected"));
  const row = document.querySelector('#problem-map tr[data-p="' + state.problem + '"]');
  if (row) row.classList.add("selected");
  if (STATIC) { box.replaceChildren(el("p", { class: "note" }, "Samples need the store: run the dashboard on this run to read them.")); return; }
  const sel = checkpoints()[state.slider] || baseProbe();
  let d;
  try {
    d = await getJSON("api/run/" + state.overview.id + "/problem/" + state.problem + "?probe=" + sel.index + "&page=" + state.page);
  } catch (e) { box.replaceChildren(el("p", { class: "note" }, String(e))); return; }
  box.replaceChildren();
  box.appendChild(el("h3", { id: "samples-title" }, "problem " + d.problem + ", page " + (d.page + 1)));
  const nav = el("div", { class: "controls" });
  const prev = el("button", { id: "samples-prev" }, "previous page");
  const next = el("button", { id: "samples-next" }, "next page");
  const total = Math.max(...d.sides.map((s) => s.total));
  prev.disabled = d.page === 0; next.disabled = (d.page + 1) * d.page_size >= total;
  prev.addEventListener("click", () => { state.page -= 1; drawSamples(); });
  next.addEventListener("click", () => { state.page += 1; drawSamples(); });
  nav.append(prev, next, el("span", { class: "note" }, d.page_size + " per page"));
  box.appendChild(nav);
  for (const side of d.sides) {
    const col = el("div", { class: "side", "data-who": side.who });
    const ok = side.samples.filter((s) => s.correct).length;
    col.appendChild(el("h4", {}, (side.kind === "base" ? "base" : "step " + side.step) + ": samples " +
      (d.page * d.page_size + 1) + "-" + (d.page * d.page_size + side.samples.length) + " of " + side.total + " (" + ok + " correct on this page)"));
    for (const s of side.samples) {
      const div = el("div", { class: "sample " + (s.correct ? "ok" : "bad"), "data-idx": s.idx });
      div.appendChild(el("div", { class: "meta" }, "#" + s.idx + "  " + (s.correct ? "correct" : "wrong") +
        (s.strict === null ? "" : s.strict ? ", valid trace" : ", trace not valid") + "  outcome: " + s.outcome + "  extracted: " + (s.extracted === null ? "(none)" : s.extracted)));
      div.appendChild(el("pre", { class: "text" }, s.text_dropped ? "(text not kept: probe.keep_text=compact)" : s.text));
      col.appendChild(div);
    }
    box.appendChild(col);
  }
}

// -- view 4 -----------------------------------------------------------------------------------
async function drawGroups() {
  const probes = state.overview.probes.filter((p) => p.groups && p.kind !== "null");
  const t = document.getElementById("groups-table");
  t.replaceChildren();
  const Plotly = await plotlyReady();
  const plot = document.getElementById("plot-groups");
  // no tags: the caption alone, not an empty plot box
  plot.style.display = probes.length ? "" : "none";
  if (!probes.length) { Plotly.purge("plot-groups"); t.appendChild(el("caption", {}, "This run's task has no per-problem tag (task.group_by).")); return; }
  const tags = Object.keys(probes[0].groups), n = probes[0].n;
  const col = colourBy(tags);
  const traces = [];
  const base = probes.find((p) => p.kind === "base"), cks = probes.filter((p) => p.kind === "checkpoint");
  for (const tag of tags) {
    const x = cks.map((p) => p.step);
    traces.push({ x, y: cks.map((p) => (p.groups[tag] || {})["pass@n"]), mode: "lines+markers", name: tag + " pass@" + n, line: { color: col(tag) } });
    traces.push({ x, y: cks.map((p) => (p.groups[tag] || {})["pass@1"]), mode: "lines", name: tag + " pass@1", line: { color: col(tag), dash: "dot" } });
    if (base && cks.length) traces.push({ x: [x[0], x[x.length - 1]], y: [base.groups[tag]["pass@n"], base.groups[tag]["pass@n"]], mode: "lines", line: { color: col(tag), dash: "dash", width: 1 }, name: tag + " base pass@" + n });
  }
  await Plotly.react("plot-groups", traces, { margin: { t: TOP }, xaxis: stepAxis(cks.map((p) => p.step), "training step"), yaxis: { title: { text: "pass@k by " + probes[0].group_by }, range: [0, 1.02] } });
  const head = el("tr");
  ["probe", probes[0].group_by, "problems", "pass@1", "pass@" + n, "d pass@" + n, "lost", "gained"].forEach((h) => head.appendChild(el("th", {}, h)));
  t.appendChild(head);
  for (const p of probes) for (const tag of tags) {
    const g = p.groups[tag] || {};
    const tr = el("tr");
    [probeName(p), tag, g.problems, fmt(g["pass@1"]), fmt(g["pass@n"]), g["delta_pass@n"] === undefined ? "" : fmt(g["delta_pass@n"]), g.lost ?? "", g.gained ?? ""]
      .forEach((v) => tr.appendChild(el("td", {}, v)));
    t.appendChild(tr);
  }
}

// -- view 6 -----------------------------------------------------------------------------------
async function drawSweeps() {
  const d = await getJSON("api/sweep"), box = document.getElementById("sweeps");
  const Plotly = await plotlyReady();
  box.replaceChildren();
  if (!d.sweeps.length) { box.appendChild(el("p", { class: "note" }, "No sweep dir among the paths (a folder holding several run dirs, e.g. a Hydra multirun).")); return; }
  d.sweeps.forEach((s, si) => {
    const wrap = el("div", { class: "sweep" });
    wrap.appendChild(el("h3", {}, s.name + " (" + s.runs.length + " runs; swept: " + (s.swept.join(", ") || "nothing differs") + ")"));
    const pick = el("select", { id: "sweep-key-" + si });
    (s.swept.length ? s.swept : ["run"]).forEach((k) => pick.appendChild(el("option", { value: k }, k)));
    wrap.appendChild(el("label", {}, "colour by "));
    wrap.appendChild(pick);
    const a = el("div", { class: "plot", id: "plot-sweep-" + si }), b = el("div", { class: "plot", id: "plot-sweep-curve-" + si });
    wrap.append(a, b);
    box.appendChild(wrap);
    const draw = () => {
      const key = pick.value, val = (r) => (key === "run" ? r.label : r.values[key]);
      const col = colourBy(s.runs.map(val));
      const steps = [], curves = [];
      for (const r of s.runs) {
        const name = key + "=" + val(r) + " (" + r.label + ")";
        steps.push({ x: r.steps, y: r["pass@n"], mode: "lines+markers", name: name + " pass@n", line: { color: col(val(r)) } });
        steps.push({ x: r.steps, y: r["pass@1"], mode: "lines", name: name + " pass@1", line: { color: col(val(r)), dash: "dot" } });
        if (r.last_curve) curves.push({ x: r.last_curve.map((_, i) => i + 1), y: r.last_curve, mode: "lines", name: name + " last checkpoint", line: { color: col(val(r)) } });
      }
      // each distinct base once (a sweep usually shares one), in black, dashed
      const bases = new Map();
      for (const r of s.runs) if (r.base_curve && !bases.has(r.base_key || r.label)) bases.set(r.base_key || r.label, r);
      for (const r of bases.values()) {
        curves.push({ x: r.base_curve.map((_, i) => i + 1), y: r.base_curve, mode: "lines", line: { color: "#000", dash: "dash", width: 2 },
          name: bases.size > 1 ? "base of " + r.label : "base" });
      }
      const nK = Math.max(1, ...s.runs.map((r) => (r.last_curve ? r.last_curve.length : 1)));
      Plotly.react(a, steps, { margin: { t: TOP + 20 }, title: { text: "pass@1 (dotted) and pass@n over steps" }, xaxis: stepAxis(s.runs.flatMap((r) => r.steps), "step"), yaxis: { range: [0, 1.02] } });
      Plotly.react(b, curves, { margin: { t: TOP + 20 }, title: { text: "pass@k of each run's last checkpoint" }, xaxis: logKAxis(nK, "k"), yaxis: { range: [0, 1.02] } });
    };
    pick.addEventListener("change", draw);
    draw();
  });
}

// -- the page ---------------------------------------------------------------------------------
async function loadRun(id) {
  state.run = id;
  state.overview = await getJSON("api/run/" + id + "/overview");
  const cks = checkpoints();
  if (state.slider >= cks.length || state.followLast) state.slider = Math.max(cks.length - 1, 0);
  performance.mark("boundlab:overview");
  // Views 1, 2 and 4 need only probes.jsonl (and view 1's bands, requested now, while plotly.min.js
  // may still be loading); the map reads every probe's counts from the store (seconds when no
  // counts index has them), so it comes last.
  const bands = fetchBands();
  // Both views are sketched as soon as their data is here and drawn by plotly once it is ready.
  const drawn = Promise.all([drawSteps(), drawBoundary(bands)]);
  // plotly once the bands are here (about 0.1 s with the counts index) and the sketches are on
  // screen (a frame painted: requestAnimationFrame, then the next task), or after 1 s (a store
  // being counted, a hidden tab): running plotly holds the main thread, so neither a response nor
  // a paint gets through until it is done.
  const painted = () => new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
  painted().then(() => performance.mark("boundlab:views12-shown"));  // both sketched (view 1 maybe without its bands)
  const shown = Promise.all(Object.values(bands)).then(painted).then(() => performance.mark("boundlab:bands-shown"));
  Promise.race([shown, new Promise((ok) => setTimeout(ok, 1000))]).then(loadPlotly);
  await drawn;
  performance.mark("boundlab:views12-drawn");
  await drawGroups();
  try { state.map = await getJSON("api/run/" + id + "/problems"); } catch (e) { state.map = null; }
  drawMap();
  if (state.problem !== null) await drawSamples();
  document.getElementById("live-status").textContent = "probes: " + state.overview.probes.length +
    (STATIC ? " (static export)" : " (live; updated " + new Date().toLocaleTimeString() + ")");
  document.body.setAttribute("data-ready", "1");
}

async function fillRuns() {
  const runs = await getJSON("api/runs"), sel = document.getElementById("run-select");
  const keep = sel.value;
  sel.replaceChildren();
  runs.forEach((r) => sel.appendChild(el("option", { value: r.id }, r.label + " (" + r.probes + " probes)")));
  if (keep !== "") sel.value = keep;
  return runs;
}

async function poll() {
  try {
    const v = (await getJSON("api/version")).version;
    if (v !== state.version) {
      state.version = v;
      await fillRuns();
      await loadRun(state.run);
      await drawSweeps();
    }
  } catch (e) { document.getElementById("live-status").textContent = "server unreachable: " + e.message; }
  setTimeout(poll, POLL_MS);
}

async function start() {
  setTimeout(loadPlotly, 3000);  // whatever happens to the first requests, plotly is asked for
  const runs = await fillRuns();  // the first request leaves before plotly.min.js is asked for
  state.followLast = true;  // a live page follows the newest checkpoint until the slider is moved
  const slider = document.getElementById("step-slider");
  slider.addEventListener("input", () => { state.slider = Number(slider.value); state.followLast = false; drawBoundary(); if (state.problem !== null) drawSamples(); });
  document.getElementById("run-select").addEventListener("change", (e) => { state.problem = null; state.followLast = true; loadRun(Number(e.target.value)); });
  await loadRun(runs[0].id);
  await drawSweeps();
  if (!STATIC) { state.version = (await getJSON("api/version")).version; setTimeout(poll, POLL_MS); }
}

start().catch((e) => { document.getElementById("live-status").textContent = "error: " + e.message; console.error(e); });
