// The dashboard's few actions: forms marked data-api send JSON to the emulator's own API.
// Every answer, busy note, error or confirmation is shown next to the control that caused it:
// in the element named by the form's data-result, else in a status line at the form's end.
"use strict";

// The status line of a form (made on first use), or of the element its data-result names.
function resultBox(form) {
  const named = form.dataset.result && document.getElementById(form.dataset.result);
  if (named) return named;
  let box = form.querySelector(":scope > .result");
  if (!box) {
    box = document.createElement("span");
    box.className = "result";
    box.setAttribute("role", "status");
    box.setAttribute("aria-live", "polite");
    form.append(box);
  }
  return box;
}

function show(box, text, kind) {
  box.textContent = text;
  box.classList.remove("ok", "error", "busy");
  box.classList.add("result", kind);
  box.hidden = false;
}

// A confirmation kept over the reload that follows a successful action: shown next to the
// control with that id once the page is back (or at the top if the page no longer has it).
function keepForReload(form, text) {
  const target = form.dataset.result || form.id || "";
  sessionStorage.setItem("flash", JSON.stringify({ target, text }));
}

function showKept() {
  const kept = sessionStorage.getItem("flash");
  if (!kept) return;
  sessionStorage.removeItem("flash");
  let item;
  try { item = JSON.parse(kept); } catch (_) { item = { target: "", text: kept }; }
  const target = item.target && document.getElementById(item.target);
  if (target) {
    show(target.tagName === "FORM" ? resultBox(target) : target, item.text, "ok");
  } else {
    const flash = document.getElementById("flash");
    if (flash) show(flash, item.text, "ok");
  }
}

// "{events} events", "{last.status}": fields of an answer, dotted for nested ones.
function fill(template, data) {
  return template.replace(/\{([\w.]+)\}/g, (_, path) => {
    let value = data;
    for (const key of path.split(".")) value = value && typeof value === "object" ? value[key] : undefined;
    return value === undefined ? "" : value === null ? "null" : String(value);
  });
}

function formBody(form) {
  if (form.dataset.body) return form.dataset.body;
  if (form.elements.json) return form.elements.json.value;
  const fields = {};
  for (const input of form.querySelectorAll("input[name]")) {
    if (input.type === "checkbox") {
      if (input.checked) fields[input.name] = true;
    } else if (input.value.trim()) {
      fields[input.name] = input.type === "number" ? Number(input.value) : input.value.trim();
    }
  }
  // fields added when another is left empty (verify's scratch copy when no CRM URL is given)
  if (form.dataset.extra && !fields[form.dataset.whenEmpty]) Object.assign(fields, JSON.parse(form.dataset.extra));
  return Object.keys(fields).length || form.querySelector("input[name]") ? JSON.stringify(fields) : null;
}

// One line from an error answer: its message, then each field error the message does not
// already contain ("field: message", or the message alone for an error of the whole body).
function problemText(status, data) {
  if (data && typeof data === "object") {
    const message = data.message || data.error || JSON.stringify(data);
    const details = (data.errors || [])
      .map((e) => (e.field ? `${e.field}: ${e.message}` : e.message))
      .filter((d) => d && !message.includes(d) && !message.includes(d.replace(/^[^:]*: /, "")));
    return `${status}: ${message}${details.length ? ` (${details.join("; ")})` : ""}`;
  }
  return `${status}: ${data}`;
}

let sending = false; // an action is on its way: the page does not reload under it

async function send(form) {
  if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
  const box = resultBox(form);
  let body = formBody(form);
  if (form.elements.json) {
    try {
      JSON.parse(body);
    } catch (error) {
      show(box, `not valid JSON: ${error.message}`, "error");
      return;
    }
  }
  sending = true;
  const buttons = form.querySelectorAll("button");
  buttons.forEach((b) => (b.disabled = true));
  form.setAttribute("aria-busy", "true");
  show(box, form.dataset.busy || "Working…", "busy");
  try {
    const response = await fetch(form.dataset.api, {
      method: form.dataset.method || "POST",
      headers: body === null ? {} : { "content-type": "application/json" },
      body,
    });
    const text = await response.text();
    let data = text;
    try { data = JSON.parse(text); } catch (_) { /* not JSON: keep the text */ }
    if (response.status === 404 && form.dataset.missing) {
      show(box, form.dataset.missing, "error");
    } else if (!response.ok) {
      show(box, problemText(response.status, data), "error");
    } else if (form.dataset.follow === "advance" && response.status === 202) {
      followAdvance(response.headers.get("location"), form);
      return; // its buttons stay disabled until the advance ends
    } else if (form.dataset.then) {
      window.location.href = fill(form.dataset.then, data);
      return;
    } else {
      keepForReload(form, form.dataset.flash ? fill(form.dataset.flash, data) : "done");
      window.location.reload();
      return;
    }
  } catch (error) {
    show(box, `the emulator did not answer: ${error}`, "error");
  }
  buttons.forEach((b) => (b.disabled = false));
  form.removeAttribute("aria-busy");
  sending = false;
}

// A page that follows a run (an export's) reloads itself, unless an action is being sent.
const reloading = document.querySelector("[data-reload]");
if (reloading) {
  setInterval(() => { if (!sending) window.location.reload(); }, Number(reloading.dataset.reload));
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.dataset && form.dataset.busy && !form.dataset.api) {
    // an ordinary form that takes a while (scenario runs, the health check): say so next to
    // its button, which stays disabled until the answer (a new page) arrives
    if (form.getAttribute("aria-busy")) { event.preventDefault(); return; }
    form.setAttribute("aria-busy", "true");
    show(resultBox(form), form.dataset.busy, "busy");
    setTimeout(() => form.querySelectorAll("button").forEach((b) => (b.disabled = true)));
    return;
  }
  if (!form.dataset || !form.dataset.api) return;
  event.preventDefault();
  send(form);
});

showKept();

// A verify run's page: follow its data-api URL until the run ends, then show its report.
async function followVerify(box, startedAt) {
  const status = document.getElementById("verify-status");
  const progress = document.getElementById("verify-progress");
  const response = await fetch(box.dataset.api);
  const run = await response.json().catch(() => null);
  if (!response.ok || !run) {
    status.textContent = "unknown";
    progress.textContent = problemText(response.status, run);
    return;
  }
  status.textContent = run.status;
  status.className = `badge ${run.status}`;
  const cancel = document.getElementById("cancel-verify");
  if (cancel) cancel.hidden = run.status !== "running";
  if (run.status === "running") {
    const seconds = Math.round((Date.now() - startedAt) / 1000);
    progress.textContent = `Running… ${seconds} s (this page follows the run)`;
    progress.className = "result busy";
    setTimeout(() => followVerify(box, startedAt), 1000);
    return;
  }
  progress.textContent = `Finished: ${run.status}${run.message ? ` (${run.message})` : ""}`;
  progress.className = `result ${run.status === "pass" ? "ok" : "error"}`;
  if (box.dataset.reportHtml) {
    const frame = document.getElementById("report-frame");
    frame.src = box.dataset.reportHtml;
    frame.hidden = false;
  } else {
    const pre = document.getElementById("verify-report");
    pre.textContent = JSON.stringify(run.report === undefined ? run : run.report, null, 2);
    pre.hidden = false;
  }
}

const verifyBox = document.getElementById("verify-run");
if (verifyBox) followVerify(verifyBox, Date.now());

// A clock advance runs in the background (POST /_emulator/clock/advances): follow it with a
// progress bar, the advance buttons disabled, until it ends; then show its result (the page
// reloads for the new counts) or why it failed. `form` is the button's form, if this page
// started it.
const advanceBox = document.getElementById("advance-progress");

function advanceButtons(disabled) {
  for (const f of document.querySelectorAll('form[data-follow="advance"]')) {
    f.querySelectorAll("button").forEach((b) => (b.disabled = disabled));
    if (disabled) f.setAttribute("aria-busy", "true");
    else f.removeAttribute("aria-busy");
  }
}

async function followAdvance(url, form) {
  sending = true;
  advanceButtons(true);
  const box = document.getElementById("clock-result");
  const bar = document.getElementById("advance-bar");
  const text = document.getElementById("advance-text");
  const stop = document.getElementById("advance-stop");
  advanceBox.hidden = false;
  stop.disabled = false;
  stop.onclick = async () => {
    stop.disabled = true;
    await fetch(url, { method: "DELETE" }).catch(() => null);
  };
  let run = null;
  let failure = null;
  for (;;) {
    try {
      const response = await fetch(url);
      const data = await response.json().catch(() => null);
      if (!response.ok || !data) failure = problemText(response.status, data);
      else run = data;
    } catch (error) {
      failure = `the emulator did not answer: ${error}`;
    }
    if (failure || run.status !== "running") break;
    bar.value = run.percent;
    text.textContent = `${run.percent} % of the simulated time: ${run.reached} of ${run.target}, ${run.events} events so far`;
    if (!form) show(box, `Advancing the clock to ${run.target}…`, "busy");
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  if (!failure && run.status === "done") {
    const template = form && form.dataset.flash ? form.dataset.flash : "advanced: {events} events, now {now}";
    keepForReload(form || box, fill(template, run.result));
    window.location.reload();
    return;
  }
  if (!failure && run.status === "cancelled") {
    keepForReload(form || box, `advance stopped: ${run.message}, ${run.events} events`);
    window.location.reload();
    return;
  }
  show(box, failure || `the advance failed: ${run.message}`, "error");
  advanceBox.hidden = true;
  advanceButtons(false);
  sending = false;
}

if (advanceBox && advanceBox.dataset.followUrl) followAdvance(advanceBox.dataset.followUrl, null);
