// DynaDesk board page: plain JS, no CDN. The server ranks (the one ScoreBoard); this page only
// keeps the view in the URL, asks /api/leaderboard with the URL's parameters and draws the answer.
// Every control that changes the ranking (weights, dataset weights, hardware class, runner, sandbox, audit)
// is a URL parameter, as are the sort and the expanded columns: a copied URL reproduces the view. The
// default hardware class is the operator's and is never written into the URL: a link without
// ?hardware_class= keeps following it; a class chosen in the menu is in the URL.
"use strict";

const METRICS = ["perf", "throughput", "memory", "robustness", "fairness"];
const DEFAULT_WEIGHTS = {perf: 4, throughput: 1, memory: 1, robustness: 1, fairness: 1};
const FILTERS = ["hardware_class", "runner", "sandboxed", "audit", "exclude_noisy", "rates"];  // rates=dynaboard: the rule as a view
const LIMIT = 1000;  // every row the board allows on one page: sorting is over all of them

const state = {params: new URLSearchParams(location.search), tasks: [], board: null, token: 0, timer: null};

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") node.textContent = v; else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== "") node.append(c);
  return node;
}

function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  return Math.abs(v) >= 100 ? v.toFixed(1) : v.toFixed(2);
}

// ------------------------------------------------------------------ URL state
function isApiParam(k) {
  return k.startsWith("weight.") || k.startsWith("dataset.") || FILTERS.includes(k) || k === "memory_budget";
}

function apiQuery() {
  const q = new URLSearchParams();
  for (const [k, v] of state.params) if (isApiParam(k)) q.set(k, v);
  q.set("stability", "yes");
  q.set("limit", String(LIMIT));
  return q.toString();
}

function writeUrl() {
  const text = state.params.toString();
  history.replaceState(null, "", text ? `?${text}` : location.pathname);
  const share = document.getElementById("share-url");
  if (share) share.value = location.href;
}

function setParam(key, value, fallback) {
  if (value === null || value === "" || String(value) === String(fallback)) state.params.delete(key);
  else state.params.set(key, String(value));
}

function currentTask() {
  const asked = state.params.get("task");
  if (asked) return asked;
  const sorted = [...state.tasks].sort((a, b) => (b.submissions - a.submissions) || a.name.localeCompare(b.name));
  return sorted.length ? sorted[0].name : null;
}

function sortState() {
  const [key, dir] = (state.params.get("sort") || "rank:asc").split(/:(?=asc$|desc$)/);
  return {key, dir: dir === "desc" ? "desc" : "asc"};
}

function expanded() {
  const raw = state.params.get("expand");
  return new Set(raw === null ? ["perf"] : raw.split(",").filter(Boolean));
}

// ------------------------------------------------------------------ tasks: tabs and collapsed empties
function renderTasks() {
  const current = currentTask();
  const tabs = document.getElementById("tabs");
  const empties = document.getElementById("empty-tasks");
  tabs.replaceChildren();
  empties.replaceChildren();
  const populated = state.tasks.filter(t => t.submissions > 0 || t.name === current)
    .sort((a, b) => (b.submissions - a.submissions) || a.name.localeCompare(b.name));
  for (const t of populated) {
    const tab = el("a", {role: "tab", href: `/?task=${encodeURIComponent(t.name)}`, id: `tab-${t.name}`,
                         "aria-selected": String(t.name === current), class: t.name === current ? "tab active" : "tab"},
                   `${t.title} `, el("small", {text: `${t.submissions} model${t.submissions === 1 ? "" : "s"}`}));
    tabs.append(tab);
  }
  const empty = state.tasks.filter(t => t.submissions === 0 && t.name !== current);
  if (empty.length) {
    empties.append(el("h2", {text: "Tasks with no submissions yet"}));
    for (const t of empty) {
      const names = t.datasets.map(d => d.name).join(", ") || "none yet";
      empties.append(el("details", {class: "empty-task", id: `task-${t.name}`},
        el("summary", {}, `${t.title} (${t.name}) — `, el("em", {text: "no submissions yet"})),
        el("p", {}, `Metric: ${t.metric}. Accepted datasets: ${names}. `,
           el("a", {href: `/?task=${encodeURIComponent(t.name)}`, text: "Open this board"}))));
    }
  }
}

// ------------------------------------------------------------------ controls (built once per task/filter)
function slider(kind, name, value, fallback) {
  const id = `w-${kind}-${name}`;
  const out = el("output", {for: id, text: String(value)});
  const input = el("input", {type: "range", id, min: "0", max: String(Math.max(5, Number(value) || 0)), step: "0.5",
                             value: String(value), "data-kind": kind, "data-name": name,
                             "aria-label": `${kind} weight ${name}`});
  input.addEventListener("input", () => {
    out.textContent = input.value;
    setParam(`${kind === "metric" ? "weight" : "dataset"}.${name}`, input.value, fallback);
    writeUrl();
    clearTimeout(state.timer);
    state.timer = setTimeout(refresh, 80);
  });
  return el("label", {for: id}, el("span", {text: name}), input, out);
}

function select(id, label, value, options, onChange) {
  const node = el("select", {id, name: id});
  for (const [v, text] of options) node.append(el("option", {value: v, text, selected: v === value}));
  node.addEventListener("change", () => onChange(node.value));
  return el("label", {for: id, class: "filter"}, el("span", {text: label}), node);
}

function filterChanged(key) {
  return value => {
    setParam(key, value, "");
    writeUrl();
    refresh({controls: true, focus: key});
  };
}

function classText(c) {
  const who = `${c.submitters} submitter${c.submitters === 1 ? "" : "s"}`;
  return `${c.label} — ${c.models} model${c.models === 1 ? "" : "s"}, ${who}, ${c.status}`;
}

function defaultText(board) {
  const d = board.default_class || {class: board.hardware_class, source: "automatic"};
  const c = board.hardware_classes.find(x => x.class === d.class);
  const label = c ? classText(c) : d.class;
  return `Default: ${label} (${d.source === "operator" ? "set by the operator" : "chosen by distinct submitters"})`;
}

function elsewhere(board) {
  // rows shown as "reproduced by N" in a declared class were re-run by an auditor on another machine class
  const n = board.rows.filter(r => r.audit && r.audit.state.startsWith("reproduced")).length;
  return n ? ` ${n} row${n === 1 ? "" : "s"} shown here ${n === 1 ? "was" : "were"} reproduced by an auditor ` +
             "on another machine class." : "";
}

function classStatus(board) {
  const c = board.hardware_classes.find(x => x.class === board.hardware_class);
  const d = board.default_class || {};
  const p = el("p", {class: "class-status", id: "class-status"});
  if (!c) return p;
  const chosen = state.params.has("hardware_class") ? "chosen in this link"
    : d.source === "operator" ? "the operator's default" : "the default, chosen by distinct submitters";
  p.append(el("strong", {text: `Hardware class ${c.label}`}), ` (${chosen}): `,
           c.status === "confirmed"
             ? el("span", {class: "confirmed", text: `confirmed — an auditor re-ran rows of ${c.confirmed_submitters} ` +
                          `submitter${c.confirmed_submitters === 1 ? "" : "s"} on this machine class.`})
             : el("span", {class: "declared warn", text: "declared — only its submitters say their runs were on this " +
                          "machine class; no auditor has re-run a row on it." + elsewhere(board)}));
  if (!state.params.has("hardware_class") && d.reason) {
    p.append(" ", el("small", {id: "default-why", text: `Why this class: ${d.reason}.`}));
  }
  if (d.note) p.append(" ", el("small", {text: d.note}));
  return p;
}

function renderControls(panel, board) {
  const classes = [["", defaultText(board)], ...board.hardware_classes.map(c => [c.class, classText(c)])];
  if (board.hardware_classes.length > 1 || board.hardware_class === "all") {
    classes.push(["all", "All classes (measured metrics NOT comparable)"]);
  }
  const filters = el("fieldset", {class: "filters"}, el("legend", {text: "Rows"}),
    select("hardware_class", "Hardware class", state.params.get("hardware_class") || "", classes,
           filterChanged("hardware_class")),
    select("runner", "Runner", state.params.get("runner") || "",
           [["", "any runner"], ...board.runners.map(r => [r, r])], filterChanged("runner")),
    select("sandboxed", "Sandboxed", state.params.get("sandboxed") || "",
           [["", "either"], ["yes", "sandboxed only"], ["no", "not sandboxed only"]], filterChanged("sandboxed")),
    select("exclude_noisy", "Noisy measurements", state.params.get("exclude_noisy") || "",
           [["", "ranked, marked noisy"], ["yes", "left out"]], filterChanged("exclude_noisy")),
    auditToggle(board), classStatus(board));
  const metricBox = el("fieldset", {}, el("legend", {text: "Metric weights"}));
  for (const m of METRICS) {
    const v = state.params.get(`weight.${m}`) ?? DEFAULT_WEIGHTS[m];
    metricBox.append(slider("metric", m, v, DEFAULT_WEIGHTS[m]));
  }
  const dataBox = el("fieldset", {}, el("legend", {text: "Dataset weights"}));
  const submitted = board.datasets.filter(d => d.submitted);
  for (const d of submitted) dataBox.append(slider("dataset", d.name, state.params.get(`dataset.${d.name}`) ?? 1, 1));
  if (!submitted.length) dataBox.append(el("p", {text: "no dataset has submissions yet"}));
  const share = el("div", {class: "share"},
    el("label", {for: "share-url", text: "This view's link"}),
    el("input", {id: "share-url", readonly: true, value: location.href}),
    el("a", {href: `/?task=${encodeURIComponent(board.task)}`, text: "default view"}));
  panel.querySelector(".controls").replaceChildren(filters, metricBox, dataBox, share);
}

// ------------------------------------------------------------------ table
function columns(board) {
  const open = expanded();
  const cols = [
    {key: "rank", label: "Rank", num: true, get: r => r.rank, cell: (r, td) => { td.textContent = String(r.rank); }},
    {key: "model", label: "Model", get: r => (r.label || r.model).toLowerCase(), cell: modelCell},
    {key: "dynascore", label: "Dynascore", num: true, get: r => r.dynascore, cls: "dynascore"},
    {key: "rank_interval", label: "Rank 95%", sub: "resampled examples", num: true,
     get: r => (r.rank_interval ? r.rank_interval[1] - r.rank_interval[0] : null), cell: rankIntervalCell},
    {key: "tied", label: "Tied with next", get: r => r.tied_with || "", cell: tiedCell},
    {key: "breakdown", label: "Score breakdown", sub: breakdownSub(board), sortable: false, cell: (r, td, ctx) =>
      td.append(DynaCharts.breakdown(r, Object.keys(board.metrics), ctx.scale, ctx.reference))},
  ];
  for (const m of METRICS) {
    if (!board.metrics[m]) continue;
    const unit = board.units[m] || board.metrics[m].unit || "";
    const sub = m === "perf" ? `${board.perf_metric.metric}, ${unit}` : unit;
    const measured = board.measured_metrics.includes(m);
    const datasets = [...new Set(board.rows.flatMap(r => Object.keys((r.per_dataset || {})[m] || {})))]
      .filter(Boolean).sort();
    const covered = m === "robustness" || m === "fairness";
    cols.push({key: m, label: m, sub, num: true, metric: m, datasets, measured, get: r => r.values[m],
               cell: covered ? coveredCell(m) : m === "perf" ? perfCell : undefined});
    if (open.has(m)) {
      for (const d of datasets) {
        cols.push({key: `${m}@${d}`, label: d, sub: m, num: true, perDataset: true,
                   get: r => ((r.per_dataset || {})[m] || {})[d],
                   cell: m === "perf" ? intervalCell(d) : undefined});
      }
    }
  }
  cols.push(
    {key: "date", label: "Submitted", get: r => r.created_at, cell: (r, td) => {
      td.textContent = (r.created_at || "").slice(0, 10); td.title = r.created_at || "";
    }},
    {key: "submitter", label: "Submitter", get: r => (r.submitter || "").toLowerCase(), cell: (r, td) => {
      td.textContent = r.submitter;
    }},
    {key: "hardware", label: "Hardware class", get: r => r.hardware_label, cell: (r, td) => {
      td.textContent = r.hardware_label; td.title = r.hardware_class; td.className = `hardware ${r.hardware_status || ""}`;
      if (r.hardware_status) td.append(" ", el("small", {class: `class-mark ${r.hardware_status}`, text: r.hardware_status}));
    }},
    {key: "runner", label: "Runner", get: r => r.runner, cell: (r, td) => { td.textContent = r.runner; }},
    {key: "sandboxed", label: "Sandboxed", get: r => (r.sandboxed ? 1 : 0), cell: (r, td) => {
      td.textContent = r.sandboxed ? "yes" : "NO"; td.className = r.sandboxed ? "sandboxed yes" : "sandboxed no";
    }},
    {key: "audit", label: "Audit", get: r => r.audit.state, cell: auditCell},
    {key: "links", label: "Documents", sortable: false, cell: (r, td) => {
      td.className = "links";
      td.append(el("a", {href: r.model_url, text: "model page"}), " · ",
                el("a", {href: r.bundle_url, text: "raw", title: "the signed bundle's exact bytes (JSON)"}));
    }});
  return cols;
}

// Intervals (issue 36): the server computed them at ingest; the page only draws them.
function rankIntervalCell(r, td) {
  td.className = "num rank-interval";
  const ri = r.rank_interval;
  const pending = !ri && state.board && state.board.rank_intervals_pending;
  td.textContent = ri ? (ri[0] === ri[1] ? `${ri[0]}` : `${ri[0]}–${ri[1]}`) : (pending ? "…" : "–");
  if (ri) td.title = `rank ${r.rank}; between ${ri[0]} and ${ri[1]} on 95% of resampled test sets`;
  else if (pending) td.title = "working out the rank interval at these weights";
}

function tiedCell(r, td) {
  td.className = "tied";
  if (!r.tied_with) return;
  const tests = Object.entries(r.paired_next || {}).map(([d, t]) =>
    `${d}: ${fmt(t.delta)} [${fmt(t.low)}, ${fmt(t.high)}], p ${t.p_value.toFixed(2)}`);
  td.textContent = `≈ ${r.tied_with}`;
  td.title = `not significantly different from ${r.tied_with} (paired bootstrap, 95%)\n${tests.join("\n")}`;
  td.dataset.tiedWith = r.tied_with;
}

function intervalCell(dataset) {
  return (r, td) => {
    td.className = "num";
    const v = ((r.per_dataset || {}).perf || {})[dataset];
    td.textContent = fmt(v);
    const iv = (r.intervals || {})[dataset];
    if (iv) td.append(" ", DynaCharts.intervalBar(iv, v));
  };
}

// SQuAD 2.0: HasAns / NoAns (the perf metric on answerable / unanswerable questions) beside the overall figure,
// as the local board and the app write them (dynadesk/scoring/answerability.py).
function perfCell(r, td) {
  td.className = "num";
  td.append(fmt(r.values.perf));
  const pd = r.per_dataset || {};
  const parts = [["has_ans", "HasAns"], ["no_ans", "NoAns"]]
    .filter(([m]) => typeof ((pd[m] || {})[""]) === "number")
    .map(([m, label]) => `${label} ${pd[m][""].toFixed(2)}`);
  if (parts.length) td.append(el("small", {class: "answerability", text: ` (${parts.join(" · ")})`}));
}

// Robustness and fairness beside their coverage (how many source examples the suites changed; "low" under 30),
// and robustness's suite set: DynaDesk's own or the reference's AugLy families (the two are not comparable).
const SUITE_SETS = {"dynadesk": "DynaDesk suites", "dynaboard-augly": "reference AugLy suites"};

function coveredCell(metric) {
  return (r, td) => {
    td.className = "num";
    td.append(fmt(r.values[metric]));
    const cov = (r.coverage || {})[metric];
    if (cov) {
      td.append(el("small", {class: cov.low_confidence ? "coverage low" : "coverage",
                             title: `rests on ${cov.sources} source examples the ${metric} suites changed` +
                                    (cov.low_confidence ? " (fewer than 30: low confidence)" : ""),
                             text: ` n=${cov.sources}${cov.low_confidence ? " low" : ""}`}));
    }
    if (metric === "robustness" && (r.robustness_suites || []).length) {
      td.append(el("small", {class: "suite-set", text: ` ${r.robustness_suites.map(s => SUITE_SETS[s] || s).join(", ")}`}));
    }
  };
}

function modelCell(r, td) {
  td.className = "model";
  td.append(el("a", {href: r.model_url, text: r.label || r.model}));
  if (r.look_alike) {
    td.append(el("small", {class: "look-alike", text: "another row's name looks like this one: shown with its submitter"}));
  }
  if (state.board && ((state.board.reference || {}).rows || []).some(x => x.row_id === r.row_id)) {
    td.append(" ", el("small", {class: "reference-mark", title: "this row sets the exchange rates", text: "reference"}));
  }
  if ((r.answerable_only || []).length) {
    td.append(el("small", {class: "answerable-only",
                           title: "imported without its unanswerable questions: not SQuAD 2.0 as published",
                           text: ` answerable-only: ${r.answerable_only.join(", ")}`}));
  }
  if ((r.noisy || []).length) {
    td.append(el("small", {class: "noisy", title: r.noisy.join("\n"),
                           text: "noisy measurement: its throughput and latency were timed on a busy machine"}));
  }
  if ((r.stale_datasets || []).length) {
    td.append(el("small", {class: "stale", text: `scored on a superseded version of ${r.stale_datasets.join(", ")}`}));
  }
}

function auditCell(r, td) {
  const audit = r.audit || {state: "not audited", attestations: []};
  td.className = `audit ${audit.state.split(" ")[0]}`;
  td.title = audit.attestations.map(a => `${a.auditor}: ${a.verdict} (${a.hardware_class})`).join("\n");
  td.textContent = audit.state;
}

function sortedRows(board, cols) {
  const {key, dir} = sortState();
  const col = cols.find(c => c.key === key && c.sortable !== false) || cols[0];
  const sign = dir === "desc" ? -1 : 1;
  return [...board.rows].sort((a, b) => {
    const x = col.get(a), y = col.get(b);
    const xm = x === undefined || x === null, ym = y === undefined || y === null;
    if (xm || ym) return xm === ym ? a.rank - b.rank : (xm ? 1 : -1);  // missing values last
    const c = x < y ? -1 : x > y ? 1 : 0;
    return c ? sign * c : a.rank - b.rank;
  });
}

function header(col, board) {
  const {key, dir} = sortState();
  const active = col.key === key;
  const th = el("th", {scope: "col", class: [col.num ? "num" : "", col.perDataset ? "per-dataset" : ""].join(" ").trim(),
                       "data-key": col.key, "aria-sort": active ? (dir === "asc" ? "ascending" : "descending") : null});
  const label = [col.label, col.sub ? el("small", {text: ` (${col.sub})`}) : null,
                 col.measured && !board.comparable ? el("small", {class: "warn", text: " not comparable"}) : null];
  if (col.sortable === false) { th.append(...label.filter(Boolean)); return th; }
  const button = el("button", {type: "button", class: "sort", "data-sort": col.key,
                               title: `sort by ${col.label}`}, ...label.filter(Boolean),
                    el("span", {class: "arrow", "aria-hidden": "true", text: active ? (dir === "asc" ? " ▲" : " ▼") : ""}));
  button.addEventListener("click", () => {
    const now = sortState();
    const next = now.key === col.key ? (now.dir === "asc" ? "desc" : "asc") : (col.num && col.key !== "rank" ? "desc" : "asc");
    setParam("sort", `${col.key}:${next}`, "rank:asc");
    writeUrl();
    renderTable(document.getElementById(`task-${board.task}`), board, col.key);
  });
  th.append(button);
  if (col.metric && col.datasets.length) {
    const isOpen = expanded().has(col.metric);
    const toggle = el("button", {type: "button", class: "expand", "data-expand": col.metric,
                                 "aria-expanded": String(isOpen),
                                 title: `${isOpen ? "hide" : "show"} ${col.metric} per dataset`,
                                 text: isOpen ? "−" : "+"});
    toggle.addEventListener("click", () => {
      const open = expanded();
      if (open.has(col.metric)) open.delete(col.metric); else open.add(col.metric);
      setParam("expand", [...open].sort().join(","), "perf");
      writeUrl();
      renderTable(document.getElementById(`task-${board.task}`), board, null, col.metric);
    });
    th.append(toggle);
  }
  return th;
}

function renderTable(panel, board, focusSort, focusExpand) {
  const all = columns(board);
  const table = panel.querySelector("table.board");
  drawFitted(panel, moved => drawTable(table, board, all, moved));  // fit.js: what does not fit opens under a row
  if (focusSort) table.querySelector(`button.sort[data-sort="${CSS.escape(focusSort)}"]`)?.focus();
  if (focusExpand) table.querySelector(`button.expand[data-expand="${CSS.escape(focusExpand)}"]`)?.focus();
}

function drawTable(table, board, all, moved) {
  const {main: cols, detail} = splitColumns(all, moved);  // details.js: the rest of a row opens under it
  const head = el("tr", {}, detailsHeader());
  for (const c of cols) head.append(header(c, board));
  const reference = board.breakdown_reference && board.breakdown_reference.label ? board.breakdown_reference : null;
  const ctx = {scale: DynaCharts.scaleOf(board.rows, reference), reference};
  const tbody = el("tbody");
  for (const r of sortedRows(board, all)) {
    const tr = el("tr", {"data-model": r.model, "data-row": r.row_id, "data-bundle": r.bundle_id},
                  toggleCell(r, detail, cols.length + 1, ctx));
    for (const c of cols) {
      const td = el("td", {class: c.cls || (c.num ? "num" : null)});
      if (c.cell) c.cell(r, td, ctx); else td.textContent = fmt(c.get(r));
      tr.append(td);
    }
    tbody.append(tr);
    if (openRows.has(r.row_id)) tbody.append(detailsRow(r, detail, cols.length + 1, ctx));
  }
  table.replaceChildren(el("caption", {}, `${board.task}: ${board.total} model${board.total === 1 ? "" : "s"} ranked `,
                                       detailsAllButton(table), fitNote(all, moved)),
                        el("thead", {}, head), tbody);
  return cols;
}

function renderBoard(panel, board) {
  const warn = panel.querySelector(".comparability");
  warn.replaceChildren();
  if (!board.comparable) {
    warn.append(el("strong", {text: "All hardware classes: "}),
                "measured metrics (throughput, latency, memory) were taken on different machines and are not " +
                "comparable in this view; choose one hardware class to compare them.");
    warn.hidden = false;
  } else {
    warn.hidden = true;
  }
  if (!board.rows.length) {
    panel.querySelector("table.board").replaceChildren(el("caption", {text: (board.baselines || []).length
      ? "no ranked rows: the only rows are baselines (listed below, unranked)" : "no submissions yet"}));
    panel.querySelector(".legend-box").replaceChildren();
    panel.querySelector(".stability-box").replaceChildren(el("p", {text: "No submissions yet on this board."}));
  } else {
    renderTable(panel, board);
    panel.querySelector(".legend-box").replaceChildren(DynaCharts.legend(Object.keys(board.metrics),
      board.breakdown_reference && board.breakdown_reference.label ? board.breakdown_reference : null));
    panel.querySelector(".stability-box").replaceChildren(
      el("h3", {text: "Rank stability"}),
      el("p", {class: "hint", text: "Each bar spans the best and worst rank a model reaches when any one metric " +
               "weight varies from 0 to 5 (the others kept); the dot is its rank now."}),
      DynaCharts.stability(board.rows, board.total));
  }
  renderReference(panel.querySelector(".reference-box"), board);
  renderBaselines(panel.querySelector(".baselines-box"), board);
  const left = Object.entries(board.left_off || {}).map(([m, why]) => `${m} left off: ${why}`);
  panel.querySelector(".notes").textContent = [...(board.notes || []), ...left].join(" · ");
}

function renderReference(box, board) {
  const ref = board.reference || {rows: [], amrs: {}, rule: ""};
  const rates = Object.entries(ref.amrs || {}).map(([m, v]) => `${m} ${v === null ? "–" : Number(v).toPrecision(4)}`);
  const list = el("ul", {class: "reference-rows"});
  for (const r of ref.rows) {
    list.append(el("li", {"data-row": r.row_id}, el("a", {href: `/models/${r.bundle_id}`, text: r.label}),
                   ` — ${r.submitter}, ${r.why}`));
  }
  box.replaceChildren(
    el("h3", {text: "Exchange rates"}),
    el("p", {class: "rates", text: `Rates (AMRS, per unit of each metric): ${rates.join(" · ") || "none"}.`}),
    el("p", {class: "rate-edition", text: rateSourceText(board.rates || {})}),
    el("p", {class: "hint", text: referenceHint(ref, board.rates || {})}),
    list);
}

// What sets the rates, in words true of this answer (issue 44, item 8): the rows in view under Dynaboard's rule;
// no reference rows; reference rows not of distinct organisations (the operator's word, in the notes); else the
// task's reference rows, one per organisation, which no upload moves.
function referenceHint(ref, rates) {
  const n = ref.rows.length, rows = `${n} row${n === 1 ? "" : "s"}`;
  if (rates.status === "dynaboard") return `Set by the ${rows} in view (Dynaboard's rule): they change with the rows shown.`;
  if (n === 0) return "No reference rows: no rate is set by any row (see the notes for what the operator can do).";
  const orgs = new Set(ref.rows.filter(r => r.organisation != null).map(r => r.organisation));
  if (orgs.size && orgs.size < n) {
    return `Set by ${n} reference rows of ${orgs.size} organisation${orgs.size === 1 ? "" : "s"}, by the operator's ` +
           "word (see the notes): those organisations set the rates; no upload moves them.";
  }
  return `Set by ${n} reference row${n === 1 ? "" : "s"} (${ref.rule}), one per organisation, not by the rows on ` +
         "this page, so no submitter's rows move them.";
}

// Which rates scored the board (issue 44): the task's signed rate edition, provisional rates, or Dynaboard's rule.
function rateSourceText(rates) {
  if (rates.status === "edition") {
    return `Rate edition ${rates.edition} (${String(rates.id).slice(0, 12)}, frozen ${rates.created_at}, signed by ` +
           `${rates.key_fingerprint}): every row is scored with it (${rates.url}).`;
  }
  if (rates.status === "dynaboard") return "Dynaboard's rule: rates estimated from the rows in view (rates=dynaboard).";
  if (rates.status === "provisional") return "Provisional rates: no rate edition has been frozen yet.";
  return "No exchange rates: see the notes for why and what the operator can do.";
}

// ------------------------------------------------------------------ loading
function panelFor(task) {
  let panel = document.getElementById(`task-${task.name}`);
  if (panel && panel.tagName === "SECTION") return panel;
  panel = el("section", {class: "task", id: `task-${task.name}`, role: "tabpanel", "aria-labelledby": `tab-${task.name}`},
    el("h2", {text: `${task.title} (${task.name})`}),
    el("p", {class: "about", text: `Performance metric: ${task.metric}. Every row is one signed score bundle.`}),
    el("p", {class: "status", role: "status"}),
    el("p", {class: "comparability warning", role: "note", hidden: true}),
    el("div", {class: "table-wrap"}, el("table", {class: "board", id: `board-${task.name}`})),
    el("p", {class: "notes"}),
    el("section", {class: "baselines-box", "aria-label": "Baselines"}),
    el("div", {class: "legend-box"}),
    el("h3", {class: "controls-title", text: "Weights, filters and this view's link"}),
    el("div", {class: "controls"}),
    el("section", {class: "reference-box", "aria-label": "Rows that set the exchange rates"}),
    el("div", {class: "stability-box"}));
  document.getElementById("board").replaceChildren(panel);
  return panel;
}

const RANK_RETRIES = 8, RANK_RETRY_MS = 100;  // re-asks while rank intervals are pending (100, 200 ... ms apart)

async function refresh(opts = {}) {
  const name = currentTask();
  const task = state.tasks.find(t => t.name === name) || {name, title: name, metric: "?", datasets: []};
  const panel = panelFor(task);
  const token = ++state.token;
  const resp = await fetch(`/api/leaderboard/${encodeURIComponent(name)}?${apiQuery()}`);
  const body = await resp.json();
  if (token !== state.token) return;  // a newer change already asked again
  const status = panel.querySelector(".status");
  if (!resp.ok) {
    status.textContent = `Cannot show this view: ${body.detail || resp.statusText}`;
    status.className = "status error";
    status.setAttribute("role", "alert");
    return;
  }
  status.textContent = ""; status.className = "status";
  state.board = body;
  if (opts.controls || !panel.querySelector(".controls").childElementCount) renderControls(panel, body);
  renderBoard(panel, body);
  panel.dataset.loaded = String(token);  // tests and scripts wait on this: the view shown is this answer
  panel.dataset.ranksPending = String(Boolean(body.rank_intervals_pending));
  if (opts.focus) document.getElementById(opts.focus)?.focus();
  // a weight setting new to the server: its rank intervals are worked out off the request path; ask again
  // (unless the reader changed the view meanwhile: a newer ask has a newer token)
  const tries = opts.tries || 0;
  if (body.rank_intervals_pending && tries < RANK_RETRIES) {
    setTimeout(() => { if (token === state.token) refresh({tries: tries + 1}); }, RANK_RETRY_MS * (tries + 1));
  }
}

async function main() {
  const resp = await fetch("/api/tasks");
  state.tasks = await resp.json();
  renderTasks();
  if (!currentTask()) {
    document.getElementById("board").replaceChildren(el("p", {text: "This board has no tasks."}));
    return;
  }
  await refresh({controls: true});
  document.body.dataset.ready = "1";
}

main().catch(err => {
  document.getElementById("board").replaceChildren(el("p", {class: "error", role: "alert",
                                                           text: `Cannot load the board: ${err}`}));
});
