// DynaDesk board page: plain JS, no CDN. The server computes every Dynascore
// (the shared scoring function); sliders only change the query's weights.
"use strict";

const METRICS = ["perf", "throughput", "memory", "robustness", "fairness"];
const DEFAULT_WEIGHTS = {perf: 4, throughput: 1, memory: 1, robustness: 1, fairness: 1};

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

function fmt(v) {
  if (v === null || v === undefined) return "–";
  return Math.abs(v) >= 100 ? v.toFixed(1) : v.toFixed(2);
}

function slider(section, kind, name, value, onChange) {
  const out = el("output", {text: String(value)});
  const input = el("input", {type: "range", min: "0", max: "5", step: "0.5", value: String(value),
                              "data-kind": kind, "data-name": name, "aria-label": `${kind} weight ${name}`});
  input.addEventListener("input", () => { out.textContent = input.value; onChange(); });
  return el("label", {}, el("span", {text: name}), input, out);
}

const PAGE = 100;  // rows shown per board; every model is still scored

function query(section) {
  const params = new URLSearchParams({limit: String(PAGE)});
  for (const input of section.querySelectorAll("input[type=range]")) {
    params.set(`${input.dataset.kind === "metric" ? "weight" : "dataset"}.${input.dataset.name}`, input.value);
  }
  return params.toString();
}

async function refresh(section, task) {
  const token = (section._token = (section._token || 0) + 1);
  const resp = await fetch(`/api/leaderboard/${encodeURIComponent(task)}?${query(section)}`);
  const body = await resp.json();
  if (token !== section._token) return;  // a newer slider move already asked again
  const status = section.querySelector(".status");
  if (!resp.ok) { status.textContent = body.detail || resp.statusText; status.className = "status error"; return; }
  status.textContent = ""; status.className = "status";
  render(section, body);
}

function render(section, board) {
  const table = section.querySelector("table");
  const head = el("tr", {}, el("th", {text: "Rank"}), el("th", {text: "Model"}), el("th", {text: "Dynascore"}));
  for (const m of METRICS) {
    const unit = (board.metrics[m] || {}).unit;
    head.append(el("th", {}, m, unit ? el("small", {text: ` (${unit})`}) : ""));
  }
  head.append(el("th", {text: "Submitter"}), el("th", {text: "Audit"}), el("th", {text: "Bundle"}));
  const tbody = el("tbody");
  for (const row of board.rows) {
    const stale = (row.stale_datasets || []).length
      ? el("small", {class: "stale", text: ` scored on a superseded version of ${row.stale_datasets.join(", ")}`}) : "";
    const tr = el("tr", {"data-model": row.model, "data-row": row.row_id || row.model},
      el("td", {text: String(row.rank)}), el("td", {}, row.label || row.model, stale),
      el("td", {class: "dynascore", text: fmt(row.dynascore)}));
    for (const m of METRICS) tr.append(el("td", {text: fmt(row.values[m])}));
    const audit = row.audit || {state: "not audited", attestations: []};
    const auditors = audit.attestations.map(a => `${a.auditor}: ${a.verdict} (${a.hardware_class})`).join("\n");
    tr.append(el("td", {text: row.submitter}),
              el("td", {class: `audit ${audit.state.split(" ")[0]}`, title: auditors, text: audit.state}),
              el("td", {}, el("a", {href: row.bundle_url, text: row.bundle_id.slice(0, 12)})));
    tbody.append(tr);
  }
  table.replaceChildren(el("thead", {}, head), tbody);
  const left = Object.entries(board.left_off || {}).map(([m, why]) => `${m}: ${why}`);
  const shown = board.total > board.rows.length ? [`top ${board.rows.length} of ${board.total} models`] : [];
  section.querySelector(".notes").textContent = [...shown, ...(board.notes || []), ...left].join(" · ");
}

async function main() {
  const root = document.getElementById("boards");
  const tasks = await (await fetch("/api/tasks")).json();
  root.replaceChildren();
  for (const task of tasks) {
    const section = el("section", {class: "task", id: `task-${task.name}`});
    let timer = null;
    const changed = () => { clearTimeout(timer); timer = setTimeout(() => refresh(section, task.name), 80); };
    const metricBox = el("fieldset", {}, el("legend", {text: "Metric weights"}));
    for (const m of METRICS) metricBox.append(slider(section, "metric", m, DEFAULT_WEIGHTS[m], changed));
    const dataBox = el("fieldset", {}, el("legend", {text: "Dataset weights"}));
    for (const d of task.datasets) dataBox.append(slider(section, "dataset", d.name, 1, changed));
    section.append(el("h2", {text: `${task.title} (${task.name})`}),
                   el("div", {class: "controls"}, metricBox, dataBox),
                   el("p", {class: "status"}), el("table", {id: `board-${task.name}`}), el("p", {class: "notes"}));
    root.append(section);
    refresh(section, task.name);
  }
}

main().catch(err => {
  document.getElementById("boards").replaceChildren(el("p", {class: "error", text: `Cannot load the board: ${err}`}));
});
