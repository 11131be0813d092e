// DynaDesk board page: the table within its container's width (issue 47). After drawing, the page measures the
// table against its wrap; while the table is wider, whole columns move into the row expansion (details.js), in
// FIT_ORDER: the hardware class, then each metric's per-test-set columns as one group (the last metric's first),
// then the tie mark, the measured metrics, robustness, fairness, the sandbox, perf and the rank interval. Rank,
// model and Dynascore never move, nor does the column the reader sorts by. The caption names what moved, and the
// fit is measured again when the window's width changes. A group that moved keeps its +/− toggle: the values it
// opens are then in each row's expansion. Loaded before board.js; uses its state and renderTable at call time.
"use strict";

const FIT_ORDER = ["hardware", "@per-dataset", "tied", "memory", "throughput", "fairness", "robustness", "sandboxed",
                   "perf", "rank_interval"];
const FIT_PASSES = 12;  // each pass moves at least one unit; there are fewer units than this on any board

// The units that may leave the table, in the order they leave: each a list of column keys moved together.
function fitUnits(cols, sortKey) {
  const units = [];
  for (const key of FIT_ORDER) {
    if (key === "@per-dataset") {
      const metrics = [...new Set(cols.filter(c => c.perDataset).map(c => c.key.split("@")[0]))].reverse();
      for (const m of metrics) units.push(cols.filter(c => c.perDataset && c.key.startsWith(`${m}@`)).map(c => c.key));
    } else if (cols.some(c => c.key === key)) {
      units.push([key]);
    }
  }
  return units.filter(u => !u.includes(sortKey));
}

// The keys to move next for a table that overflows its wrap by `excess` px: units in order until their headers'
// widths cover the excess (one more pass re-measures, as the columns left re-share the width).
function moreToMove(table, cols, moved, excess, sortKey) {
  const add = new Set(moved);
  for (const unit of fitUnits(cols, sortKey)) {
    if (excess <= 0) break;
    for (const key of unit) {
      const th = table.querySelector(`thead th[data-key="${CSS.escape(key)}"]`);
      excess -= th ? th.getBoundingClientRect().width : 0;
      add.add(key);
    }
  }
  return add.size > moved.size ? add : null;
}

// Draw the table, measure it, and draw it again with fewer columns until it fits (synchronous: no frame is
// painted in between). `draw(moved)` renders with the keys in `moved` in the row expansion; returns the columns.
function drawFitted(panel, draw) {
  const wrap = panel.querySelector(".table-wrap");
  const table = panel.querySelector("table.board");
  let moved = new Set();
  for (let pass = 0; pass < FIT_PASSES; pass++) {
    const cols = draw(moved);
    const excess = wrap.scrollWidth - wrap.clientWidth;
    const next = excess > 0 ? moreToMove(table, cols, moved, excess, sortState().key) : null;
    if (!next) break;
    moved = next;
  }
  panel.dataset.fitWidth = String(wrap.clientWidth);
  return moved;
}

// The caption's word on what moved: "Under each row (▸) for lack of width: hardware class, perf per test set."
function fitNote(all, moved) {
  if (!moved.size) return null;
  const names = [];
  for (const c of all) {
    if (!moved.has(c.key)) continue;
    const name = c.perDataset ? `${c.sub} per test set` : c.label;
    if (!names.includes(name)) names.push(name);
  }
  return el("small", {class: "fit-note", text: `Under each row (▸) for lack of width: ${names.join(", ")}.`});
}

// A field's name in the expansion: the column's label and, for a figure, what it measures.
function fieldLabel(c) {
  return c.perDataset ? `${c.label} (${c.sub})` : c.sub && c.num ? `${c.label} (${c.sub})` : c.label;
}

let fitTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(fitTimer);
  fitTimer = setTimeout(() => {
    const board = state.board;
    const panel = board && document.getElementById(`task-${board.task}`);
    const wrap = panel && panel.querySelector(".table-wrap");
    if (!wrap || !board.rows.length || String(wrap.clientWidth) === panel.dataset.fitWidth) return;
    renderTable(panel, board);
  }, 120);
});
