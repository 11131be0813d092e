// DynaDesk hub page: sign in with an invite code, create examples against the round's target model,
// validate others' examples, see one's own statistics. Served by the hub itself; talks only to it.
"use strict";

const state = { me: null, tasks: [], task: null, context: null, answer: null, valExample: null, valSpan: null,
                shownAt: Date.now(), busyTimer: null, skipped: new Set(), sending: false };
const $ = (id) => document.getElementById(id);

function requestId() {
  // crypto.randomUUID needs a secure context; a hub on the LAN is plain http, getRandomValues works there too
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function showError(text) {
  const el = $("error");
  el.textContent = text || "";
  el.hidden = !text;
}

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? body.detail : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    if (state.me) headers["X-CSRF-Token"] = state.me.csrf;
  }
  const asked = state.me;  // the session this request was made in: a late 401 for an older one changes nothing
  const resp = await fetch(path, { method, headers, credentials: "same-origin",
                                   body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) {
    const err = new ApiError(resp.status, data);
    if (resp.status === 401 && path !== "/api/signin" && state.me === asked) signedOut(err.message);
    throw err;
  }
  return data;
}

// radio buttons for a task's labels, none checked: a label is stored only when the person chose it
function labelChoices(box, name, labels) {
  box.replaceChildren(...labels.map((l, i) => {
    const label = document.createElement("label");
    const input = document.createElement("input");
    input.type = "radio";
    input.name = name;
    input.value = l;
    input.id = `${name}-${l}`;
    const key = document.createElement("kbd");
    key.textContent = String(i + 1);
    label.append(input, key, ` ${l}`);
    return label;
  }));
}

function chosen(name) {
  const el = document.querySelector(`input[name="${name}"]:checked`);
  return el ? el.value : null;
}

function pickNth(name, n) {
  const all = document.querySelectorAll(`input[name="${name}"]`);
  if (n >= 1 && n <= all.length) { all[n - 1].checked = true; all[n - 1].focus(); }
}

// the model's answer with its probabilities, highest first: "positive (positive 71% · neutral 20% · ...)"
function answerText(out) {
  const said = out.label !== undefined ? out.label : out.answer;
  const probs = probsText(out);
  return probs ? `${said} ${probs}` : String(said);
}

function probsText(out) {
  if (out.probs && typeof out.probs === "object") {
    const parts = Object.entries(out.probs).sort((a, b) => b[1] - a[1])
      .map(([k, p]) => `${k} ${(100 * p).toFixed(0)}%`);
    return `(${parts.join(" · ")})`;
  }
  if (typeof out.score === "number") return `(confidence ${(100 * out.score).toFixed(0)}%)`;
  return "";
}

// an example's state in plain words
function plainStatus(st, needed) {
  if (st.decided_by && st.decided_by !== "votes") {
    return `the lead decided: ${st.status === "verified-correct" ? "correct" : "not correct"}`;
  }
  if (st.status === "verified-correct") return "confirmed correct by the votes";
  if (st.status !== "unverified") return "judged not correct by the votes";
  return `waiting for more votes (${st.correct} correct, ${st.incorrect} incorrect, ${st.flagged} flagged;`
    + ` ${needed} of one kind decide)`;
}

// code point offsets of a textarea's selection (the server indexes text by code points, JS by UTF-16 units)
function selectionOffsets(area) {
  const s = area.selectionStart, e = area.selectionEnd;
  if (s === null || e === null || s === e) return null;
  const v = area.value;
  return { start: Array.from(v.slice(0, s)).length, end: Array.from(v.slice(0, e)).length,
           text: v.slice(s, e) };
}

// code point offsets of the page's text selection inside a passage element (one text node)
function passageSelectionOffsets(el) {
  const sel = window.getSelection();
  if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
  const range = sel.getRangeAt(0);
  if (!el.contains(range.startContainer) || !el.contains(range.endContainer)) return null;
  const upTo = (node, offset) => {
    const r = document.createRange();
    r.selectNodeContents(el);
    r.setEnd(node, offset);
    return Array.from(r.toString()).length;
  };
  return { start: upTo(range.startContainer, range.startOffset), end: upTo(range.endContainer, range.endOffset),
           text: range.toString() };
}

function selectionIn(el) {
  return el.tagName === "TEXTAREA" ? selectionOffsets(el) : passageSelectionOffsets(el);
}

function signedOut(message) {
  state.me = null;
  $("app").hidden = true;
  $("who").hidden = true;
  $("signout").hidden = true;
  $("open-guidelines").hidden = true;
  $("guidelines").hidden = true;
  $("signin").hidden = false;
  showError(message || "");
}

async function signedIn(me) {
  state.me = me;
  $("signin").hidden = true;
  $("app").hidden = false;
  $("who").hidden = false;
  $("who").textContent = `Signed in as ${me.name} (${me.role})`;
  $("who").dataset.name = me.name;
  $("signout").hidden = false;
  $("open-guidelines").hidden = false;
  $("tab-lead").hidden = !me.lead;
  showError("");
  state.tasks = await api("GET", "/api/tasks");
  const sel = $("task");
  sel.replaceChildren(...state.tasks.map((t) => new Option(`${t.title} (${t.name})`, t.name)));
  if (!state.tasks.length) {
    showError("No task has an open round yet: ask the lead to open one.");
    return;
  }
  await chooseTask(state.tasks[0].name);
}

async function chooseTask(name) {
  delete $("app").dataset.ready;
  state.task = state.tasks.find((t) => t.name === name);
  $("task").value = name;
  const served = state.task.served || [];
  $("round").textContent = `round ${state.task.round}, target ${state.task.targets.map(
    (m) => served.includes(m) ? `${m} (served, not sandboxed)` : m).join(", ")}`;
  $("task-description").textContent = state.task.description;
  state.skipped = new Set();
  const seenKey = `dynadesk-guidelines:${state.me.name}:${name}`;
  if (!localStorage.getItem(seenKey)) {  // first time on this task in this browser: the guidelines first
    localStorage.setItem(seenKey, "1");
    showGuidelines(true);
  } else showGuidelines(false);
  await resetCreate();
  if (!$("panel-validate").hidden) await loadValidation();
  if (!$("panel-stats").hidden) await loadStats();
  if (!$("panel-lead").hidden) await loadLead();
  $("app").dataset.ready = name;  // the task's form and panels are drawn
}

async function resetCreate() {
  const t = state.task;
  const canCreate = state.me.creates;
  $("create-form").hidden = !canCreate;
  $("create-blocked").hidden = canCreate;
  $("create-blocked").textContent = canCreate ? "" : "Validators judge others' examples; they do not write any.";
  $("result").hidden = true;
  state.answer = null;
  state.context = null;
  $("answer-preview").textContent = "(none yet)";
  if (!canCreate) return;
  if (t.has_pool) {
    try {
      state.context = (await api("GET", `/api/context?task=${encodeURIComponent(t.name)}`)).context;
    } catch (e) { showError(e.message); }
  }
  const fields = $("fields");
  fields.replaceChildren();
  for (const f of t.inputs) {
    const pooled = f.is_context && state.context;
    const label = document.createElement(pooled ? "p" : "label");
    label.textContent = f.description ? `${f.name}: ${f.description}` : f.name;
    label.id = `label-${f.name}`;
    let area;
    if (pooled) {  // the round's pool passage: read it, and select the answer in it
      area = document.createElement("div");
      area.className = "passage";
      area.textContent = state.context.text;
      area.setAttribute("role", "document");
      area.setAttribute("aria-labelledby", label.id);
    } else {
      label.htmlFor = `in-${f.name}`;
      area = document.createElement("textarea");
      area.name = f.name;
      area.rows = f.is_context ? 6 : 3;
    }
    area.id = `in-${f.name}`;
    fields.append(label, area);
  }
  $("label-target").hidden = !t.chooses_labels;
  $("span-target").hidden = t.chooses_labels;
  labelChoices($("target"), "target", t.labels);
  $("explanation").value = "";
  metaControls($("create-meta"), t.create_fields || [], "create");  // the task file's metadata.create
  $("assistant").hidden = !(t.assistant && t.assistant.length);  // opt-in: nothing is drafted unless asked
  $("assist-note").textContent = "";
  state.assisted = false;
  state.shownAt = Date.now();
  const first = fields.querySelector("textarea");
  if (first && !$("panel-create").hidden && $("guidelines").hidden) first.focus();
}

function showGuidelines(show) {
  const g = state.task && state.task.guidelines;
  const body = $("guidelines-body");
  body.replaceChildren();
  const intro = document.createElement("p");
  intro.textContent = g && g.text ? g.text : (state.task ? state.task.description : "");
  body.append(intro);
  for (const [kind, title] of [["good", "Good examples"], ["bad", "Examples to avoid"]]) {
    if (!g || !g[kind].length) continue;
    const h = document.createElement("h3");
    h.textContent = title;
    const ul = document.createElement("ul");
    ul.className = `guide-${kind}`;
    for (const e of g[kind]) {
      const li = document.createElement("li");
      const q = document.createElement("q");
      q.textContent = e.text;
      li.append(q);
      if (e.label) li.append(` → ${e.label}`);
      if (e.why) li.append(` — ${e.why}`);
      ul.append(li);
    }
    body.append(h, ul);
  }
  $("guidelines").hidden = !show;
  if (show) $("close-guidelines").focus();
  else if (!$("panel-create").hidden && $("fields").querySelector("textarea")) $("fields").querySelector("textarea").focus();
}

async function suggestDraft() {
  const t = state.task;
  const given = {};
  for (const f of t.inputs) {
    if (f.is_context && state.context) given[f.name] = state.context.text;
    else if ($(`in-${f.name}`).value) given[f.name] = $(`in-${f.name}`).value;
  }
  const body = { task: t.name, given };
  if (t.chooses_labels) {
    body.label = chosen("target");
    if (body.label === null) { showError("Choose the label the example should have first (press its number)."); return; }
  }
  $("assist-note").textContent = "Drafting…";
  try {
    const d = await api("POST", "/api/assist", body);
    $(`in-${d.field}`).value = d.text;
    state.assisted = true;
    $("assist-note").textContent = `Draft by ${d.model}: edit it before submitting (its use is recorded).`;
    $(`in-${d.field}`).focus();
    showError("");
  } catch (e) { $("assist-note").textContent = ""; showError(e.message); }
}

function useSelection() {
  const sel = selectionIn($(`in-${state.task.span_of}`));
  if (!sel) { showError("Select the answer in the passage first."); return; }
  state.answer = { start: sel.start, end: sel.end };
  $("answer-preview").textContent = sel.text;
  showError("");
}

async function pollModels() {
  try {
    const rows = await api("GET", "/api/models");
    const mine = rows.filter((r) => state.task.targets.includes(r.model));
    const busy = mine.filter((r) => r.busy || r.waiting > 0);
    $("model-status").textContent = busy.length
      ? busy.map((r) => `Model ${r.model} is busy: ${r.waiting} request(s) in its queue`).join("; ")
      : "Waiting for the model's answer…";
  } catch (e) { /* the submit itself reports errors */ }
}

async function submitExample(ev) {
  ev.preventDefault();
  const t = state.task;
  const inputs = {};
  for (const f of t.inputs) {
    if (f.is_context && state.context) continue;
    inputs[f.name] = $(`in-${f.name}`).value;
  }
  const body = { task: t.name, inputs, explanation: $("explanation").value,
                 time_ms: Math.max(0, Date.now() - state.shownAt), request_id: requestId() };
  if (state.context) body.context_id = state.context.id;
  if (state.assisted) body.assisted = true;
  if (!t.chooses_labels) {
    if (!state.answer) { showError("Select the answer in the passage and press 'Use selection as answer'."); return; }
    body.answer = state.answer;
  } else {
    body.target = chosen("target");
    if (body.target === null) { showError("Choose the true label first (press its number)."); return; }
  }
  body.fields = metaValues(t.create_fields || [], "create");
  if (body.fields === null) return;
  if (state.sending) return;
  state.sending = true;
  $("submit").disabled = true;
  $("model-status").textContent = "Waiting for the model's answer…";
  state.busyTimer = setInterval(pollModels, 700);
  try {
    const ex = await api("POST", "/api/examples", body);
    showError("");
    showResult(ex);
  } catch (e) {
    showError(e.message);
  } finally {
    clearInterval(state.busyTimer);
    $("model-status").textContent = "";
    $("submit").disabled = false;
    state.sending = false;
  }
}

function showResult(ex) {
  const said = ex.model_output.label !== undefined ? ex.model_output.label : ex.model_output.answer;
  const box = $("result");
  box.hidden = false;
  box.dataset.uid = ex.uid;
  box.dataset.fooled = String(ex.fooled);
  box.replaceChildren();
  const p1 = document.createElement("p");
  p1.append(`Model ${ex.model} answered: `);
  const s = document.createElement("strong");
  s.id = "result-model-answer";
  s.textContent = said;
  const probs = document.createElement("span");
  probs.id = "result-probs";
  probs.textContent = ` ${probsText(ex.model_output)}`;
  p1.append(s, probs);
  const p2 = document.createElement("p");
  p2.id = "result-verdict";
  p2.textContent = ex.fooled ? "You fooled the model!" : "The model got it right.";
  const next = document.createElement("button");
  next.type = "button";
  next.id = "next-example";
  next.textContent = "Write another (Enter)";
  next.addEventListener("click", resetCreate);
  box.append(p1, p2, next);
  next.focus();
}

async function loadValidation() {
  $("val-result").textContent = "";
  $("val-reason").value = "";
  state.valSpan = null;
  $("val-span-preview").textContent = "";
  valMetaReset();
  const skip = Array.from(state.skipped).join(",");
  const data = await api("GET", `/api/validate/next?task=${encodeURIComponent(state.task.name)}`
                                + `&skip=${encodeURIComponent(skip)}`);
  const ex = data.example;
  state.valExample = ex;
  $("validate-empty").hidden = !!ex;
  $("val-example").hidden = !ex;
  if (!ex) { delete $("val-example").dataset.uid; return; }
  $("val-example").dataset.uid = ex.uid;
  const dl = $("val-inputs");
  dl.replaceChildren();
  for (const [k, v] of Object.entries(ex.inputs)) {
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    dd.textContent = v;
    dl.append(dt, dd);
  }
  $("val-target").textContent = ex.target;
  const out = ex.model_output;
  $("val-model").textContent = answerText(out);
  const span = !state.task.chooses_labels;
  $("val-label-row").hidden = span;
  $("val-span-row").hidden = !span;
  if (span) $("val-passage").textContent = ex.inputs[state.task.span_of];
  else labelChoices($("val-label"), "val-label", state.task.labels.filter((l) => l !== ex.target));
}

async function skipValidation() {
  if (!state.valExample) return;
  state.skipped.add(state.valExample.uid);
  try {
    await loadValidation();
    $("val-result").textContent = "Skipped; it stays for the others.";
  } catch (e) { showError(e.message); }
}

async function vote(verdict) {
  const ex = state.valExample;
  if (!ex) return;
  const body = { uid: ex.uid, verdict, request_id: requestId() };
  if (verdict === "incorrect") {
    if (!state.task.chooses_labels) {
      if (!state.valSpan) { showError("Select the right answer in the passage first."); return; }
      body.label = state.valSpan;
    } else {
      body.label = chosen("val-label");
      if (body.label === null) { showError("Choose the right label first (press its number), then I."); return; }
    }
  }
  if (valMetaAsk(verdict)) return;  // the task file asks this verdict's fields: shown first
  body.fields = metaValues(valFieldsFor(verdict), "validate");
  if (body.fields === null) return;
  if (verdict === "flagged") {
    body.reason = $("val-reason").value.trim();
    if (!body.reason && !Object.keys(body.fields).length) {
      showError("Type the reason for the flag, then press Enter."); $("val-reason").focus(); return;
    }
  }
  if (state.sending) return;
  state.sending = true;
  try {
    const r = await api("POST", "/api/votes", body);
    showError("");
    await loadValidation();
    const said = { correct: "correct", incorrect: "incorrect", flagged: "flagged" }[verdict];
    $("val-result").textContent = `Recorded: ${said}. That example is ${plainStatus(r.status, state.task.votes_needed)}.`;
  } catch (e) { showError(e.message); } finally { state.sending = false; }
}

function pct(x) { return x === null || x === undefined ? "—" : `${(100 * x).toFixed(1)}%`; }

async function loadStats() {
  const s = await api("GET", `/api/stats?task=${encodeURIComponent(state.task.name)}`);
  const m = s.mine || { collected: 0, fooled: 0, verified_fooled: 0, mer: null, vmer: null, validations_given: 0 };
  const rows = [["Round", s.round], ["Examples in the round", s.collected], ["Fooled", s.fooled],
                ["Verified fooled", s.verified_fooled], ["MER", pct(s.mer)], ["vMER", pct(s.vmer)],
                ["My examples", m.collected], ["My fooled", m.fooled], ["My verified fooled", m.verified_fooled],
                ["My MER", pct(m.mer)], ["My vMER", pct(m.vmer)], ["My validations", m.validations_given]];
  const a = s.assistant || {};
  if (a.assisted) rows.push(["Written from an assistant draft", `${a.assisted} (${a.edited} edited)`],
                            ["MER with the assistant", pct(a.mer_assisted)],
                            ["MER without it", pct(a.mer_unassisted)]);
  $("stats").tBodies[0].replaceChildren(...rows.map(([k, v]) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = k;
    const td = document.createElement("td");
    td.textContent = String(v);
    td.dataset.key = k;
    tr.append(th, td);
    return tr;
  }));
}

async function selectTab(name) {
  for (const t of ["create", "validate", "stats", "lead"]) {
    $(`tab-${t}`).setAttribute("aria-selected", String(t === name));
    $(`panel-${t}`).hidden = t !== name;
  }
  showError("");
  try {
    if (name === "validate") await loadValidation();
    if (name === "stats") await loadStats();
    if (name === "lead") await loadLead();
  } catch (e) { showError(e.message); }
}

function wire() {
  $("signin-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await signedIn(await api("POST", "/api/signin", { code: $("code").value }));
      $("code").value = "";
    } catch (e) { showError(e.message); }
  });
  $("signout").addEventListener("click", async () => {
    try { await api("POST", "/api/signout", {}); } catch (e) { /* signed out either way */ }
    signedOut("Signed out.");
  });
  $("task").addEventListener("change", () => chooseTask($("task").value).catch((e) => showError(e.message)));
  $("create-form").addEventListener("submit", submitExample);
  $("use-selection").addEventListener("click", useSelection);
  $("suggest").addEventListener("click", suggestDraft);
  for (const t of ["create", "validate", "stats", "lead"]) $(`tab-${t}`).addEventListener("click", () => selectTab(t));
  $("skip-create").addEventListener("click", () => resetCreate().catch((e) => showError(e.message)));
  $("vote-skip").addEventListener("click", skipValidation);
  $("open-guidelines").addEventListener("click", () => showGuidelines($("guidelines").hidden));
  $("close-guidelines").addEventListener("click", () => showGuidelines(false));
  document.addEventListener("keydown", onKey);
  $("vote-correct").addEventListener("click", () => vote("correct"));
  $("vote-incorrect").addEventListener("click", () => vote("incorrect"));
  $("vote-flag").addEventListener("click", () => vote("flagged"));
  $("val-use-selection").addEventListener("click", () => {
    const sel = selectionIn($("val-passage"));
    if (!sel) { showError("Select the right answer in the passage first."); return; }
    state.valSpan = { start: sel.start, end: sel.end };
    $("val-span-preview").textContent = sel.text;
  });
  setInterval(() => { if (state.me) api("GET", "/api/me").catch(() => {}); }, 20000);  // "connected" for the lead
}

document.addEventListener("DOMContentLoaded", async () => {
  wire();
  try { await signedIn(await api("GET", "/api/me")); } catch (e) { if (!state.me) signedOut(""); }
});
