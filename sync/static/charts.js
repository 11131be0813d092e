// DynaDesk board charts: inline SVG drawn here (no library, no CDN). They only draw numbers the
// server computed: each row's Dynascore contributions and its rank-stability range.
"use strict";

const DynaCharts = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  // Okabe-Ito: distinguishable with the common colour-vision deficiencies, readable on white.
  const COLORS = {perf: "#0072B2", throughput: "#E69F00", memory: "#009E73", robustness: "#CC79A7",
                  fairness: "#56B4E9"};
  const FALLBACK = ["#D55E00", "#F0E442", "#999999"];

  function color(metric, i) { return COLORS[metric] || FALLBACK[i % FALLBACK.length]; }

  function svg(tag, attrs = {}, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function num(v) { return Math.abs(v) >= 100 ? v.toFixed(1) : v.toFixed(2); }

  // A row's parts as drawn: relative to the board's stated reference (issue 44: the baseline or the lowest-ranked
  // row) where there is one, else its absolute contributions.
  function partsOf(row, reference) {
    return (reference ? row.relative_contributions : row.contributions) || {};
  }

  // The scale every row's bar shares: the largest positive and negative sums on the board.
  function scaleOf(rows, reference) {
    let pos = 0, neg = 0;
    for (const r of rows) {
      const parts = Object.values(partsOf(r, reference));
      pos = Math.max(pos, parts.filter(v => v > 0).reduce((a, b) => a + b, 0));
      neg = Math.max(neg, -parts.filter(v => v < 0).reduce((a, b) => a + b, 0));
    }
    return {pos, neg};
  }

  // One row's Dynascore as a stacked bar of its metrics' contributions (weight x converted value).
  function breakdown(row, metrics, scale, reference, width = 170, height = 16) {
    const total = (scale.pos + scale.neg) || 1;
    const x0 = width * scale.neg / total;
    const parts = metrics.map(m => [m, partsOf(row, reference)[m] || 0]);
    const label = reference
      ? `Dynascore ${num(row.dynascore)}; against ${reference.label} (${reference.kind}): ` +
        parts.map(([m, v]) => `${m} ${v >= 0 ? "+" : ""}${num(v)}`).join(", ")
      : `Dynascore ${num(row.dynascore)} = ` + parts.map(([m, v]) => `${m} ${num(v)}`).join(" + ");
    const root = svg("svg", {width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label,
                              class: "breakdown"});
    root.append(svg("title", {}, label));
    let right = x0, left = x0;
    parts.forEach(([m, v], i) => {
      const w = Math.abs(v) / total * width;
      if (w <= 0) return;
      const x = v >= 0 ? right : left - w;
      if (v >= 0) right += w; else left -= w;
      const rect = svg("rect", {x: x.toFixed(2), y: 1, width: w.toFixed(2), height: height - 2, fill: color(m, i),
                                "data-metric": m});
      rect.append(svg("title", {}, `${m}: ${num(v)}`));
      root.append(rect);
    });
    root.setAttribute("data-reference", reference ? reference.label : "");
    if (scale.neg > 0) root.append(svg("line", {x1: x0, x2: x0, y1: 0, y2: height, stroke: "#1b1b1b"}));
    return root;
  }

  function legend(metrics, reference) {
    const box = document.createElement("p");
    box.className = "legend";
    box.append(reference ? `Score breakdown, each metric's points against ${reference.label} (${reference.kind}); ` +
                           "the Dynascore column is absolute: " : "Score breakdown: ");
    metrics.forEach((m, i) => {
      const key = document.createElement("span");
      key.className = "key";
      const sw = svg("svg", {width: 12, height: 12, "aria-hidden": "true"});
      sw.append(svg("rect", {width: 12, height: 12, fill: color(m, i)}));
      key.append(sw, ` ${m}`);
      box.append(key);
    });
    return box;
  }

  // Best and worst rank of each row when any one weight varies (the server's rank_stability).
  function stability(rows, total) {
    const shown = rows.filter(r => r.stability);
    const left = 330, right = 20, rowH = 22, top = 28;
    const width = 860, plot = width - left - right;
    const height = top + rowH * shown.length + 10;
    const n = Math.max(total, 2);
    const x = rank => left + (rank - 1) / (n - 1) * plot;
    const root = svg("svg", {width, height, viewBox: `0 0 ${width} ${height}`, role: "img", class: "stability",
                              "aria-label": "Rank stability: each model's best and worst rank when one weight varies"});
    const ticks = n <= 12 ? [...Array(n).keys()].map(i => i + 1) : [1, Math.round(n / 4), Math.round(n / 2),
                                                                      Math.round(3 * n / 4), n];
    for (const t of ticks) {
      root.append(svg("line", {x1: x(t), x2: x(t), y1: top - 6, y2: height - 6, stroke: "#d0d0d0"}));
      root.append(svg("text", {x: x(t), y: top - 10, "text-anchor": "middle", class: "tick"}, `#${t}`));
    }
    shown.forEach((r, i) => {
      const y = top + i * rowH + rowH / 2;
      const s = r.stability;
      const g = svg("g", {"data-model": r.model, "data-min": s.min_rank, "data-max": s.max_rank});
      g.append(svg("title", {}, `${r.label || r.model}: rank ${r.rank}, between #${s.min_rank} and #${s.max_rank}`));
      g.append(svg("text", {x: left - 8, y: y + 4, "text-anchor": "end", class: "name"},
                   (r.label || r.model).slice(0, 48)));
      g.append(svg("line", {x1: x(s.min_rank), x2: x(s.max_rank), y1: y, y2: y, stroke: "#0072B2",
                            "stroke-width": 6, "stroke-linecap": "round"}));
      g.append(svg("circle", {cx: x(r.rank), cy: y, r: 5, fill: "#1b1b1b"}));
      root.append(g);
    });
    return root;
  }

  // A 95% interval of the task metric on a 0-100 scale, with the row's value as a tick.
  function intervalBar(iv, value, width = 60, height = 10) {
    const x = v => Math.max(0, Math.min(100, v)) / 100 * width;
    const label = `95% interval ${num(iv.low)}–${num(iv.high)} (${iv.resamples} resamples)`;
    const root = svg("svg", {width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label,
                              class: "interval", "data-low": iv.low, "data-high": iv.high});
    root.append(svg("title", {}, label));
    root.append(svg("line", {x1: 0, x2: width, y1: height / 2, y2: height / 2, stroke: "#d0d0d0"}));
    root.append(svg("rect", {x: x(iv.low).toFixed(2), y: 2, width: Math.max(1.5, x(iv.high) - x(iv.low)).toFixed(2),
                             height: height - 4, fill: "#0072B2"}));
    if (value !== undefined && value !== null) {
      root.append(svg("line", {x1: x(value), x2: x(value), y1: 0, y2: height, stroke: "#1b1b1b"}));
    }
    return root;
  }

  return {breakdown, legend, scaleOf, stability, color, intervalBar};
})();
