// The worker registry: who is alive, on which queues, busy slots, the task each runs.
import { api, serves } from "./api.js";
import { ago, badge, clear, h } from "./dom.js";
import { money } from "./cost.js";
import { progressView } from "./live.js";

export function workersView(root) {
  const body = h("div", { id: "workers" }, h("p", { class: "muted" }, "Loading…"));
  root.append(h("div", { class: "toolbar" }, h("h1", {}, "Workers")), body);
  let available = null;
  return {
    interval: () => (available ? 5000 : 0),
    async refresh() {
      if (available === null) available = await serves("/workers");
      if (!available) {
        clear(body).append(h("p", { class: "note", id: "no-registry" },
          "The worker registry is not available on this deployment (it serves no GET /api/workers). ",
          "Workers still run tasks; update the Functions app to see them here."));
        return;
      }
      render(body, await api.workers());
    },
  };
}

function render(body, data) {
  const now = Date.now() / 1000;
  const workers = [...data.workers].sort((a, b) => (a.status === b.status ? a.worker_id.localeCompare(b.worker_id) : a.status === "alive" ? -1 : 1));
  const alive = workers.filter((w) => w.status === "alive").length;
  clear(body).append(h("p", { class: "muted small" },
    `${alive} alive, ${workers.length - alive} lost (lost = not seen for ${Math.round(data.lost_after_s)} s)`));
  if (data.pool_window_s) body.append(poolLine(data));
  if (!workers.length) {
    body.append(h("p", { class: "note" }, "No worker has registered. Start one with ", h("code", {}, "dagq-worker QUEUE"), "."));
    return;
  }
  const rows = workers.map((w) => h("tr", { "data-worker": w.worker_id },
    h("td", { class: "name" }, h("span", { class: "mono" }, w.worker_id), h("span", { class: "id" }, w.host)),
    h("td", {}, badge(w.status)),
    h("td", {}, w.queues.join(", ")),
    h("td", { class: "num" }, h("span", { class: "meter", role: "img", "aria-label": `${w.busy_slots} of ${w.slots} slots busy` },
      h("span", { class: "bar" }, h("span", { style: `width:${w.slots ? (100 * w.busy_slots) / w.slots : 0}%` })), `${w.busy_slots}/${w.slots}`)),
    h("td", {}, w.tasks.length ? h("ul", { class: "members" }, w.tasks.map((t) => h("li", {},
      h("a", { href: `#/runs/${encodeURIComponent(t.workflow_id)}?task=${encodeURIComponent(t.task)}` }, `${t.task}`),
      h("span", { class: "muted small" }, `attempt ${t.attempt} · ${t.workflow_id}`),
      progressView(t, { id: null })))) : h("span", { class: "muted" }, "idle")),
    h("td", {}, gpus(w.gpus || [])),
    h("td", { class: "num" }, w.version),
    h("td", { class: "num" }, ago(w.started_at, now)),
    h("td", { class: "num" }, ago(w.last_seen, now))));
  body.append(h("table", { class: "list" },
    h("thead", {}, h("tr", {}, ["Worker", "Status", "Queues", "Busy", "Running", "GPUs", "Version", "Started", "Last seen"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows)));
}

/** The machines up in the last day, by VM size: what the pool paid for, boot and idle included. */
function poolLine(data) {
  const parts = data.pool.map((p) => `${p.vm_size || "(size not told)"} ×${p.machines}: ${p.vm_hours.toFixed(2)} VM-hours` +
    (p.estimated_cost === null ? "" : `, ${money(p.estimated_cost, data.currency)}`));
  const hours = Math.round(data.pool_window_s / 3600);
  return h("p", { class: "muted small", id: "pool" },
    `Machines up in the last ${hours} h: ${parts.join("; ") || "none"} (boot and idle included; see docs/cost.md).`);
}

/** Each GPU's utilisation and memory at the worker's latest heartbeat (from nvidia-smi). */
function gpus(list) {
  if (!list.length) return h("span", { class: "muted" }, "–");
  return h("ul", { class: "gpu-list" }, list.map((g) => h("li", { "data-gpu": g.index },
    h("span", { class: "meter", role: "img", "aria-label": `GPU ${g.index}: ${Math.round(g.utilization)}% busy` },
      h("span", { class: "bar" }, h("span", { style: `width:${Math.max(0, Math.min(100, g.utilization))}%` })),
      `GPU ${g.index} ${Math.round(g.utilization)}%`),
    h("span", { class: "muted small" }, ` ${(g.memory_used_mib / 1024).toFixed(1)}/${(g.memory_total_mib / 1024).toFixed(1)} GiB`))));
}
