// Workflows: newest first, with status, progress, counts and duration; filters; auto-refresh.
import { api } from "./api.js";
import { ago, badge, clear, countsText, duration, elapsed, h, keepFocus, progressBar } from "./dom.js";

const STATUSES = ["pending", "running", "cancelling", "completed", "failed", "cancelled"];
const PAGE = 50;

export function listView(root, route, ctx) {
  const params = route.params;
  const status = h("select", { id: "filter-status", "aria-label": "Filter by status" },
    h("option", { value: "" }, "any status"),
    STATUSES.map((st) => h("option", { value: st, selected: params.get("status") === st }, st)));
  const name = h("input", {
    id: "filter-name", type: "search", placeholder: "name starts with…", "aria-label": "Filter by name prefix",
    value: params.get("name") || "",
  });
  const auto = h("input", { type: "checkbox", id: "auto-refresh", checked: true });
  const tbody = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const summary = h("p", { class: "muted small", "aria-live": "polite" });
  let limit = PAGE;
  let debounce = null;

  const applyFilters = () => {
    const q = new URLSearchParams();
    if (status.value) q.set("status", status.value);
    if (name.value.trim()) q.set("name", name.value.trim());
    history.replaceState(null, "", `#/${q.toString() ? `?${q}` : ""}`);
    limit = PAGE;
    view.refresh();
  };
  status.addEventListener("change", applyFilters);
  name.addEventListener("input", () => { clearTimeout(debounce); debounce = setTimeout(applyFilters, 250); });
  more.addEventListener("click", () => { limit += PAGE; view.refresh(); });

  root.append(
    h("div", { class: "toolbar" },
      h("h1", {}, "Workflows"), h("span", { class: "spacer" }),
      h("label", {}, "Status", status), name,
      h("label", {}, auto, "Auto-refresh")),
    h("table", { class: "list", "aria-describedby": "list-summary" },
      h("thead", {}, h("tr", {},
        ["Workflow", "Status", "Progress", "Tasks", "Created", "Duration"].map((c) => h("th", { scope: "col" }, c)))),
      tbody),
    h("div", { class: "toolbar" }, more, summary));
  summary.id = "list-summary";

  const view = {
    interval: () => (auto.checked ? 3000 : 0),
    async refresh() {
      const query = { limit: String(limit) };
      if (status.value) query.status = status.value;
      if (name.value.trim()) query.name = name.value.trim();
      const page = await api.list(query);
      keepFocus(tbody, () => renderRows(tbody, page.items));
      more.hidden = !page.next;
      summary.textContent = page.items.length
        ? `${page.items.length} workflow${page.items.length === 1 ? "" : "s"}${page.next ? " (more below)" : ""}`
        : "";
    },
  };
  auto.addEventListener("change", () => { if (auto.checked) ctx.poke(); }); // the loop stopped: restart it
  return view;
}

function renderRows(tbody, items) {
  clear(tbody);
  if (!items.length) {
    tbody.append(h("tr", {}, h("td", { colspan: 6, class: "muted" },
      "No workflows match. Submit one with ", h("code", {}, "dagq submit pipeline.yaml"), ".")));
    return;
  }
  const now = Date.now() / 1000;
  for (const wf of items) {
    const href = `#/runs/${encodeURIComponent(wf.id)}`;
    tbody.append(h("tr", { "data-id": wf.id },
      h("td", { class: "name" }, h("a", { href, "data-focus-key": `row:${wf.id}` }, wf.name), h("span", { class: "id mono" }, wf.id)),
      h("td", {}, badge(wf.status), wf.run > 1 ? h("span", { class: "muted small" }, ` run ${wf.run}`) : null),
      h("td", {}, progressBar(wf.counts, wf.total)),
      h("td", { class: "num" }, countsText(wf.counts, wf.total)),
      h("td", { class: "num", title: new Date(wf.created_at * 1000).toISOString() }, ago(wf.created_at, now)),
      h("td", { class: "num" }, duration(elapsed(wf, now)))));
  }
}
