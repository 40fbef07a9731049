// Tasks that wait on a queue no live worker polls (a queue no pool serves, a typo like "gpus"):
// they would wait forever, silently. The run page says so, once tasks have waited a short grace,
// with how to start a worker (as `dagq submit --wait` and `dagq watch` do, shared/cli/unserved.py).
import { api, serves } from "./api.js";
import { h } from "./dom.js";

export const GRACE_MS = 10_000;
/** How long this page must have seen a task queued before its queue is looked at (a worker polling
 * an idle queue backs off for up to a few seconds). */
export const EVERY_MS = 10_000;
/** The least time between two looks at the worker registry. */

export class UnservedQueues {
  constructor() {
    this.queues = new Set();
    this.seenQueued = new Map(); // task name -> when this page first saw it queued (ms)
    this.looked = -Infinity;
    this.available = null;
  }

  /** The queues that tasks of `tasks` wait on, past the grace, and that no live worker polls.
   * Advisory: a failed look keeps the last answer. */
  async check(tasks) {
    const now = Date.now();
    const waiting = new Set();
    for (const [name, t] of Object.entries(tasks)) {
      if (t.state !== "queued") { this.seenQueued.delete(name); continue; }
      if (!this.seenQueued.has(name)) this.seenQueued.set(name, now);
      if (now - this.seenQueued.get(name) >= GRACE_MS) waiting.add(t.queue);
    }
    if (waiting.size && now - this.looked >= EVERY_MS) {
      this.looked = now;
      if (this.available === null) this.available = await serves("/workers");
      if (this.available) {
        try {
          const data = await api.workers();
          const served = new Set(data.workers.filter((w) => w.status === "alive").flatMap((w) => w.queues));
          this.queues = new Set([...waiting].filter((q) => !served.has(q)));
        } catch { /* advisory: keep the last answer */ }
      }
    }
    this.queues = new Set([...this.queues].filter((q) => waiting.has(q)));
    return this.queues;
  }
}

/** What the run page says about `queues` (empty: nothing). */
export function unservedNotice(queues, tasks) {
  const lines = [...queues].sort().map((q) => {
    const n = Object.values(tasks).filter((t) => t.state === "queued" && t.queue === q).length;
    return h("li", {}, `${n} task${n === 1 ? "" : "s"} wait${n === 1 ? "s" : ""} on queue '${q}', which no live worker polls: start one with `,
      h("code", {}, `dagq-worker ${q}`), " (on Azure: a pool that serves it); ", h("code", {}, "dagq doctor"), " says more.");
  });
  return lines.length ? h("ul", {}, lines) : null;
}
