// The cost panel of a run: GPU-hours, CPU-hours, an estimate from the deployment's price table,
// the storage requests it caused and what the result cache saved (GET /api/workflows/{id}/cost).
import { api } from "./api.js";
import { clear, h } from "./dom.js";

const TOP = 5;

/** One precision for every amount (as the CLI's `dagq cost`): 0.0012 USD beside 3.8500 USD. */
export function money(amount, currency) {
  return `${amount.toFixed(4)} ${currency}`;
}

function fact(term, value, id) {
  return h("div", {}, h("dt", {}, term), h("dd", id ? { id } : {}, value));
}

/** Fill `panel` with the cost of workflow `id`; a failure is shown in the panel, never thrown. */
export async function costPanel(panel, id) {
  let cost;
  try {
    cost = await api.cost(id);
  } catch (err) {
    clear(panel).append(h("h2", {}, "Cost"), h("p", { class: "muted small" }, `cost unavailable: ${err.message}`));
    return;
  }
  const c = cost.currency;
  const cached = cost.tasks.filter((t) => t.cached_from);
  const priced = cost.tasks.filter((t) => t.estimated_cost > 0);
  const top = [...priced].sort((a, b) => b.estimated_cost - a.estimated_cost).slice(0, TOP);
  clear(panel).append(
    h("h2", {}, "Cost"),
    h("dl", {},
      fact("estimated", money(cost.estimated_cost, c), "cost-estimate"),
      fact("GPU-hours", cost.gpu_hours.toFixed(4), "cost-gpu-hours"),
      fact("CPU-hours", cost.cpu_hours.toFixed(4), "cost-cpu-hours"),
      fact("queue wait", `${cost.queue_wait_hours.toFixed(3)} h`),
      fact("storage", `~${Math.round(cost.storage_requests).toLocaleString()} requests, ${money(cost.storage_cost, c)}`),
      fact("cache saved", `${cost.cached_saved_hours.toFixed(3)} h, ${money(cost.cached_saved_cost, c)} (${cached.length} task${cached.length === 1 ? "" : "s"} reused)`, "cost-saved")),
    top.length ? h("table", { class: "small", id: "cost-tasks" },
      h("caption", {}, priced.length > top.length ? `top ${top.length} of ${priced.length} tasks by cost` : "tasks by cost"),
      h("thead", {}, h("tr", {}, ["task", "queue", "GPUs", "GPU-h", "CPU-h", "cost"].map((x) => h("th", {}, x)))),
      h("tbody", {}, top.map((t) => h("tr", {},
        h("td", { class: "mono" }, t.name), h("td", {}, t.queue), h("td", {}, String(t.gpus)),
        h("td", {}, t.gpu_hours.toFixed(3)), h("td", {}, t.cpu_hours.toFixed(3)), h("td", {}, money(t.estimated_cost, c)))))) : null,
    h("p", { class: "muted small" }, "Estimated from the price table (DAGQ_PRICES); see docs/cost.md."));
}
