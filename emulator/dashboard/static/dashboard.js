// The dashboard's few actions: forms marked data-api send JSON to the emulator's own API.
"use strict";

function showFlash(text, isError) {
  const flash = document.getElementById("flash");
  if (!flash) return;
  flash.textContent = text;
  flash.className = isError ? "error" : "ok";
  flash.hidden = false;
}

function fill(template, data) {
  return template.replace(/\{(\w+)\}/g, (_, key) => (data && key in data ? data[key] : ""));
}

function formBody(form) {
  if (form.dataset.body) return form.dataset.body;
  if (form.elements.json) return form.elements.json.value;
  const fields = {};
  for (const input of form.querySelectorAll("input[name]")) {
    if (input.value.trim()) fields[input.name] = input.value.trim();
  }
  return Object.keys(fields).length || form.querySelector("input[name]") ? JSON.stringify(fields) : null;
}

function problemText(status, data) {
  if (data && typeof data === "object") {
    const details = (data.errors || []).map((e) => `${e.field}: ${e.message}`).join("; ");
    const message = data.message || data.error || JSON.stringify(data);
    return `${status}: ${message}${details && !message.includes(details) ? ` (${details})` : ""}`;
  }
  return `${status}: ${data}`;
}

let sending = false; // an action is on its way: the page does not reload under it

async function send(form) {
  if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
  sending = true;
  const body = formBody(form);
  const buttons = form.querySelectorAll("button");
  buttons.forEach((b) => (b.disabled = true));
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
      showFlash(form.dataset.missing, true);
    } else if (!response.ok) {
      showFlash(problemText(response.status, data), true);
    } else if (form.dataset.then) {
      window.location.href = fill(form.dataset.then, data);
      return;
    } else {
      if (form.dataset.flash) sessionStorage.setItem("flash", fill(form.dataset.flash, data));
      window.location.reload();
      return;
    }
  } catch (error) {
    showFlash(`the emulator did not answer: ${error}`, true);
  }
  buttons.forEach((b) => (b.disabled = false));
  sending = false;
}

// A page that follows a run (an export's) reloads itself, unless an action is being sent.
const reloading = document.querySelector("[data-reload]");
if (reloading) {
  setInterval(() => { if (!sending) window.location.reload(); }, Number(reloading.dataset.reload));
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.dataset && form.dataset.busy) {
    // an ordinary form that takes a while (scenario runs): say so until the answer arrives
    showFlash(form.dataset.busy, false);
    return;
  }
  if (!form.dataset || !form.dataset.api) return;
  event.preventDefault();
  send(form);
});

const pending = sessionStorage.getItem("flash");
if (pending) {
  sessionStorage.removeItem("flash");
  showFlash(pending, false);
}

// A verify run's page: follow GET /_emulator/verify/{id} until it ends, then show its report.
async function followVerify(box) {
  const status = document.getElementById("verify-status");
  const progress = document.getElementById("verify-progress");
  const base = document.documentElement.dataset.base || ""; // /w/{id} in a workspace
  const response = await fetch(`${base}/_emulator/verify/${encodeURIComponent(box.dataset.id)}`);
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
    progress.textContent = "Running… (this page follows the run)";
    setTimeout(() => followVerify(box), 1000);
    return;
  }
  progress.textContent = `Finished: ${run.status}`;
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
if (verifyBox) followVerify(verifyBox);
