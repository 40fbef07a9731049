// Small DOM and formatting helpers shared by the views (no framework: the page needs no build).

export const SVG_NS = "http://www.w3.org/2000/svg";

export const TASK_STATES = [
  "pending", "ready", "queued", "running", "completed", "failed", "skipped", "upstream_failed",
  "cancelled",
];
export const TERMINAL = new Set(["completed", "failed", "skipped", "upstream_failed", "cancelled"]);
export const WORKFLOW_TERMINAL = new Set(["completed", "failed", "cancelled"]);

/** Create an element: h("a", {href: "#/", class: "x"}, "text", child...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** Create an SVG element the same way. */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    // Through the CSSOM: the page's Content-Security-Policy forbids inline style attributes.
    else if (key === "style") el.style.cssText = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
}

function append(el, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function label(state) {
  return String(state).replace("_", " ");
}

export function badge(state) {
  return h("span", { class: `badge s-${state}` }, label(state));
}

/** A stacked progress bar of task counts (done states first). */
export function progressBar(counts, total) {
  const order = ["completed", "skipped", "failed", "upstream_failed", "cancelled", "running", "queued"];
  const bar = h("div", { class: "progress", role: "img", "aria-label": countsText(counts, total) });
  for (const state of order) {
    const n = counts[state] || 0;
    if (n > 0 && total > 0) {
      bar.append(h("span", { class: `p-${state}`, style: `width:${(100 * n) / total}%` }));
    }
  }
  return bar;
}

export function doneCount(counts) {
  let done = 0;
  for (const state of TERMINAL) done += counts[state] || 0;
  return done;
}

export function countsText(counts, total) {
  const parts = [`${doneCount(counts)}/${total} done`];
  for (const state of ["running", "queued", "failed", "upstream_failed", "cancelled", "skipped"]) {
    if (counts[state]) parts.push(`${counts[state]} ${label(state)}`);
  }
  return parts.join(" · ");
}

/** "1h 02m", "3m 05s", "4.2 s", "35 ms" (a sub-second task is not "0.0 s"). */
export function duration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return "–";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  const total = Math.round(seconds);
  const hh = Math.floor(total / 3600);
  const mm = Math.floor((total % 3600) / 60);
  const ss = total % 60;
  if (hh) return `${hh}h ${String(mm).padStart(2, "0")}m`;
  if (mm) return `${mm}m ${String(ss).padStart(2, "0")}s`;
  return `${ss} s`;
}

/** A metric value, short but whole: 12, 0.21, 1.5e-5. */
export function number(value) {
  return Number.isInteger(value) ? String(value) : Number(value.toPrecision(4)).toString();
}

export function clock(epoch) {
  if (!epoch) return "–";
  return new Date(epoch * 1000).toLocaleString(undefined, {
    month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
    timeZoneName: "short", // the browser's zone, said: times are not UTC unless it says so
  });
}

export function ago(epoch, now = Date.now() / 1000) {
  if (!epoch) return "–";
  const d = Math.max(0, now - epoch);
  if (d < 60) return `${Math.round(d)} s ago`;
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400) return `${Math.round(d / 3600)} h ago`;
  return `${Math.round(d / 86400)} d ago`;
}

/** How long a workflow has run: to its end, or to now while it runs. */
export function elapsed(wf, now = Date.now() / 1000) {
  return (wf.finished_at || (WORKFLOW_TERMINAL.has(wf.status) ? wf.updated_at : now)) - wf.created_at;
}

/** The key of the focused element inside `container` (its data-focus-key or id), if any. */
export function focusKeyIn(container) {
  const active = document.activeElement;
  if (!active || active === container || !container.contains(active)) return null;
  return active.dataset.focusKey || active.id || null;
}

/** Focus the element of `container` with that key again (after a refresh redrew it). */
export function restoreFocus(container, key) {
  if (!key) return false;
  const again = [...container.querySelectorAll("[data-focus-key], [id]")]
    .find((el) => (el.dataset.focusKey || el.id) === key);
  if (again) again.focus({ preventScroll: true });
  return Boolean(again);
}

/** Redraw `container` with `render()` without taking the keyboard focus away from the user. */
export function keepFocus(container, render) {
  const key = focusKeyIn(container);
  render();
  restoreFocus(container, key);
}

/** `text` in at most `max` characters, the middle replaced by "…" (both ends of a name stay). */
export function elide(text, max) {
  if (text.length <= max) return text;
  const head = Math.ceil((max - 1) / 2);
  return `${text.slice(0, head)}…${text.slice(text.length - (max - 1 - head))}`;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}
