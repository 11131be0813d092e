// DynaDesk hub page: the keyboard (loaded after hub.js, whose state and functions it uses).
"use strict";

const TYPING = new Set(["TEXTAREA", "SELECT"]);

function typing(el) {
  return el && (TYPING.has(el.tagName) || (el.tagName === "INPUT" && el.type !== "radio"));
}

// the keys of the legend: digits choose a label, Enter / Ctrl+Enter submit, S skips, C / I / F judge,
// G shows the guidelines; inside a text box only Ctrl+Enter, Escape (leave the box) and Enter on a flag reason
function onKey(ev) {
  if (!state.me || !state.task || ev.altKey || ev.defaultPrevented) return;
  const panel = ["create", "validate", "lead"].find((p) => !$(`panel-${p}`).hidden);
  const el = document.activeElement;
  if (ev.key === "Escape") {
    if (!$("guidelines").hidden) showGuidelines(false);
    else if (typing(el)) el.blur();
    return;
  }
  const enter = ev.key === "Enter";
  if (enter && (ev.ctrlKey || ev.metaKey) && panel === "create") {
    ev.preventDefault();
    if ($("result").hidden) $("create-form").requestSubmit();
    return;
  }
  if (el && el.id === "val-reason" && enter) { ev.preventDefault(); vote("flagged"); return; }
  if (el && el.closest("#val-meta") && enter && state.valPending) { ev.preventDefault(); vote(state.valPending); return; }
  if (typing(el) || ev.ctrlKey || ev.metaKey || !$("guidelines").hidden && ev.key !== "g") return;
  if (el && el.tagName === "BUTTON" && enter) return;  // the focused button's own action
  const key = ev.key.toLowerCase();
  if (key === "g") { ev.preventDefault(); showGuidelines($("guidelines").hidden); return; }
  if (key === "w" || key === "v") { ev.preventDefault(); selectTab(key === "w" ? "create" : "validate"); return; }
  if (panel === "create" && state.me.creates) {
    if (/^[1-9]$/.test(key)) { ev.preventDefault(); pickNth("target", Number(key)); } else if (enter) {
      ev.preventDefault();
      if ($("result").hidden) $("create-form").requestSubmit(); else resetCreate();
    } else if (key === "s") { ev.preventDefault(); resetCreate(); }
  } else if (panel === "validate" && state.valExample) {
    const act = { c: () => vote("correct"), i: () => vote("incorrect"), s: skipValidation,
                  f: () => ($("val-reason").value.trim() || valFieldsFor("flagged").some((x) => x.when === "flagged")
                    ? vote("flagged") : $("val-reason").focus()) }[key];
    if (/^[1-9]$/.test(key)) { ev.preventDefault(); pickNth("val-label", Number(key)); } else if (act) {
      ev.preventDefault();
      act();
    }
  }
}
