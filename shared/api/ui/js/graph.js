// The DAG of a run, laid out left to right by dagre (vendored). foreach groups larger than
// EXPAND_UP_TO collapse into one node with a progress ring, so the layout and the DOM grow with the
// collapsed graph, not with the number of tasks (a 10,000-task fan-out is a handful of nodes).
import { TERMINAL, clear, duration, elide, h, label, number, s } from "./dom.js";
import { definitionOrder } from "./order.js";

export const EXPAND_UP_TO = 8;
export const EXPANDABLE_UP_TO = 200;
const TASK_W = 196, TASK_H = 44, GROUP_W = 216, GROUP_H = 58;
const RING_ORDER = ["completed", "skipped", "failed", "upstream_failed", "cancelled", "running", "queued"];
const RING_COLOURS = {
  completed: "#16a34a", skipped: "#a8a29e", failed: "#dc2626", upstream_failed: "#ea580c",
  cancelled: "#6b7280", running: "#2563eb", queued: "#f59e0b",
};

/** foreach group name -> member task indices. */
export function groupsOf(graph) {
  const groups = new Map();
  graph.tasks.forEach((t, i) => {
    if (t.group === null || t.group === undefined) return;
    if (!groups.has(t.group)) groups.set(t.group, []);
    groups.get(t.group).push(i);
  });
  return groups;
}

/** The graph to draw: one node per task outside collapsed groups, one per collapsed group, and the
 * distinct edges between them. O(tasks + edges). A foreach_from task whose expansions exist is not
 * drawn: it never runs, its expansions (its group) stand for it. */
export function collapse(graph, groups, expanded) {
  const nodeOf = new Array(graph.tasks.length).fill(null);
  const nodes = new Map();
  graph.tasks.forEach((t, i) => {
    if ((t.group === null || t.group === undefined) && groups.has(t.name)) return; // expanded template
    const members = t.group !== null && t.group !== undefined ? groups.get(t.group) : null;
    if (members && members.length > 1 && !expanded.has(t.group)) {
      const id = `g:${t.group}`;
      nodeOf[i] = id;
      if (!nodes.has(id)) nodes.set(id, { id, kind: "group", name: t.group, members });
    } else {
      const id = `t:${t.name}`;
      nodeOf[i] = id;
      nodes.set(id, { id, kind: "task", name: t.name, index: i, queue: t.queue });
    }
  });
  const edges = new Map();
  graph.tasks.forEach((t, child) => {
    for (const parent of t.parents) {
      const a = nodeOf[parent], b = nodeOf[child];
      if (a !== null && b !== null && a !== b) edges.set(`${a}\u0000${b}`, [a, b]);
    }
  });
  return { nodes, edges: [...edges.values()] };
}

export function groupCounts(members, graph, tasks) {
  const counts = {};
  for (const i of members) {
    const st = (tasks[graph.tasks[i].name] || {}).state || "pending";
    counts[st] = (counts[st] || 0) + 1;
  }
  return counts;
}

function groupState(counts, total) {
  if (counts.failed || counts.upstream_failed) return "failed";
  if (counts.running) return "running";
  if (counts.queued) return "queued";
  let done = 0;
  for (const st of TERMINAL) done += counts[st] || 0;
  if (done === total) return counts.cancelled ? "cancelled" : "completed";
  return "pending";
}

/** An edge from the right side of `from` to the left side of `to`, through dagre's bend points,
 * as S-curves with horizontal tangents (reads as left-to-right flow). */
function curve(from, to, points) {
  const pts = [{ x: from.x + from.width / 2, y: from.y }, ...points.slice(1, -1), { x: to.x - to.width / 2, y: to.y }];
  let d = `M${pts[0].x},${pts[0].y}`;
  for (let i = 1; i < pts.length; i++) {
    const p = pts[i - 1], q = pts[i], dx = (q.x - p.x) / 2;
    d += ` C${p.x + dx},${p.y} ${q.x - dx},${q.y} ${q.x},${q.y}`;
  }
  return d;
}

/**
 * Draw the DAG into `host`. Returns { update(tasks, selected), fit() } so a refresh recolours the
 * nodes without laying the graph out again. onOpen(kind, name) is called on click or Enter.
 */
export function drawGraph(host, graph, expanded, onOpen) {
  const started = performance.now();
  const groups = groupsOf(graph);
  const { nodes, edges } = collapse(graph, groups, expanded);
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 14, ranksep: 64, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes.values()) {
    g.setNode(node.id, node.kind === "group" ? { width: GROUP_W, height: GROUP_H } : { width: TASK_W, height: TASK_H });
  }
  for (const [a, b] of edges) g.setEdge(a, b);
  const keyOf = (id) => { const node = nodes.get(id); return node.kind === "group" ? node.members[0] : node.index; };
  const ordering = definitionOrder(keyOf);
  dagre.layout(g, { customOrder: ordering });
  const { width, height } = g.graph();

  const svg = s("svg", {
    class: "dag", role: "group", width, height, viewBox: `0 0 ${width} ${height}`,
    "aria-label": `DAG of ${graph.tasks.length} tasks drawn as ${nodes.size} nodes`,
    "data-nodes": nodes.size, "data-tasks": graph.tasks.length,
    "data-order": ordering.followed ? "definition" : "fewer-crossings",
  });
  svg.append(s("defs", {}, s("marker", {
    id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse",
  }, s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#64748b" }))));
  const edgeLayer = s("g", { "aria-hidden": "true" });
  const edgeEls = [];
  for (const [a, b] of edges) {
    const path = s("path", { class: "edge", d: curve(g.node(a), g.node(b), g.edge(a, b).points), "marker-end": "url(#arrow)" });
    edgeEls.push([a, path]);
    edgeLayer.append(path);
  }
  svg.append(edgeLayer);

  const nodeEls = new Map();
  for (const node of nodes.values()) {
    const box = g.node(node.id);
    const w = box.width, hh = box.height;
    const el = s("g", {
      class: "node", tabindex: 0, role: "button", "data-node": node.id, "data-kind": node.kind,
      "data-name": node.name, transform: `translate(${box.x - w / 2},${box.y - hh / 2})`,
    });
    el.append(s("rect", { class: "box", width: w, height: hh, rx: 8 }));
    const title = s("title");
    el.append(title);
    const parts = { el, title };
    if (node.kind === "group") {
      el.append(s("circle", { class: "ring-bg", cx: 29, cy: hh / 2, r: 17 }));
      parts.ring = s("g", { transform: `rotate(-90 29 ${hh / 2})` });
      el.append(parts.ring);
      parts.pct = s("text", { x: 29, y: hh / 2 + 4, "text-anchor": "middle", class: "sub" });
      el.append(parts.pct);
      el.append(s("text", { x: 56, y: 24, "font-weight": 600 }, elide(node.name, 17),
        s("tspan", { class: "sub", dx: 6 }, `×${node.members.length}`)));
      parts.sub = s("text", { x: 56, y: 42, class: "sub" });
      el.append(parts.sub);
    } else {
      el.append(s("rect", { class: "strip", width: 6, height: hh, rx: 3 }));
      el.append(s("text", { x: 14, y: 19, "font-weight": 600 }, elide(node.name, 25)));
      parts.sub = s("text", { x: 14, y: 35, class: "sub" });
      el.append(parts.sub);
      // What a running task reports through $DAGQ_PROGRESS (hidden until it does).
      parts.barWidth = w - 24;
      parts.track = s("rect", { class: "progress-track", x: 14, y: hh - 7, width: parts.barWidth, height: 3, rx: 1.5, visibility: "hidden" });
      parts.fill = s("rect", { class: "progress-fill", x: 14, y: hh - 7, width: 0, height: 3, rx: 1.5, visibility: "hidden" });
      el.append(parts.track, parts.fill);
    }
    const open = () => onOpen(node.kind, node.name);
    el.addEventListener("click", open);
    el.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); open(); }
    });
    nodeEls.set(node.id, { node, ...parts });
    svg.append(el);
  }
  clear(host).append(svg);
  let scale = 1;
  const zoom = (value) => {
    scale = Math.min(2, Math.max(0.1, value));
    svg.setAttribute("width", width * scale);
    svg.setAttribute("height", height * scale);
  };
  const fit = () => zoom(Math.min(1, (host.clientWidth - 4) / width));
  fit();
  const layoutMs = performance.now() - started;
  svg.setAttribute("data-layout-ms", layoutMs.toFixed(1));

  /** `unserved`: queues no live worker polls (their queued tasks say so). */
  function update(tasks, selected, unserved = new Set()) {
    const terminalNode = new Set();
    for (const part of nodeEls.values()) {
      const { node, el, sub, title } = part;
      let state, text;
      if (node.kind === "group") {
        const counts = groupCounts(node.members, graph, tasks);
        const total = node.members.length;
        state = groupState(counts, total);
        let done = 0;
        for (const st of TERMINAL) done += counts[st] || 0;
        text = `${done}/${total} done${counts.running ? ` · ${counts.running} running` : ""}${counts.failed ? ` · ${counts.failed} failed` : ""}`;
        drawRing(part, counts, total, done);
        el.setAttribute("aria-label", `foreach ${node.name}: ${total} tasks, ${text}. Open the group`);
      } else {
        const t = tasks[node.name] || { state: "pending", attempt: 0 };
        state = t.state;
        const took = t.started_at && t.finished_at ? ` · ${duration(t.finished_at - t.started_at)}` : "";
        // A result reused from the cache: nothing ran (no attempt, no time) — say so.
        const stuck = state === "queued" && unserved.has(t.queue) ? t.queue : null;
        if (stuck) el.setAttribute("data-unserved", stuck); else el.removeAttribute("data-unserved");
        text = t.cached_from ? `cached${nodeProgress(part, t)}`
          : stuck ? `queued · no worker polls ${elide(stuck, 12)}`
          : `${label(state)}${t.attempt > 1 ? ` · attempt ${t.attempt}` : ""}${took}${nodeProgress(part, t)}`;
        el.setAttribute("aria-label", `task ${node.name}: ${text}. Open its detail`);
      }
      if (TERMINAL.has(state) || state === "completed") terminalNode.add(node.id);
      el.setAttribute("class", `node n-${state}${selected === node.name ? " selected" : ""}${el.hasAttribute("data-unserved") ? " unserved" : ""}`);
      el.setAttribute("data-state", state);
      sub.textContent = text;
      title.textContent = `${node.name}: ${text}`;
    }
    for (const [a, path] of edgeEls) path.setAttribute("class", terminalNode.has(a) ? "edge done" : "edge");
  }

  /** Show a running task's reported progress on its node: a thin bar, and " · 30% · loss=0.21". */
  function nodeProgress(part, t) {
    const live = !TERMINAL.has(t.state) && (t.progress !== undefined && t.progress !== null);
    part.track.setAttribute("visibility", live ? "visible" : "hidden");
    part.fill.setAttribute("visibility", live ? "visible" : "hidden");
    part.fill.setAttribute("width", live ? part.barWidth * Math.max(0, Math.min(1, t.progress)) : 0);
    if (TERMINAL.has(t.state)) return "";
    const first = Object.entries(t.metrics || {})[0];
    return `${live ? ` · ${Math.round(t.progress * 100)}%` : ""}${first ? ` · ${first[0]}=${number(first[1])}` : ""}`;
  }

  function drawRing(part, counts, total, done) {
    clear(part.ring);
    const r = 17, circumference = 2 * Math.PI * r;
    let offset = 0;
    for (const st of RING_ORDER) {
      const n = counts[st] || 0;
      if (!n) continue;
      const len = (circumference * n) / total;
      part.ring.append(s("circle", {
        class: "ring", cx: 29, cy: GROUP_H / 2, r, stroke: RING_COLOURS[st],
        "stroke-dasharray": `${len} ${circumference - len}`, "stroke-dashoffset": -offset,
      }));
      offset += len;
    }
    part.pct.textContent = `${Math.floor((100 * done) / total)}%`;
  }

  return { update, fit, zoom: (factor) => zoom(scale * factor), layoutMs, nodeCount: nodes.size };
}
