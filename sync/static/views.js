// DynaDesk board views of issue 44 (loaded before board.js, whose el() and state they use at call time): the
// audit toggle that follows the server's default filter, the breakdown's stated reference, the baselines list.
"use strict";

// Reproduced-only is the server's default once the view has a reproduced row (issue 44): the box shows the
// filter in force, and a link names the filter only where it differs from that default.
function auditToggle(board) {
  const filters = board.filters || {};
  const fallback = (board.audit_default || {}).audit || "all";
  const box = el("input", {type: "checkbox", id: "audit", name: "audit", checked: filters.audit === "reproduced",
                           "aria-describedby": "audit-hint"});
  box.addEventListener("change", () => {
    setParam("audit", box.checked ? "reproduced" : "all", fallback);
    writeUrl();
    refresh({controls: true, focus: "audit"});
  });
  const why = (board.audit_default || {}).why;
  return el("label", {for: "audit", class: "filter toggle"}, box, el("span", {text: "Reproduced rows only"}),
            el("small", {id: "audit-hint", class: "hint", text: " rows an auditor re-ran and none disputed"}),
            why ? el("small", {id: "audit-why", class: "hint", text: ` (shown: ${why})`}) : "");
}

// The breakdown shows each metric's contribution relative to a stated reference (issue 44, item 7): the
// baseline, else the lowest-ranked row, so what every row shares does not fill the bar.
function breakdownSub(board) {
  const ref = board.breakdown_reference;
  return ref && ref.label ? `vs ${ref.label} (${ref.kind})` : "";
}

function renderBaselines(box, board) {
  const rows = board.baselines || [];
  if (!rows.length) { box.replaceChildren(); return; }
  const list = el("ul", {class: "baseline-rows"});
  for (const r of rows) {
    const trivial = (r.baseline.trivial || []).length ? `; ${r.baseline.trivial.join(" and ")} trivial` : "";
    const score = r.dynascore === null ? "not scored" : `Dynascore ${Number(r.dynascore).toFixed(2)} at this board's rates`;
    list.append(el("li", {"data-row": r.row_id, class: "baseline"},
                   el("a", {href: r.model_url, text: r.label}), ` — baseline, unranked: ${r.baseline.reason}; ${score}` +
                   trivial));
  }
  box.replaceChildren(el("h3", {text: "Baselines"}),
    el("p", {class: "hint", text: "Shown for comparison, never ranked and never a reference row."}), list);
}

