// DynaDesk hub page: the task file's metadata fields (metadata.create / metadata.validate) as form controls.
// Loaded after hub.js (whose $, state and showError it uses). A string field is a labelled text box, a
// multiclass one a radio group (a fieldset with its legend) with nothing chosen: a value is sent only when the
// person gave it. The server checks them again (a missing required field or an undeclared one: a 422 naming it).
"use strict";

const VERDICT_KEYS = { correct: "C", incorrect: "I", flagged: "F" };

function metaId(scope, f) { return `meta-${scope}-${f.name}`; }

function metaTitle(f) {
  return `${f.name}${f.description ? `: ${f.description}` : ""}${f.required ? " (required)" : " (optional)"}`;
}

function metaControl(f, scope) {
  const id = metaId(scope, f);
  const wrap = document.createElement("div");
  wrap.className = "meta-field";
  wrap.dataset.field = f.name;
  if (f.type === "multiclass") {
    const set = document.createElement("fieldset");
    set.id = id;
    set.setAttribute("role", "radiogroup");
    if (f.required) set.setAttribute("aria-required", "true");
    const legend = document.createElement("legend");
    legend.textContent = metaTitle(f);
    const choices = document.createElement("div");
    choices.className = "choices";
    choices.append(...f.labels.map((l) => {
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "radio";
      input.name = id;
      input.value = l;
      input.id = `${id}-${l}`;
      label.append(input, ` ${l}`);
      return label;
    }));
    set.append(legend, choices);
    wrap.append(set);
  } else {
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = metaTitle(f);
    const input = document.createElement("input");
    input.id = id;
    input.name = id;
    input.autocomplete = "off";
    if (f.required) input.setAttribute("aria-required", "true");
    wrap.append(label, input);
  }
  return wrap;
}

// one control per field, in the task file's order (the tab order)
function metaControls(box, fields, scope) {
  box.replaceChildren(...fields.map((f) => metaControl(f, scope)));
}

function metaFocus(f, scope) {
  const id = metaId(scope, f);
  const el = f.type === "multiclass" ? document.querySelector(`input[name="${id}"]`) : $(id);
  if (el) el.focus();
}

// the values given, or null after naming the first required field left empty (and taking the person there)
function metaValues(fields, scope) {
  const values = {};
  for (const f of fields) {
    const id = metaId(scope, f);
    const el = f.type === "multiclass" ? document.querySelector(`input[name="${id}"]:checked`) : $(id);
    const v = el ? el.value.trim() : "";
    if (v) values[f.name] = v;
    else if (f.required) {
      showError(`Fill in '${f.name}'${f.description ? ` (${f.description})` : ""} first: it is required.`);
      metaFocus(f, scope);
      return null;
    }
  }
  return values;
}

// the validation view's fields: those asked with every verdict shown now, each verdict's own ones once it is chosen
function valMetaReset() {
  state.valPending = null;
  const fields = (state.task && state.task.validate_fields) || [];
  $("val-meta").replaceChildren(...[null, "correct", "incorrect", "flagged"].map((when) => {
    const group = document.createElement("div");
    group.id = `val-meta-${when || "any"}`;
    const mine = fields.filter((f) => (f.when || null) === when);
    metaControls(group, mine, "validate");
    group.hidden = when !== null || !mine.length;
    return group;
  }));
}

function valFieldsFor(verdict) {
  return ((state.task && state.task.validate_fields) || []).filter((f) => !f.when || f.when === verdict);
}

// true when the verdict asks fields not shown yet: they are shown (focus on the first), and the vote waits for
// the verdict's key again (or Enter in its fields)
function valMetaAsk(verdict) {
  const own = valFieldsFor(verdict).filter((f) => f.when === verdict);
  if (!own.length || state.valPending === verdict) return false;
  state.valPending = verdict;
  for (const v of ["correct", "incorrect", "flagged"]) $(`val-meta-${v}`).hidden = v !== verdict;
  $("val-result").textContent = `Fill in the fields for "${verdict}", then press ${VERDICT_KEYS[verdict]} again`
    + " (or Enter).";
  metaFocus(own[0], "validate");
  return true;
}
