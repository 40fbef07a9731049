// A task as it runs and ran: its progress and metrics, its attempts (a picker) and the chosen
// attempt's log, tailed live while it grows. Logs, metric names and errors come from tasks: they are
// only ever set as text (textContent), never as HTML, and the page's CSP forbids inline scripts.
import { api } from "./api.js";
import { badge, clear, clock, duration, h, number } from "./dom.js";

const KEEP_CHARS = 200_000; // the panel shows at most this much of a log (its end)
const POLL_MS = 2000; // the worker appends every few seconds

const tails = new Map(); // "id\ntask\nattempt" -> the part of the log read so far
const picked = new Map(); // "id\ntask" -> the attempt the user picked (absent: the latest)

/** A progress bar and the latest metrics of a running task, or null when it reported none. */
export function progressView(t, { id = "task-progress" } = {}) {
  const metrics = Object.entries(t.metrics || {});
  if (t.progress === undefined || t.progress === null) {
    if (!metrics.length) return null;
  }
  const parts = [];
  if (t.progress !== undefined && t.progress !== null) parts.push(meter(t.progress));
  if (metrics.length) {
    parts.push(h("dl", { class: "metrics" }, metrics.map(([name, value]) =>
      h("div", {}, h("dt", {}, name), h("dd", {}, number(value))))));
  }
  return h("div", { class: "task-progress", id }, parts);
}

function meter(progress) {
  const pct = Math.max(0, Math.min(100, Math.round(progress * 100)));
  return h("div", { class: "meter", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": pct, "aria-label": "progress" },
    h("span", { class: "bar" }, h("span", { style: `width:${pct}%` })), h("span", { class: "pct" }, `${pct}%`));
}

/** The attempts of task `name` (a picker once there is more than one) and the picked attempt's log. */
export async function attemptsAndLog(container, { id, name, t }) {
  const key = `${id}\n${name}`;
  let items = null;
  if (t.attempt > 1) {
    try {
      items = (await api.attempts(id, name)).items;
    } catch {
      items = null; // an older API: the latest attempt only
    }
  }
  const chosen = picked.get(key) ?? null;
  const item = items && chosen !== null ? items.find((a) => a.attempt === chosen) : null;
  const attempt = item ? item.attempt : null;
  if (items && items.length > 1) {
    const select = h("select", { id: "attempt-picker", "aria-label": "Attempt" }, items.map((a) =>
      h("option", { value: String(a.attempt), selected: a.attempt === (attempt ?? t.attempt) },
        `attempt ${a.attempt}${a.current ? " (current)" : ""}: ${a.state ? a.state.replace("_", " ") : "not kept"}${a.exit_code !== null && a.exit_code !== undefined ? `, exit ${a.exit_code}` : ""}`)));
    select.addEventListener("change", () => {
      const n = Number(select.value);
      if (n === t.attempt) picked.delete(key); else picked.set(key, n);
      clear(container);
      attemptsAndLog(container, { id, name, t });
    });
    container.append(h("label", { class: "picker" }, "Attempt ", select));
  }
  if (item && !item.current) container.append(attemptFacts(item));
  const log = h("div", { id: "task-log" });
  container.append(log);
  tail(log, id, name, attempt, t.attempt);
}

function attemptFacts(a) {
  const ran = a.started_at && a.finished_at ? a.finished_at - a.started_at : null;
  const facts = [["state", a.state ? badge(a.state) : "not kept"], ["exit code", a.exit_code ?? "–"],
    ["worker", a.worker || "–"], ["started", clock(a.started_at)], ["finished", clock(a.finished_at)], ["ran", duration(ran)]];
  return h("div", { id: "attempt-facts" },
    h("dl", {}, facts.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])),
    a.error ? h("pre", { class: "error-text" }, a.error) : null);
}

/** Show the log of `attempt` (null: the latest with a log) in `box`, reading on while it grows. */
function tail(box, id, name, attempt, current) {
  const key = `${id}\n${name}\n${attempt ?? `latest of ${current}`}`;
  let entry = tails.get(key);
  if (!entry) {
    entry = { text: "", offset: 0, attempt, growing: true, dropped: false, decoder: new TextDecoder(), polling: false, error: null };
    tails.set(key, entry);
  }
  const note = h("p", { class: "muted small", id: "log-note" });
  const pre = h("pre", { class: "log-text", "aria-label": `log of ${name}`, "aria-live": "polite" });
  box.append(note, pre);
  entry.view = { note, pre };
  show(entry, name);
  if (!entry.polling) pull(entry, id, name);
}

async function pull(entry, id, name) {
  entry.polling = true;
  try {
    for (;;) {
      const piece = await api.logPiece(id, name, entry.attempt, entry.offset);
      entry.attempt = piece.attempt;
      entry.offset += piece.bytes.length;
      entry.text += entry.decoder.decode(piece.bytes, { stream: piece.growing });
      if (entry.text.length > KEEP_CHARS) {
        entry.text = entry.text.slice(-KEEP_CHARS);
        entry.dropped = true;
      }
      entry.growing = piece.growing;
      entry.error = null;
      // More is there already; an empty answer short of its size is no progress: pause first.
      if (entry.offset < piece.size && piece.bytes.length) continue;
      show(entry, name);
      if (!entry.growing || !entry.view.pre.isConnected) break;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      if (!entry.view.pre.isConnected) break;
    }
  } catch (err) {
    entry.error = err.message;
    entry.growing = err.status === 404 ? entry.growing : false;
    show(entry, name);
  } finally {
    entry.polling = false;
  }
}

function show(entry, name) {
  const { note, pre } = entry.view;
  if (entry.error && !entry.text) {
    note.textContent = entry.error;
    note.className = "muted small";
    pre.hidden = true;
    return;
  }
  pre.hidden = !entry.text && !entry.growing;
  pre.textContent = entry.text || (entry.growing ? "(nothing printed yet)" : "");
  const which = entry.attempt ? `attempt ${entry.attempt}` : "the latest attempt";
  note.textContent = `${entry.growing ? "Live: " : ""}stdout and stderr of ${which}` +
    (entry.dropped ? ` (its last ${Math.round(KEEP_CHARS / 1000)}k characters; the full log: see "full log")` : "") +
    (entry.growing ? ", read every few seconds while it runs." : ".");
  if (entry.growing) pre.scrollTop = pre.scrollHeight;
}
