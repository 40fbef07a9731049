// A task's whole log (the panel shows its tail).
import { api } from "./api.js";
import { h } from "./dom.js";

export function logView(root, route) {
  const pre = h("pre", { id: "full-log-text", tabindex: "0", "aria-label": `log of ${route.task}` }, "Loading…");
  const back = `#/runs/${encodeURIComponent(route.id)}?task=${encodeURIComponent(route.task)}`;
  root.append(h("p", { class: "small" }, h("a", { href: back }, `← ${route.id}`)),
    h("h1", {}, "Log of ", h("span", { class: "mono" }, route.task)),
    h("p", { class: "muted small" }, "The latest attempt's stdout and stderr, as far as it got (a running attempt's log grows: reload for more)."),
    h("div", { class: "log" }, pre));
  return {
    async refresh() {
      pre.textContent = (await api.log(route.id, route.task)) || "(empty)";
    },
  };
}
