// The dashboard's shell: hash routes, the auto-refresh loop, the key and confirmation dialogs.
//   #/                    workflows (?status=&name=)
//   #/runs/ID             a run's DAG          #/runs/ID/gantt   its Gantt chart   (?task=NAME)
//   #/runs/ID/log/TASK    a task's full log
//   #/workers             the worker registry
//   #/schedules           the schedules: next run, latest runs with their status
import { ApiError, getKey, setKey } from "./api.js";
import { clear } from "./dom.js";
import { listView } from "./list.js";
import { logView } from "./log.js";
import { runView } from "./run.js";
import { schedulesView } from "./schedules.js";
import { workersView } from "./workers.js";

const main = document.getElementById("main");
const bannerEl = document.getElementById("banner");
const refreshEl = document.getElementById("refresh-state");
let current = null; // { key, view }
let timer = null;

export function parseRoute(hash) {
  const [path, query = ""] = hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query);
  if (parts[0] === "runs" && parts[1]) {
    if (parts[2] === "log" && parts[3]) return { view: "log", id: parts[1], task: parts[3], params };
    return { view: "run", id: parts[1], tab: parts[2] === "gantt" ? "gantt" : "graph", params };
  }
  if (parts[0] === "workers") return { view: "workers", params };
  if (parts[0] === "schedules") return { view: "schedules", params };
  return { view: "workflows", params };
}

const ctx = {
  banner(message) {
    bannerEl.textContent = message || "";
    bannerEl.hidden = !message;
  },
  failed(err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) askKey();
    ctx.banner(err instanceof Error ? err.message : String(err));
  },
  confirm(text, action, { destructive = true } = {}) {
    const dialog = document.getElementById("confirm-dialog");
    document.getElementById("confirm-text").textContent = text;
    const yes = document.getElementById("confirm-yes");
    yes.textContent = action;
    yes.className = destructive ? "danger" : "primary"; // a retry loses nothing: not red
    dialog.returnValue = "";
    dialog.showModal();
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
    });
  },
  /** Refresh now and keep refreshing (after an action: a finished run may start again). */
  poke() {
    schedule(0);
  },
  refreshed() {
    refreshEl.textContent = `updated ${new Date().toLocaleTimeString()}`;
  },
};

function start() {
  const route = parseRoute(location.hash);
  for (const link of document.querySelectorAll("[data-nav]")) {
    const nav = route.view === "workers" || route.view === "schedules" ? route.view : "workflows";
    const active = link.dataset.nav === nav;
    if (active) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const key = route.view === "run" ? `run:${route.id}` : route.view;
  if (current && current.key === key && current.view.update) {
    current.view.update(route);
    return;
  }
  if (current) current.view.stop?.();
  ctx.banner("");
  clear(main);
  const make = {
    workflows: listView, run: runView, log: logView, workers: workersView, schedules: schedulesView,
  }[route.view];
  current = { key, view: make(main, route, ctx) };
  main.focus({ preventScroll: true });
  schedule(0);
}

/** Refresh the current view now, then every view.interval() ms while the page is visible. */
function schedule(delay) {
  clearTimeout(timer);
  timer = setTimeout(async () => {
    const view = current && current.view;
    if (!view || !view.refresh) return;
    if (!document.hidden) {
      try {
        await view.refresh();
        ctx.refreshed();
      } catch (err) {
        ctx.failed(err);
      }
    }
    // interval() 0 means "no more refreshes" (a finished run, auto-refresh off), not "at once".
    const next = view.interval ? view.interval() : 0;
    if (current && current.view === view && next > 0) schedule(next);
  }, delay);
}

function askKey() {
  const dialog = document.getElementById("key-dialog");
  if (dialog.open) return;
  document.getElementById("key-input").value = getKey();
  dialog.showModal();
}

function setupKeyDialog() {
  const dialog = document.getElementById("key-dialog");
  const input = document.getElementById("key-input");
  const button = document.getElementById("key-button");
  const show = () => {
    button.textContent = getKey() ? "API key ✓" : "API key";
    button.setAttribute("aria-label", getKey() ? "API key (set): change it" : "API key (none): set one");
  };
  button.addEventListener("click", askKey);
  document.getElementById("key-form").addEventListener("submit", () => {
    setKey(input.value.trim());
    show();
    ctx.banner("");
    schedule(0);
  });
  document.getElementById("key-cancel").addEventListener("click", () => dialog.close());
  document.getElementById("key-clear").addEventListener("click", () => {
    setKey("");
    input.value = "";
    show();
    dialog.close();
  });
  show();
}

setupKeyDialog();
window.addEventListener("hashchange", start);
document.addEventListener("visibilitychange", () => { if (!document.hidden) schedule(0); });
start();
