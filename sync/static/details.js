// DynaDesk board page: the row expansion. The ranking's table keeps the columns a reader compares (rank, model,
// Dynascore, its intervals, the metrics, hardware class, sandbox); the rest of a row (score breakdown, date,
// submitter, runner, audit, documents) opens under it on request, so the table fits the page's width.
// Loaded before board.js; uses its el() at call time. Open rows are page state only (not in the URL).
"use strict";

const DETAIL_KEYS = new Set(["breakdown", "date", "submitter", "runner", "audit", "links"]);
const openRows = new Set();

// `moved`: the columns fit.js took out of the table for lack of width; they open first under the row
function splitColumns(cols, moved = new Set()) {
  return {main: cols.filter(c => !DETAIL_KEYS.has(c.key) && !moved.has(c.key)),
          detail: [...cols.filter(c => moved.has(c.key)), ...cols.filter(c => DETAIL_KEYS.has(c.key))]};
}

function detailsHeader() {
  return el("th", {scope: "col", class: "row-toggle", "data-key": "details"},
            el("span", {class: "visually-hidden", text: "Details"}));
}

function detailsRow(r, detail, span, ctx) {
  const list = el("dl", {class: "row-fields"});
  for (const c of detail) {
    const dd = el("dd", {"data-key": c.key});
    if (c.cell) c.cell(r, dd, ctx); else dd.textContent = c.num ? fmt(c.get(r)) : String(c.get(r) ?? "–");
    list.append(el("div", {}, el("dt", {text: fieldLabel(c)}), dd));
  }
  return el("tr", {class: "row-details", id: `details-${r.row_id}`, "data-details-for": r.row_id},
            el("td", {colspan: String(span)}, list));
}

// the toggle cell of a ranked row; clicking it adds or removes the row's details right under it
function toggleCell(r, detail, span, ctx) {
  const open = openRows.has(r.row_id);
  const button = el("button", {type: "button", class: "row-toggle", "aria-expanded": String(open),
                               "aria-controls": `details-${r.row_id}`,
                               "aria-label": `details of ${r.label || r.model}`, text: open ? "▾" : "▸"});
  button.addEventListener("click", () => {
    const tr = button.closest("tr");
    const shown = document.getElementById(`details-${r.row_id}`);
    if (shown) {
      shown.remove();
      openRows.delete(r.row_id);
    } else {
      tr.after(detailsRow(r, detail, span, ctx));
      openRows.add(r.row_id);
    }
    button.setAttribute("aria-expanded", String(!shown));
    button.textContent = shown ? "▸" : "▾";
  });
  return el("td", {class: "row-toggle"}, button);
}

// "show every row's details" (a reader comparing submitters or audits across the board)
function detailsAllButton(table) {
  const button = el("button", {type: "button", class: "details-all", text: "Show all details"});
  button.addEventListener("click", () => {
    const closed = [...table.querySelectorAll("button.row-toggle[aria-expanded=false]")];
    const toggles = closed.length ? closed : [...table.querySelectorAll("button.row-toggle")];
    for (const b of toggles) b.click();
  });
  return button;
}
