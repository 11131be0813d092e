// DynaDesk hub page: the lead's view (an owner invite). Every example of the round in a table that filters
// and sorts, each opened in place; the lead's decision on a disputed example is an owner vote (it decides at
// once and is shown as the lead's); agreement per annotator and per label. Uses hub.js's api, state and $.
"use strict";

const lead = { data: null, sort: { key: "created_at", dir: 1 }, open: new Set() };
const LEAD_COLUMNS = [
  ["author", "Author"], ["text", "Example"], ["target", "Label"], ["model_answer", "Model answer"],
  ["fooled", "Fooled"], ["votes", "Votes ✓/✗/⚑"], ["state", "State"], ["created_at", "Written"],
];
const STATES = ["disputed", "waiting for votes", "more votes needed", "confirmed", "rejected", "lead: correct",
                "lead: not correct"];

function leadText(r) { return Object.values(r.inputs).join(" / "); }

function sortValue(r, key) {
  if (key === "text") return leadText(r);
  if (key === "votes") return r.votes.correct - r.votes.incorrect - r.votes.flagged;
  if (key === "fooled") return (r.fooled ? 2 : 0) + (r.verified_fooled ? 1 : 0);
  return String(r[key]);
}

function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function leadControls() {
  const box = el("div", null, { class: "row" });
  const fl = el("label", "Filter", { for: "lead-filter" });
  const input = el("input", null, { id: "lead-filter", type: "search", placeholder: "author, text, label…" });
  const sl = el("label", "State", { for: "lead-state" });
  const sel = el("select", null, { id: "lead-state" });
  sel.append(new Option("every state", ""), ...STATES.map((s) => new Option(s, s)));
  input.addEventListener("input", drawLeadRows);
  sel.addEventListener("change", drawLeadRows);
  box.append(fl, input, sl, sel);
  return box;
}

function leadTable() {
  const table = el("table", null, { id: "lead-table" });
  const cap = el("caption", `Round ${lead.data.round} of ${lead.data.task}: every example (${lead.data.votes_needed}`
    + " votes of one kind decide; the lead's vote decides at once)");
  const tr = el("tr");
  tr.append(el("th", "", { scope: "col" }));
  for (const [key, title] of LEAD_COLUMNS) {
    const th = el("th", null, { scope: "col", "data-key": key });
    const b = el("button", title, { type: "button", class: "sort" });
    b.addEventListener("click", () => {
      lead.sort = { key, dir: lead.sort.key === key ? -lead.sort.dir : 1 };
      drawLeadRows();
    });
    th.append(b);
    tr.append(th);
  }
  const thead = el("thead");
  thead.append(tr);
  table.append(cap, thead, el("tbody"));
  return table;
}

function detailRow(r) {
  const tr = el("tr", null, { class: "detail", "data-detail": r.uid });
  const td = el("td", null, { colspan: String(LEAD_COLUMNS.length + 1) });
  const dl = el("dl");
  for (const [k, v] of Object.entries(r.inputs)) dl.append(el("dt", k), el("dd", v));
  dl.append(el("dt", "Model's answer"), el("dd", answerText({ label: r.model_answer, probs: r.probs })));
  if (r.explanation) dl.append(el("dt", "Writer's note"), el("dd", r.explanation));
  const votes = el("ul", null, { class: "votes" });
  for (const v of r.validations) {
    const extra = v.label !== null && v.label !== undefined ? ` → ${JSON.stringify(v.label)}` : "";
    votes.append(el("li", `${v.annotator}${v.lead ? " (the lead)" : ""}: ${v.verdict}${extra}`
      + `${v.reason ? ` (“${v.reason}”)` : ""}`));
  }
  if (!r.validations.length) votes.append(el("li", "no votes yet"));
  td.append(dl, el("p", `Votes (${r.state})`), votes);
  const decided = r.status !== "unverified";
  const voted = r.validations.some((v) => v.annotator === state.me.name);
  if (r.by_lead) td.append(el("p", `The lead's decision (${r.decided_by}): ${r.state.slice(6)}.`, { class: "lead-decision" }));
  else if (!decided && !voted && r.author !== state.me.name) td.append(decideBox(r));
  tr.append(td);
  return tr;
}

function decideBox(r) {
  const box = el("div", null, { class: "row decide" });
  const ok = el("button", "Decide: correct", { type: "button", class: "decide-correct" });
  const rl = el("label", "Reason", { for: `decide-reason-${r.uid}` });
  const reason = el("input", null, { id: `decide-reason-${r.uid}`, class: "decide-reason" });
  const no = el("button", "Decide: not correct", { type: "button", class: "decide-wrong" });
  ok.addEventListener("click", () => decide(r, "correct", ""));
  no.addEventListener("click", () => decide(r, "flagged", reason.value.trim()));
  box.append(ok, rl, reason, no);
  return box;
}

async function decide(r, verdict, reason) {
  if (verdict === "flagged" && !reason) { showError("Type the reason for 'not correct' first."); return; }
  try {
    await api("POST", "/api/votes", { uid: r.uid, verdict, reason, request_id: requestId() });
    showError("");
    await loadLead();
  } catch (e) { showError(e.message); }
}

function drawLeadRows() {
  const q = ($("lead-filter").value || "").toLowerCase();
  const only = $("lead-state").value;
  const { key, dir } = lead.sort;
  const rows = lead.data.examples
    .filter((r) => (!only || r.state === only)
      && (!q || [r.author, leadText(r), r.target, r.model_answer, r.state].join(" ").toLowerCase().includes(q)))
    .sort((a, b) => { const x = sortValue(a, key), y = sortValue(b, key); return (x < y ? -1 : x > y ? 1 : 0) * dir; });
  for (const th of $("lead-table").tHead.rows[0].cells) {
    if (th.dataset.key) th.setAttribute("aria-sort", th.dataset.key === key ? (dir > 0 ? "ascending" : "descending") : "none");
  }
  const body = $("lead-table").tBodies[0];
  body.replaceChildren();
  for (const r of rows) {
    const tr = el("tr", null, { "data-uid": r.uid, "data-state": r.state });
    const open = el("button", lead.open.has(r.uid) ? "Close" : "Open",
                    { type: "button", class: "open", "aria-expanded": String(lead.open.has(r.uid)) });
    open.addEventListener("click", () => {
      if (lead.open.has(r.uid)) lead.open.delete(r.uid); else lead.open.add(r.uid);
      drawLeadRows();
    });
    const first = el("td");
    first.append(open);
    const fooled = r.fooled ? (r.verified_fooled ? "yes, verified" : "yes") : "no";
    tr.append(first, el("td", r.author), el("td", leadText(r), { class: "text" }), el("td", typeof r.target === "string" ? r.target : JSON.stringify(r.target)),
              el("td", r.model_answer), el("td", fooled),
              el("td", `${r.votes.correct}/${r.votes.incorrect}/${r.votes.flagged}`),
              el("td", r.state, { class: "state" }), el("td", r.created_at.slice(0, 16).replace("T", " ")));
    body.append(tr);
    if (lead.open.has(r.uid)) body.append(detailRow(r));
  }
  $("lead-count").textContent = `${rows.length} of ${lead.data.examples.length} examples shown`;
}

function agreementTable(id, caption, heads, rows) {
  const t = el("table", null, { id });
  const head = el("tr");
  for (const h of heads) head.append(el("th", h, { scope: "col" }));
  const thead = el("thead");
  thead.append(head);
  const body = el("tbody");
  for (const r of rows) {
    const tr = el("tr");
    tr.append(el("th", r.annotator || r.label, { scope: "row" }), el("td", r.agreed !== undefined ? r.agreed : r.correct),
              el("td", r.votes), el("td", pct(r.rate)));
    body.append(tr);
  }
  t.append(el("caption", caption), thead, body);
  return t;
}

async function loadLead() {
  const keep = lead.data && $("lead-filter") ? [$("lead-filter").value, $("lead-state").value] : ["", ""];
  lead.data = await api("GET", `/api/lead/examples?task=${encodeURIComponent(state.task.name)}`);
  const panel = $("panel-lead");
  panel.replaceChildren(leadControls(), el("p", "", { id: "lead-count", "aria-live": "polite" }), leadTable(),
    agreementTable("agree-annotators", "Agreement per annotator (votes matching the decision)", ["Annotator", "Agreed", "Votes", "Rate"],
                   lead.data.agreement),
    agreementTable("agree-labels", "Per label: share of 'correct' votes on examples written with it", ["Label", "Correct", "Votes", "Rate"],
                   lead.data.labels));
  [$("lead-filter").value, $("lead-state").value] = keep;
  drawLeadRows();
}
