// The detail panel of a task (state, attempts, exit code, worker, timings, output, log tail) or of a
// foreach group (counts and members).
import { api } from "./api.js";
import { TERMINAL, badge, clear, clock, duration, focusKeyIn, h, label, restoreFocus } from "./dom.js";
import { groupCounts } from "./graph.js";
import { attemptsAndLog, progressView } from "./live.js";

const MEMBERS_SHOWN = 200;

function header(panel, title, close) {
  const closeBtn = h("button", { type: "button", class: "ghost", id: "detail-close", "aria-label": "Close the detail" }, "✕");
  closeBtn.addEventListener("click", close);
  panel.onkeydown = (ev) => { if (ev.key === "Escape") close(); };
  const heading = h("h2", { tabindex: "-1", id: "detail-title" }, title);
  panel.append(h("header", {}, heading, closeBtn));
  return heading;
}

export async function taskPanel(panel, { id, name, close, ctx }) {
  let t;
  try {
    t = await api.task(id, name);
  } catch (err) {
    clear(panel);
    header(panel, name, close);
    panel.append(h("p", { class: "error" }, err.message));
    return;
  }
  const hadFocus = panel.contains(document.activeElement);
  const focused = focusKeyIn(panel);
  clear(panel);
  const heading = header(panel, t.name, close);
  const waited = t.started_at && t.queued_at ? t.started_at - t.queued_at : null;
  const ran = t.started_at ? (t.finished_at || Date.now() / 1000) - t.started_at : null;
  panel.append(h("dl", { id: "task-facts" },
    fact("state", badge(t.state)),
    fact("attempt", `${t.attempt}${t.attempt > 1 ? ` (${t.attempt - 1} before it)` : ""}`),
    fact("retries", `${t.num_retries || 0} allowed per run`),
    fact("exit code", t.exit_code ?? "–"),
    fact("queue", t.queue),
    fact("worker", t.worker || (t.cached_from ? "none: result reused from the cache" : "–")),
    t.cached_from ? fact("cached from", `${t.cached_from.workflow_id} · ${t.cached_from.task} · attempt ${t.cached_from.attempt} (saved ${duration(t.cached_from.run_s)})`) : null,
    fact("queued", clock(t.queued_at)),
    fact("started", clock(t.started_at)),
    fact("finished", clock(t.finished_at)),
    fact("waited", duration(waited)),
    fact("ran", duration(ran)),
    t.timeout_s ? fact("timeout", duration(t.timeout_s)) : null,
    t.depends_on.length ? fact("depends on", t.depends_on.join(", ")) : null,
    t.params ? fact("params", Object.entries(t.params).map(([k, v]) => `${k}=${v}`).join(", ")) : null));
  const progress = progressView(t);
  if (progress) panel.append(h("h3", {}, "Progress"), progress);
  if (t.error) panel.append(h("h3", {}, "Error"), h("pre", { class: "error-text" }, t.error));
  panel.append(h("h3", {}, "Command"), h("pre", {}, t.cmd));
  const output = h("div", { id: "task-output" });
  panel.append(h("h3", {}, "Output"), output);
  if (!t.output) output.append(h("p", { class: "muted small" }, TERMINAL.has(t.state) ? "No output." : "Not yet."));
  else if ("inline" in t.output) output.append(h("pre", {}, JSON.stringify(t.output.inline, null, 2)));
  else output.append(h("p", { class: "small" }, `Stored as a blob (${t.output.size} bytes): `, fetchButton("Show", () => api.output(id, name), output, ctx)));
  const fullHref = `#/runs/${encodeURIComponent(id)}/log/${encodeURIComponent(name)}`;
  const logs = h("div", { id: "task-logs" });
  if (t.cached_from) {
    // The result was reused from the cache: no worker ran this attempt, so it has no log.
    panel.append(h("h3", {}, "Log"), logs);
    logs.append(h("p", { class: "muted small" }, `No log: the result was reused from ${t.cached_from.workflow_id} (its log is there).`));
  } else {
    panel.append(h("h3", {}, "Log ", h("a", { href: fullHref, class: "small", id: "full-log" }, "(full log)")), logs);
    await attemptsAndLog(logs, { id, name, t });
  }
  if (!restoreFocus(panel, focused) && !hadFocus) heading.focus({ preventScroll: true });
}

function fetchButton(text, load, into, ctx) {
  const button = h("button", { type: "button" }, text);
  button.addEventListener("click", async () => {
    try {
      const body = await load();
      let shown = body;
      try { shown = JSON.stringify(JSON.parse(body), null, 2); } catch { /* plain text */ }
      clear(into).append(h("pre", {}, shown));
    } catch (err) {
      ctx.failed(err);
    }
  });
  return button;
}

function fact(term, value) {
  return [h("dt", {}, term), h("dd", {}, value)];
}

export function groupPanel(panel, { graph, wf, name, members, expanded, canExpand, close, open, toggle }) {
  const hadFocus = panel.contains(document.activeElement);
  const focused = focusKeyIn(panel);
  clear(panel);
  const heading = header(panel, `foreach ${name}`, close);
  const counts = groupCounts(members, graph, wf.tasks);
  panel.append(h("p", {}, `${members.length} tasks: `,
    Object.entries(counts).map(([st, n]) => `${n} ${label(st)}`).join(", ")));
  const button = h("button", { type: "button", id: "toggle-group", disabled: !canExpand && !expanded },
    expanded ? "Collapse into one node" : canExpand ? "Expand in the graph" : `Too many to draw (over ${200})`);
  button.addEventListener("click", toggle);
  panel.append(button);
  const list = h("ul", { class: "members", "aria-label": `tasks of ${name}` });
  const order = [...members].sort((a, b) => rank(wf.tasks[graph.tasks[a].name]) - rank(wf.tasks[graph.tasks[b].name]));
  for (const i of order.slice(0, MEMBERS_SHOWN)) {
    const task = graph.tasks[i].name;
    const state = (wf.tasks[task] || {}).state || "pending";
    const link = h("button", { type: "button", "data-focus-key": `member:${task}` }, task);
    link.addEventListener("click", () => open("task", task));
    list.append(h("li", {}, link, badge(state)));
  }
  panel.append(h("h3", {}, members.length > MEMBERS_SHOWN ? `Members (failed and running first; ${MEMBERS_SHOWN} of ${members.length})` : "Members"), list);
  if (!restoreFocus(panel, focused) && !hadFocus) heading.focus({ preventScroll: true });
}

const RANK = { failed: 0, upstream_failed: 1, running: 2, queued: 3, cancelled: 4 };

function rank(t) {
  return t ? RANK[t.state] ?? 9 : 9;
}
