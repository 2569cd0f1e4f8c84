// The tether dashboard: plain DOM code, no build step, talking to the control API only.
"use strict";

const API = "/api/v1";
const FEED_ROWS = 300;
const state = { token: sessionStorage.getItem("tether-token") || "", feed: null };

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (state.token) h.Authorization = "Bearer " + state.token;
  return h;
}

async function api(path, options) {
  const opts = Object.assign({}, options || {});
  opts.headers = headers(opts.body ? { "Content-Type": "application/json" } : {});
  const response = await fetch(API + path, opts);
  if (response.status === 401) {
    askToken();
    throw new Error("the API needs a token");
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
  return body;
}

function askToken() {
  document.getElementById("token-form").hidden = false;
  document.getElementById("health").textContent = "this API needs its token";
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    if (cell instanceof Node) {
      const td = document.createElement("td");
      td.appendChild(cell);
      tr.appendChild(td);
    } else {
      tr.appendChild(el("td", cell));
    }
  }
  return tr;
}

function fill(tableId, rows) {
  const body = document.querySelector("#" + tableId + " tbody");
  body.replaceChildren(...rows);
}

function taskLink(process, eventId) {
  if (!eventId) return el("span", "");
  const a = el("a", eventId.slice(0, 8), "task");
  a.title = eventId;
  a.dataset.process = process;
  a.dataset.event = eventId;
  a.addEventListener("click", () => showTimeline(process, eventId));
  return a;
}

// -- processes, dead letters, catalog (polled) ------------------------------------------

let processNames = [];

// Tokens and cost of a process's model calls ("-" before any): "12.4k tok · $0.0312".
function usageText(usage) {
  if (!usage || !usage.model_calls) return "-";
  const tokens = usage.total_tokens >= 1000
    ? (usage.total_tokens / 1000).toFixed(1) + "k" : String(usage.total_tokens);
  const unpriced = usage.unpriced_calls ? " (" + usage.unpriced_calls + " unpriced)" : "";
  return tokens + " tok · $" + usage.cost.toFixed(4) + unpriced;
}

async function refresh() {
  try {
    const health = await api("/health");
    document.getElementById("health").textContent =
      "runtime " + (health.version || "") + " · " + new Date().toLocaleTimeString();
    const { processes } = await api("/processes");
    processNames = processes.map((p) => p.name);
    fill("processes", processes.map((p) => {
      const tr = row([p.name, p.state, p.queue_size, p.in_flight, p.invocation_count,
        p.dead_letter_count, p.restart_count, hookCount(p), usageText(p.usage)]);
      tr.dataset.process = p.name;
      tr.children[1].className = "state-" + p.state;
      return tr;
    }));
    syncOptions("f-process", processNames);
    syncOptions("c-process", processNames);
    await refreshApprovals(processes);
    await refreshCharts();
    await refreshDeadLetters(processes);
    await refreshCatalog();
  } catch (err) {
    document.getElementById("health").textContent = String(err.message || err);
  }
}

// What the catalog lists for the process: its whole chain, the shared and inherited hooks
// said (a process listed from another cluster host may only have its own hook_count).
function hookCount(p) {
  const chain = p.hooks_in_chain;
  if (!chain) return p.hook_count;
  const parts = ["shared", "inherited"].filter((k) => chain[k]).map((k) => chain[k] + " " + k);
  return parts.length ? chain.total + " (" + parts.join(", ") + ")" : chain.total;
}

// -- per-hook charts of the last hour (SVG drawn by the server from the run history) -----

function svgNode(markup) {
  const doc = new DOMParser().parseFromString(markup, "image/svg+xml");
  return document.importNode(doc.documentElement, true);
}

function rate(value) {
  const text = (100 * value).toFixed(value && value < 0.01 ? 1 : 0) + " %";
  return el("span", text, value > 0 ? "rate-bad" : "");
}

function ms(value) {
  if (value === null || value === undefined) return "-";
  return value.toFixed(value < 1 ? 2 : 1);
}

async function refreshCharts() {
  const name = document.getElementById("c-process").value;
  if (!name) return fill("charts", []);
  const { hooks } = await api("/processes/" + encodeURIComponent(name) + "/hooks/stats");
  document.getElementById("charts-state").textContent =
    hooks.length ? "" : "no hook of " + name + " ran in the last hour";
  fill("charts", hooks.map((h) => {
    const tr = row([h.event, h.hook_name, h.runs, ms(h.p50_ms), ms(h.p95_ms),
      rate(h.block_rate), rate(h.error_rate), svgNode(h.runs_svg), svgNode(h.duration_svg)]);
    tr.dataset.hook = h.hook_id;
    return tr;
  }));
}

// The tool calls waiting for an operator (status's awaiting_approval), each with what it
// asks and its answer buttons; in a cluster the request goes to the host running the process.
async function refreshApprovals(processes) {
  const rows = [];
  for (const p of processes) {
    if (!p.awaiting_approval || !p.awaiting_approval.length) continue;
    const path = "/processes/" + encodeURIComponent(p.name) + "/approvals";
    let approvals = [];
    try {
      ({ approvals } = await api(path));
    } catch (err) { continue; /* answered, or the process moved, meanwhile */ }
    for (const a of approvals) {
      const buttons = el("span");
      for (const [label, approved] of [["approve", true], ["deny", false]]) {
        const button = el("button", label, label);
        button.addEventListener("click", async () => {
          for (const b of buttons.children) b.disabled = true;
          try {
            await api(path + "/" + encodeURIComponent(a.request_id), {
              method: "POST",
              body: JSON.stringify({ approved, reviewer: "dashboard" }),
            });
          } catch (err) {
            alert(err.message);
          }
          refresh();
        });
        buttons.appendChild(button);
      }
      const tr = row([p.name, a.tool_name, JSON.stringify(a.arguments, null, 1), a.reason || "",
        new Date(a.asked_at * 1000).toLocaleTimeString(), taskLink(p.name, a.event_id), buttons]);
      tr.dataset.request = a.request_id;
      rows.push(tr);
    }
  }
  document.getElementById("approvals-state").textContent =
    rows.length ? rows.length + " waiting" : "none waiting";
  fill("approvals", rows);
}

async function refreshDeadLetters(processes) {
  const rows = [];
  for (const p of processes) {
    if (!p.dead_letter_count) continue;
    const { dead_letters } = await api("/processes/" + encodeURIComponent(p.name) + "/dead-letters");
    for (const d of dead_letters) {
      const button = el("button", "redeliver");
      button.addEventListener("click", async () => {
        await api("/processes/" + encodeURIComponent(p.name) + "/dead-letters/redeliver",
          { method: "POST", body: JSON.stringify({ event_ids: [d.event_id] }) });
        refresh();
      });
      rows.push(row([p.name, taskLink(p.name, d.event_id), d.reason, d.attempts,
        d.error || "", button]));
    }
  }
  fill("dead-letters", rows);
}

async function refreshCatalog() {
  const { hooks } = await api("/hooks/catalog");
  fill("catalog", hooks.map((h) => {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = h.enabled;
    box.title = (h.enabled ? "disable " : "enable ") + h.hook_id;
    box.addEventListener("change", async () => {
      const action = box.checked ? "enable" : "disable";
      try {
        await api("/processes/" + encodeURIComponent(h.process) + "/hooks/" +
          encodeURIComponent(h.hook_id) + "/" + action, { method: "POST" });
      } catch (err) {
        box.checked = !box.checked;
        alert(err.message);
      }
    });
    const name = h.source === "shared" ? h.name + " (shared)" : h.name;
    return row([h.process, h.event, name, h.source, h.executor_kind, h.mode, h.priority, box]);
  }));
}

function syncOptions(id, values) {
  const select = document.getElementById(id);
  const have = new Set(Array.from(select.options).map((o) => o.value));
  for (const value of values) {
    if (!have.has(value)) select.appendChild(new Option(value, value));
  }
}

// -- the live feed (server-sent events over fetch, so the token goes in a header) -------------

function feedQuery() {
  const params = new URLSearchParams();
  for (const [key, id] of [["process", "f-process"], ["event", "f-event"], ["outcome", "f-outcome"]]) {
    const value = document.getElementById(id).value;
    if (value) params.set(key, value);
  }
  const text = params.toString();
  return text ? "?" + text : "";
}

async function openFeed() {
  if (state.feed) state.feed.abort();
  const controller = new AbortController();
  state.feed = controller;
  const status = document.getElementById("feed-state");
  try {
    const response = await fetch(API + "/hooks/runs/stream" + feedQuery(),
      { headers: headers(), signal: controller.signal });
    if (response.status === 401) { askToken(); return; }
    if (!response.ok) throw new Error("feed answered " + response.status);
    status.textContent = "live";
    document.body.dataset.feed = "live";
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        handleMessage(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  } catch (err) {
    if (controller.signal.aborted) return;
    status.textContent = "reconnecting (" + (err.message || err) + ")";
  }
  document.body.dataset.feed = "closed";
  if (!controller.signal.aborted) setTimeout(openFeed, 2000);
}

function handleMessage(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trim());
  }
  if (!data.length) return;
  const payload = JSON.parse(data.join("\n"));
  if (event === "hook_run") addRun(payload);
  else if (event === "lost") addNote(payload.count + " runs not shown (the page fell behind)");
}

function addRun(run) {
  const body = document.querySelector("#feed tbody");
  const time = new Date(run.recorded_at).toLocaleTimeString();
  const tr = row([time, run.process_id, run.event, run.hook_name, run.outcome,
    Number(run.duration_ms).toFixed(2), taskLink(run.process_id, run.event_id)]);
  tr.className = "new";
  tr.dataset.event = run.event;
  tr.dataset.outcome = run.outcome;
  tr.children[4].className = "outcome-" + run.outcome;
  body.prepend(tr);
  // What the hook asked to show the operator (a Claude Code systemMessage or stopReason),
  // under its run.
  if (run.notice) tr.after(noteRow(run.hook_name + ": " + run.notice, "notice"));
  while (body.children.length > FEED_ROWS) body.lastElementChild.remove();
}

function noteRow(text, cls) {
  const tr = document.createElement("tr");
  const td = el("td", text, cls);
  td.colSpan = 7;
  tr.appendChild(td);
  return tr;
}

function addNote(text) {
  document.querySelector("#feed tbody").prepend(noteRow(text, "muted"));
}

// -- a task's timeline -----------------------------------------------------------------------

async function showTimeline(process, eventId) {
  const list = document.getElementById("timeline");
  document.getElementById("timeline-title").textContent = process + " · " + eventId;
  try {
    const t = await api("/processes/" + encodeURIComponent(process) + "/events/" +
      encodeURIComponent(eventId) + "/timeline");
    const items = t.hook_runs.map((r) => el("li",
      new Date(r.recorded_at).toLocaleTimeString() + "  " + r.event + "  " + r.hook_name +
      " → " + r.outcome + " (" + Number(r.duration_ms).toFixed(2) + " ms)" +
      (r.notice ? " · " + r.notice : ""),
      "outcome-" + r.outcome));
    const turns = t.messages.filter((m) => m.role === "assistant").length;
    const tools = t.messages.reduce((n, m) => n + m.tool_calls, 0);
    if (t.messages.length) items.push(el("li", "run: " + turns + " model turn(s), " + tools + " tool call(s)"));
    for (const d of t.dead_letters) items.push(el("li", "dead-lettered: " + d.reason, "outcome-failed"));
    list.replaceChildren(...items);
  } catch (err) {
    list.replaceChildren(el("li", err.message, "muted"));
  }
}

async function refreshTasks() {
  const box = document.getElementById("tasks");
  const links = [];
  for (const name of processNames) {
    try {
      const { events } = await api("/processes/" + encodeURIComponent(name) + "/events");
      for (const id of events.slice(-5).reverse()) links.push(taskLink(name, id));
    } catch (err) { /* a process removed meanwhile */ }
  }
  box.replaceChildren(...links);
}

// -- start -----------------------------------------------------------------------------------

async function start() {
  document.getElementById("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    state.token = document.getElementById("token").value.trim();
    sessionStorage.setItem("tether-token", state.token);
    document.getElementById("token-form").hidden = true;
    refresh();
    openFeed();
  });
  for (const id of ["f-process", "f-event", "f-outcome"]) {
    document.getElementById(id).addEventListener("change", openFeed);
  }
  document.getElementById("feed-clear").addEventListener("click", () => fill("feed", []));
  document.getElementById("c-process").addEventListener("change", () => refreshCharts());
  try {
    const { events } = await api("/hooks/events");
    syncOptions("f-event", events.map((e) => e.event));
  } catch (err) { /* shown by refresh */ }
  syncOptions("f-outcome", ["applied", "passed", "blocked", "failed", "timed_out", "skipped", "dropped"]);
  await refresh();
  openFeed();
  setInterval(refresh, 2000);
  setInterval(refreshTasks, 3000);
}

start();
