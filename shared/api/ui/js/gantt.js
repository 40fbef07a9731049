// The Gantt chart of a run: one bar per attempt (queued → started → finished), in lanes by queue
// or by worker, earlier attempts of retried tasks beside the current one, the critical path outlined.
// Earlier attempts come from the state (GET .../attempts, which keeps them after retries and reruns)
// and from what this page saw while the run went on (History).
import { clear, duration, elide, h, label, s } from "./dom.js";

const ROW_H = 22, BAR_H = 14, LANE_GAP = 10, AXIS_H = 26;
const LANE_W = [150, 320]; // the lane-name column: as wide as the longest name, within these (px)
const MIN_BAR_W = 3; // px: a 1 ms attempt is still a bar one can see and click
const MIN_SPAN_S = 0.01; // the axis spans the run, and at least 10 ms
const GAP = 4; // px between a bar and its label, and between things in a row
export const DETAILED_UP_TO = 500; // above this many bars: no queue-wait segments, no focus stops

/** Earlier attempts, as observed: each refresh compares every task with the previous answer, and a
 * task whose attempt number grew leaves its previous attempt here. */
export class History {
  constructor() {
    this.previous = null; // the last answer's tasks
    this.attempts = new Map(); // task -> [snapshots of its earlier attempts]
  }
  observe(tasks) {
    if (this.previous) {
      for (const [name, t] of Object.entries(tasks)) {
        const before = this.previous[name];
        if (!before || !before.attempt || t.attempt <= before.attempt) continue;
        if (!this.attempts.has(name)) this.attempts.set(name, []);
        this.attempts.get(name).push(before);
      }
    }
    this.previous = tasks;
  }
  earlier(name, current) {
    return (this.attempts.get(name) || []).filter((t) => t.attempt < current);
  }
  /** The earlier attempts the state kept (GET .../attempts), replacing what was observed. */
  learn(name, items) {
    const earlier = items.filter((a) => !a.current && a.kept && (a.queued_at || a.started_at));
    if (earlier.length) this.attempts.set(name, earlier);
  }
}

const LEARN_PER_REFRESH = 20; // attempt listings fetched per refresh (a run with many retries fills in over a few)

/** Fetch the kept earlier attempts of retried tasks not asked about yet at their current attempt,
 * into `history`; true if any were learned. */
export async function learnAttempts(history, tasks, load) {
  history.asked = history.asked || new Map();
  const wanted = Object.entries(tasks)
    .filter(([name, t]) => t.attempt > 1 && history.asked.get(name) !== t.attempt)
    .slice(0, LEARN_PER_REFRESH);
  const lists = await Promise.all(wanted.map(([name]) => load(name).catch(() => null)));
  let learned = false;
  wanted.forEach(([name, t], k) => {
    history.asked.set(name, t.attempt);
    if (lists[k]) {
      history.learn(name, lists[k].items);
      learned = true;
    }
  });
  return learned;
}

function barsOf(graph, tasks, history, laneBy, now) {
  const bars = [];
  for (const [i, def] of graph.tasks.entries()) {
    const t = tasks[def.name];
    if (!t || !t.attempt) continue;
    const lane = laneBy === "worker" ? (t.worker || "(no worker yet)") : def.queue;
    for (const old of history.earlier(def.name, t.attempt)) {
      const start = old.started_at, queued = old.queued_at || start;
      if (!queued) continue;
      const end = old.finished_at || t.queued_at || now;
      bars.push({ i, name: def.name, lane: laneBy === "worker" ? (old.worker || lane) : lane, attempt: old.attempt,
        queued, start, end, state: "retried", current: false });
    }
    const queued = t.queued_at || t.started_at;
    if (!queued) continue;
    const end = t.finished_at || now;
    bars.push({ i, name: def.name, lane, attempt: t.attempt, queued, start: t.started_at, end, state: t.state, current: true });
  }
  return bars;
}

/** The chain of tasks that decided when the run ended: from the last task to finish, back through
 * the parent that finished last each time. */
export function criticalPath(graph, tasks) {
  let last = -1, lastEnd = -Infinity;
  graph.tasks.forEach((def, i) => {
    const t = tasks[def.name];
    const end = t && (t.finished_at || (t.started_at ? Infinity : null));
    if (end !== null && end !== undefined && end > lastEnd) { last = i; lastEnd = end; }
  });
  const path = [];
  const seen = new Set();
  while (last >= 0 && !seen.has(last)) {
    seen.add(last);
    path.push(last);
    let next = -1, nextEnd = -Infinity;
    for (const p of graph.tasks[last].parents) {
      const t = tasks[graph.tasks[p].name];
      if (t && t.finished_at && t.finished_at > nextEnd) { next = p; nextEnd = t.finished_at; }
    }
    last = next;
  }
  return path.reverse();
}

const STEPS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];

function niceStep(span, target) {
  return STEPS.find((st) => span / st <= target) || 86400 * Math.ceil(span / target / 86400);
}

/** A tick's text: milliseconds when the ticks are less than a second apart. */
export function tickLabel(t, step) {
  if (t === 0) return "0";
  return step < 1 ? `+${Math.round(t * 1000)} ms` : `+${duration(t)}`;
}

/** Text widths in the chart's font (a canvas measures without touching the page's layout). */
function measurer(host) {
  const ctx = document.createElement("canvas").getContext("2d");
  const family = getComputedStyle(host).fontFamily;
  let font = "";
  return (text, px, weight = "normal") => {
    const wanted = `${weight} ${px}px ${family}`;
    if (wanted !== font) ctx.font = font = wanted; // parsing a font is what costs, not measuring
    return ctx.measureText(text).width;
  };
}

/** Where each bar and its label go, in pixels: the bar at least MIN_BAR_W wide and inside the
 * axis; its label inside it if it fits, else after it, else before it (whole, never cut).
 * bar.from/bar.to: the pixels the bar, its wait and its label take in their row. */
function place(bars, { x, left, right, detailed, measure }) {
  for (const bar of bars) {
    const wx = x(bar.queued);
    bar.from = detailed ? wx : Infinity;
    bar.to = detailed ? wx + 1 : -Infinity;
    if (!bar.start) continue;
    bar.w = Math.max(MIN_BAR_W, x(bar.end) - x(bar.start));
    bar.x = Math.max(left, Math.min(x(bar.start), right - bar.w));
    bar.from = Math.min(bar.from, bar.x);
    bar.to = Math.max(bar.to, bar.x + bar.w);
    bar.tag = `${bar.name}${bar.attempt > 1 ? ` ↻${bar.attempt}` : ""}`;
    // Thousands of bars: most are far too narrow for any label, so measure only the ones that may fit.
    const tw = detailed || bar.w > 2 * GAP + 2 + 3 * bar.tag.length ? measure(bar.tag, 11) : Infinity;
    if (bar.w >= tw + 2 * GAP + 2) bar.label = { x: bar.x + GAP + 1, anchor: "start" };
    else if (!detailed) bar.label = null; // thousands of bars: only labels that fit inside
    else if (bar.x + bar.w + GAP + tw <= right || bar.x - GAP - tw < left) {
      bar.label = { x: bar.x + bar.w + GAP, anchor: "start" };
      bar.to = bar.label.x + tw;
    } else {
      bar.label = { x: bar.x - GAP, anchor: "end" };
      bar.from = bar.label.x - tw;
    }
  }
}

/** Lanes -> rows in which nothing overlaps (greedy: each bar in the first row free at its left,
 * its wait and its label included). */
function pack(bars) {
  const lanes = new Map();
  const sorted = bars.filter((b) => b.from <= b.to).sort((a, b) => a.from - b.from);
  for (const bar of sorted) {
    if (!lanes.has(bar.lane)) lanes.set(bar.lane, []);
    const rows = lanes.get(bar.lane);
    let row = rows.findIndex((end) => end + GAP <= bar.from);
    if (row < 0) { row = rows.length; rows.push(0); }
    rows[row] = bar.to;
    bar.row = row;
  }
  return new Map([...lanes.entries()].sort((a, b) => a[0].localeCompare(b[0])));
}

/** The lane-name column's width, and each lane's name elided in the middle to fit it. */
function laneNames(lanes, measure) {
  const widest = Math.max(0, ...[...lanes.keys()].map((lane) => measure(lane, 12, 600)));
  const laneW = Math.min(LANE_W[1], Math.max(LANE_W[0], Math.ceil(widest) + 20));
  const names = new Map();
  for (const lane of lanes.keys()) {
    let shown = lane;
    for (let n = lane.length - 1; measure(shown, 12, 600) > laneW - 20 && n > 3; n--) shown = elide(lane, n);
    names.set(lane, shown);
  }
  return { laneW, names };
}

/** Draw the chart into `host`; returns the bars drawn and the critical path. */
export function drawGantt(host, { graph, wf, history, laneBy, selected, onOpen }) {
  const started = performance.now();
  const now = Date.now() / 1000;
  const bars = barsOf(graph, wf.tasks, history, laneBy, now);
  const detailed = bars.length <= DETAILED_UP_TO;
  const measure = measurer(host);
  const { laneW, names } = laneNames(new Map(bars.map((b) => [b.lane, true])), measure);
  const critical = criticalPath(graph, wf.tasks);
  const onPath = new Set(critical);
  // The axis fits the run: from its submission to its last end (sub-second runs in milliseconds).
  const t0 = Math.min(wf.created_at, ...bars.map((b) => b.queued));
  const t1 = Math.max(t0 + MIN_SPAN_S, ...bars.map((b) => b.end));
  const chartW = Math.max(560, host.clientWidth - laneW - 24);
  const left = laneW, right = laneW + chartW;
  const x = (t) => left + ((t - t0) / (t1 - t0)) * chartW;
  place(bars, { x, left, right, detailed, measure });
  const lanes = pack(bars);
  let height = AXIS_H;
  const laneTop = new Map();
  for (const [lane, rows] of lanes) { laneTop.set(lane, height); height += rows.length * ROW_H + LANE_GAP; }
  height = Math.max(height, AXIS_H + 40);
  const width = Math.ceil(Math.max(right + 12, ...bars.map((b) => (b.row === undefined ? 0 : b.to + GAP))));

  const svg = s("svg", { class: "gantt", width, height, role: "group",
    "aria-label": `Gantt chart: ${bars.length} attempts in ${lanes.size} lanes by ${laneBy}`,
    "data-axis-from": left, "data-axis-to": right, "data-axis-seconds": (t1 - t0).toFixed(3),
    "data-bars": bars.length, "data-finished": bars.filter((b) => b.current && b.state !== "running" && b.state !== "queued").length });
  svg.append(s("defs", {}, s("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
    s("rect", { width: 6, height: 6, fill: "#fff7e0" }), s("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#d9a441", "stroke-width": 2 }))));
  let odd = false;
  for (const [lane, rows] of lanes) {
    const top = laneTop.get(lane);
    svg.append(s("rect", { class: `lane-bg${odd ? " odd" : ""}`, x: 0, y: top - LANE_GAP / 2, width, height: rows.length * ROW_H + LANE_GAP }));
    const shown = names.get(lane);
    svg.append(s("text", { class: "lane-label", x: 10, y: top + 15, "data-lane": lane }, shown, shown !== lane ? s("title", {}, lane) : null));
    odd = !odd;
  }
  const step = niceStep(t1 - t0, Math.max(2, Math.floor(chartW / 90)));
  for (let k = 0; k * step <= t1 - t0 + 1e-9; k++) {
    const t = k * step, at = x(t0 + t);
    const tick = s("g", { class: "tick" }, s("line", { x1: at, x2: at, y1: AXIS_H - 6, y2: height }));
    const text = tickLabel(t, step);
    if (at + 3 + measure(text, 11) <= width) tick.append(s("text", { x: at + 3, y: 14 }, text));
    svg.append(tick);
  }
  const focusable = bars.length <= 300;
  for (const bar of bars) {
    if (bar.row === undefined) continue;
    const y = laneTop.get(bar.lane) + bar.row * ROW_H + (ROW_H - BAR_H) / 2;
    const run = bar.start ? bar.end - bar.start : 0;
    const wait = bar.start ? bar.start - bar.queued : bar.end - bar.queued;
    const text = `${bar.name}, attempt ${bar.attempt}: ${bar.state === "retried" ? "retried" : label(bar.state)}, waited ${duration(wait)}${bar.start ? `, ran ${duration(run)}` : ""}`;
    const g = s("g", {});
    const waitTo = bar.start ? bar.x : x(bar.end);
    if (detailed && x(bar.queued) < waitTo) {
      g.append(s("rect", { class: "wait", x: x(bar.queued), y: y + 3, width: Math.max(1, waitTo - x(bar.queued)), height: BAR_H - 6 }));
    }
    if (bar.start) {
      const cls = `bar b-${bar.state}${bar.current && onPath.has(bar.i) ? " critical" : ""}${bar.current && bar.name === selected ? " selected" : ""}`;
      const rect = s("rect", { class: cls, x: bar.x, y, width: bar.w, height: BAR_H, rx: Math.min(3, bar.w / 2),
        "data-task": bar.name, "data-attempt": bar.attempt, "data-state": bar.state,
        "data-focus-key": `bar:${bar.name}:${bar.attempt}` },
      s("title", {}, text));
      if (focusable) {
        rect.setAttribute("tabindex", "0");
        rect.setAttribute("role", "button");
        rect.setAttribute("aria-label", text);
      }
      const open = () => onOpen("task", bar.name);
      rect.addEventListener("click", open);
      rect.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); open(); } });
      g.append(rect);
      if (bar.label) {
        g.append(s("text", { class: "bar-label", x: bar.label.x, y: y + 11, "text-anchor": bar.label.anchor,
          "data-task": bar.name }, bar.tag));
      }
    }
    svg.append(g);
  }
  if (wf.status === "running" || wf.status === "cancelling" || wf.status === "pending") {
    svg.append(s("g", { class: "now" }, s("line", { x1: x(now), x2: x(now), y1: AXIS_H - 6, y2: height }),
      s("text", { x: x(now) - 26, y: AXIS_H - 8 }, "now")));
  }
  clear(host).append(svg);
  svg.setAttribute("data-render-ms", (performance.now() - started).toFixed(1));
  return { bars, critical, detailed };
}

export function criticalText(graph, wf, critical) {
  if (!critical.length) return h("span", {}, "No task has run yet.");
  const first = wf.tasks[graph.tasks[critical[0]].name];
  const last = wf.tasks[graph.tasks[critical[critical.length - 1]].name];
  const from = first.queued_at || first.started_at;
  const to = last.finished_at || Date.now() / 1000;
  const names = critical.map((i) => graph.tasks[i].name);
  return h("span", { id: "critical-path" }, h("b", {}, "Critical path"), ` (${duration(to - from)}): `, names.join(" → "));
}
