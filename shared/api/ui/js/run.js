// A run: its header and actions, the DAG or the Gantt chart, and the detail of a selected task.
import { api } from "./api.js";
import { WORKFLOW_TERMINAL, badge, clear, clock, countsText, duration, elapsed, h, keepFocus, progressBar } from "./dom.js";
import { EXPAND_UP_TO, EXPANDABLE_UP_TO, drawGraph, groupsOf } from "./graph.js";
import { History, criticalText, drawGantt, learnAttempts } from "./gantt.js";
import { groupPanel, taskPanel } from "./task.js";
import { costPanel } from "./cost.js";
import { UnservedQueues, unservedNotice } from "./unserved.js";

export function runView(root, route, ctx) {
  const id = route.id;
  let graph = null, wf = null, drawn = null, expanded = null, tab = route.tab, selection = selectionOf(route);
  let laneBy = "queue";
  let busyUntil = 0;
  const seenGroups = new Set();

  /** foreach groups seen for the first time are drawn expanded when small (the user's choice
   * stands for the ones already seen). */
  function expandNewGroups() {
    for (const [name, members] of groupsOf(graph)) {
      if (seenGroups.has(name)) continue;
      seenGroups.add(name);
      if (members.length <= EXPAND_UP_TO) expanded.add(name);
    }
  }
  const history = new History();
  const head = h("div", { class: "run-head" });
  const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Run views" });
  const tools = h("div", { class: "canvas-tools" });
  const stage = h("div", { id: "stage" });
  const canvas = h("div", { class: "canvas", role: "tabpanel", id: "run-panel" }, tools, stage);
  const detail = h("aside", { class: "detail", "aria-label": "Selection detail", hidden: true });
  const body = h("div", { class: "run-body" }, h("div", {}, tabs, canvas), detail);
  const cost = h("section", { class: "cost-panel", id: "cost-panel", "aria-label": "Cost" });
  let costOf = "";
  const unserved = new UnservedQueues();
  let unservedQueues = new Set();
  const unservedBox = h("div", { class: "note", id: "unserved", role: "status", hidden: true });
  root.append(h("p", { class: "small" }, h("a", { href: "#/" }, "← Workflows")), head, unservedBox, body, cost);
  /** Say which queues tasks wait on that no live worker polls (and mark their nodes). */
  async function checkUnserved() {
    unservedQueues = await unserved.check(wf.tasks);
    const notice = unservedNotice(unservedQueues, wf.tasks);
    unservedBox.hidden = !notice;
    if (notice) clear(unservedBox).append(notice); else clear(unservedBox);
  }
  /** The cost changes only when tasks change state (or time passes while they run): refetch then. */
  function refreshCost() {
    const key = `${wf.status} ${JSON.stringify(wf.counts)}`;
    if (key !== costOf) { costOf = key; costPanel(cost, id); }
  }

  const href = (t, sel = selection) => {
    const q = sel ? `?${sel.kind}=${encodeURIComponent(sel.name)}` : "";
    return `#/runs/${encodeURIComponent(id)}${t === "gantt" ? "/gantt" : ""}${q}`;
  };
  const open = (kind, name) => { location.hash = href(tab, { kind, name }); };

  function renderTabs() {
    clear(tabs).append(...["graph", "gantt"].map((t) => h("a", {
      role: "tab", href: href(t), id: `tab-${t}`, "aria-selected": String(t === tab), "aria-controls": "run-panel",
    }, t === "graph" ? "Graph" : "Gantt")));
  }

  function renderHead() {
    const terminal = WORKFLOW_TERMINAL.has(wf.status);
    // Only the actions that apply are shown: cancel while it runs, retry once it failed or was cancelled.
    const cancel = h("button", { type: "button", id: "cancel-run", class: "danger", hidden: terminal, disabled: wf.cancel_requested },
      wf.cancel_requested ? "Cancelling…" : "Cancel run");
    const retry = h("button", { type: "button", id: "retry-run", hidden: !(wf.status === "failed" || wf.status === "cancelled") }, "Retry failed tasks");
    cancel.addEventListener("click", () => act("cancel", `Cancel workflow ${wf.name} (${id})? Running tasks are stopped; finished ones keep their results.`, "Cancel run"));
    retry.addEventListener("click", () => act("retry", `Rerun workflow ${wf.name} (${id}) from its failed and cancelled tasks? Completed tasks are not run again.`, "Retry", { destructive: false }));
    clear(head).append(
      h("div", { class: "title" },
        h("h1", {}, wf.name, " ", badge(wf.status)),
        h("dl", {},
          item("id", h("span", { class: "mono" }, id)), item("run", wf.run), item("created", clock(wf.created_at)),
          item("duration", duration(elapsed(wf))), item("tasks", countsText(wf.counts, wf.total))),
        paramsList(wf.params),
        h("div", { style: "max-width:520px;margin-top:8px" }, progressBar(wf.counts, wf.total)),
        wf.error ? h("p", { class: "error small" }, wf.error) : null,
        notifyLine(wf.notify)),
      h("div", { class: "actions" }, retry, cancel));
  }

  async function act(what, question, verb, options) {
    if (!(await ctx.confirm(question, verb, options))) return;
    const button = head.querySelector(what === "cancel" ? "#cancel-run" : "#retry-run");
    if (button) { // feedback at once: the coordinator applies it a moment later
      button.disabled = true;
      button.textContent = what === "cancel" ? "Cancelling…" : "Retrying…";
    }
    try {
      await api[what](id);
      ctx.banner("");
      // The coordinator applies the action a moment later: keep refreshing for a while even if the
      // run still reads as finished (a retry turns a failed run into a running one).
      busyUntil = Date.now() + 20_000;
      ctx.poke();
    } catch (err) {
      ctx.failed(err);
    }
  }

  function renderStage() {
    clear(tools);
    if (tab === "graph") {
      const zoomOut = h("button", { type: "button", "aria-label": "Zoom out" }, "−");
      const fit = h("button", { type: "button" }, "Fit");
      const zoomIn = h("button", { type: "button", "aria-label": "Zoom in" }, "+");
      tools.append(zoomOut, fit, zoomIn, legend());
      drawn = drawGraph(stage, graph, expanded, open);
      zoomOut.addEventListener("click", () => drawn.zoom(1 / 1.25));
      zoomIn.addEventListener("click", () => drawn.zoom(1.25));
      fit.addEventListener("click", () => drawn.fit());
      drawn.update(wf.tasks, selection && selection.name, unservedQueues);
    } else {
      const lanes = h("select", { id: "lane-by", "aria-label": "Lanes by" },
        h("option", { value: "queue", selected: laneBy === "queue" }, "queue"),
        h("option", { value: "worker", selected: laneBy === "worker" }, "worker"));
      lanes.addEventListener("change", () => { laneBy = lanes.value; renderStage(); });
      const path = h("div", { class: "critical-path" });
      tools.append(h("label", {}, "Lanes by ", lanes), ganttLegend(), path);
      const result = drawGantt(stage, { graph, wf, history, laneBy, selected: selection && selection.name, onOpen: open });
      path.append(criticalText(graph, wf, result.critical));
      drawn = null;
    }
  }

  async function renderDetail() {
    const wasOpen = body.classList.contains("with-detail");
    body.classList.toggle("with-detail", Boolean(selection));
    detail.hidden = !selection;
    if (wasOpen !== Boolean(selection) && drawn) drawn.fit(); // the canvas changed width
    if (!selection) return;
    const close = () => { location.hash = href(tab, null); };
    if (selection.kind === "group") {
      const groups = groupsOf(graph);
      const members = groups.get(selection.name) || [];
      const canExpand = members.length <= EXPANDABLE_UP_TO;
      groupPanel(detail, { id, graph, wf, name: selection.name, members, expanded: expanded.has(selection.name), canExpand, close, open,
        toggle: () => {
          if (expanded.has(selection.name)) expanded.delete(selection.name); else expanded.add(selection.name);
          renderStage();
          renderDetail();
        } });
    } else {
      await taskPanel(detail, { id, name: selection.name, close, ctx });
    }
  }

  const view = {
    interval: () => (wf && WORKFLOW_TERMINAL.has(wf.status) && Date.now() > busyUntil ? 0
      : graph && graph.tasks.length > 2000 ? 5000 : 2000),
    async refresh() {
      if (!graph) {
        [graph, wf] = await Promise.all([api.graph(id), api.workflow(id)]);
        expanded = new Set();
        expandNewGroups();
        await checkUnserved();
        history.observe(wf.tasks);
        if (tab === "gantt") await learnAttempts(history, wf.tasks, (name) => api.attempts(id, name));
        renderTabs();
        renderHead();
        renderStage();
        renderDetail();
        refreshCost();
        return;
      }
      const before = wf;
      wf = await api.workflow(id);
      await checkUnserved();
      history.observe(wf.tasks);
      if (tab === "gantt") await learnAttempts(history, wf.tasks, (name) => api.attempts(id, name));
      keepFocus(head, renderHead);
      refreshCost();
      if (Object.keys(wf.tasks).length !== graph.tasks.length) {
        // A foreach_from expanded at run time: the DAG grew (its graph is not cached).
        graph = await api.graph(id);
        expandNewGroups();
        keepFocus(canvas, renderStage);
      } else if (tab === "graph" && drawn) drawn.update(wf.tasks, selection && selection.name, unservedQueues);
      else keepFocus(canvas, renderStage);
      if (selection && selection.kind === "task" && JSON.stringify(before.tasks[selection.name]) !== JSON.stringify(wf.tasks[selection.name])) {
        renderDetail();
      } else if (selection && selection.kind === "group") renderDetail();
    },
    async update(next) {
      const changedTab = next.tab !== tab;
      tab = next.tab;
      selection = selectionOf(next);
      if (!graph) return;
      if (tab === "gantt") await learnAttempts(history, wf.tasks, (name) => api.attempts(id, name));
      renderTabs();
      if (changedTab) renderStage();
      else if (tab === "graph" && drawn) drawn.update(wf.tasks, selection && selection.name, unservedQueues);
      else renderStage();
      renderDetail();
    },
  };
  return view;
}

function selectionOf(route) {
  if (route.params.get("task")) return { kind: "task", name: route.params.get("task") };
  if (route.params.get("group")) return { kind: "group", name: route.params.get("group") };
  return null;
}

/** Who is told when the run ends (notify:, --notify): each webhook's host and events; none: nothing. */
function notifyLine(hooks) {
  if (!hooks || !hooks.length) return null;
  const shown = hooks.map((n) => {
    const extra = [n.format !== "json" ? n.format : null, n.signed ? "signed" : null].filter(Boolean);
    return `${n.host} (${n.events.join(", ")}${extra.length ? "; " + extra.join(", ") : ""})`;
  });
  return h("p", { class: "small muted", id: "run-notify", title: "Webhooks told when the run ends (docs/notifications.md)" },
    "notifies ", shown.join(" · "));
}

/** The run's workflow parameters (params:), NAME = value as its tasks see it; none: nothing. */
function paramsList(params) {
  const names = Object.keys(params || {});
  if (!names.length) return null;
  return h("dl", { class: "params", id: "run-params", "aria-label": "Parameters" },
    h("div", {}, h("dt", {}, "params")),
    names.map((name) => {
      const value = params[name];
      const text = typeof value === "string" ? value : JSON.stringify(value);
      const shown = text.length > 60 ? `${text.slice(0, 59)}…` : text;
      return h("div", { "data-param": name }, h("dt", { class: "mono" }, name), h("dd", { class: "mono", title: text }, shown));
    }));
}

function item(term, value) {
  return h("div", {}, h("dt", {}, term), h("dd", {}, value));
}

const LEGEND = [["completed", "#16a34a"], ["running", "#2563eb"], ["queued", "#f59e0b"], ["failed", "#dc2626"],
  ["upstream failed", "#ea580c"], ["skipped", "#a8a29e"], ["cancelled", "#6b7280"], ["pending", "#fff; border:1px dashed #6b7280"]];

function legend() {
  return h("div", { class: "legend", "aria-hidden": "true" }, LEGEND.map(([name, colour]) => h("span", {}, h("i", { style: `background:${colour}` }), name)));
}

function ganttLegend() {
  return h("div", { class: "legend", "aria-hidden": "true" },
    h("span", {}, h("i", { style: "background:repeating-linear-gradient(45deg,#fff7e0 0 2px,#d9a441 2px 4px)" }), "waiting for a worker"),
    h("span", {}, h("i", { style: "background:#22c55e" }), "ran"),
    h("span", {}, h("i", { style: "background:#fca5a5;border:1px dashed #b91c1c" }), "earlier attempt"),
    h("span", {}, h("i", { style: "background:#fff;border:2px solid #111827" }), "critical path"));
}
