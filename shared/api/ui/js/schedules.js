// Schedules: each with its cron expression, next run and latest runs with their status (issue 29).
import { api, serves } from "./api.js";
import { badge, clear, clock, h } from "./dom.js";

const SHOWN = 50; // schedules whose latest runs are read (one request each)

export function schedulesView(root) {
  const body = h("div", { id: "schedules" }, h("p", { class: "muted" }, "Loading…"));
  root.append(h("div", { class: "toolbar" }, h("h1", {}, "Schedules")), body);
  let available = null;
  return {
    interval: () => (available ? 10000 : 0),
    async refresh() {
      if (available === null) available = await serves("/schedules");
      if (!available) {
        clear(body).append(h("p", { class: "note", id: "no-schedules-api" },
          "This deployment serves no schedules (GET /api/schedules): update the Functions app."));
        return;
      }
      const { schedules } = await api.schedules();
      const details = await Promise.all(schedules.slice(0, SHOWN).map((s) => api.schedule(s.name).catch(() => s)));
      render(body, details.concat(schedules.slice(SHOWN)));
    },
  };
}

function render(body, schedules) {
  clear(body);
  if (!schedules.length) {
    body.append(h("p", { class: "note", id: "no-schedules" }, "No schedules. Create one with ",
      h("code", {}, 'dagq schedule create NAME FILE --cron "0 2 * * *"'), "."));
    return;
  }
  const rows = schedules.map((s) => h("tr", { "data-schedule": s.name },
    h("td", { class: "name" }, h("span", { class: "mono" }, s.name),
      h("span", { class: "id" }, Object.entries(s.params).map(([k, v]) => `${k}=${v}`).join(" "))),
    h("td", {}, h("code", {}, s.cron), h("span", { class: "id" }, s.timezone)),
    h("td", { class: "num next-run" }, s.paused ? badge("paused") : clock(s.next_runs[0])),
    h("td", {}, s.concurrency, h("span", { class: "id" }, `catch-up ${s.catch_up}`)),
    h("td", { class: "runs" }, s.runs.length
      ? h("ul", { class: "members" }, s.runs.map((r) => h("li", { "data-run": r.id },
        h("a", { href: `#/runs/${encodeURIComponent(r.id)}` }, clock(r.slot)), " ",
        badge(r.status || "purged"))))
      : h("span", { class: "muted" }, "none yet"),
    s.note ? h("p", { class: "muted small schedule-note" }, s.note) : null)));
  body.append(h("table", { class: "list" },
    h("thead", {}, h("tr", {}, ["Schedule", "Cron", "Next run", "Concurrency", "Latest runs"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows)));
}
