// The API client of the dashboard: every data call goes through here. With function keys the key the
// user pasted (localStorage) is sent as x-functions-key; with Entra auth the session cookie rides along.

const KEY_STORAGE = "dagq.functionKey";
const API_BASE = new URL("../../", import.meta.url); // this file is {routePrefix}/ui/js/api.js

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

export function getKey() {
  return localStorage.getItem(KEY_STORAGE) || "";
}

export function setKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

export function apiUrl(path) {
  return new URL(path.replace(/^\//, ""), API_BASE).toString();
}

const seg = encodeURIComponent;

async function call(path, { method = "GET", as = "json" } = {}) {
  const headers = { Accept: as === "json" ? "application/json" : "text/plain" };
  const key = getKey();
  if (key) headers["x-functions-key"] = key;
  let response;
  try {
    response = await fetch(apiUrl(path), { method, headers, credentials: "same-origin" });
  } catch (err) {
    throw new ApiError(0, `the API is unreachable (${err.message})`);
  }
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    try {
      const body = await response.json();
      if (body && body.detail) detail = body.detail;
    } catch { /* not a problem document */ }
    if (response.status === 401 || response.status === 403) {
      detail = "the API refused the request: set a function key (API key, top right) or sign in";
    }
    throw new ApiError(response.status, detail);
  }
  if (as === "response") return response;
  return as === "json" ? response.json() : response.text();
}

/** Part of a task attempt's log (null: the latest with a log) from byte `offset`, as bytes. */
async function logPiece(id, task, attempt, offset) {
  const query = new URLSearchParams({ offset: String(offset) });
  if (attempt) query.set("attempt", String(attempt));
  const response = await call(`workflows/${seg(id)}/tasks/${seg(task)}/log?${query}`, { as: "response" });
  const bytes = new Uint8Array(await response.arrayBuffer());
  return {
    bytes,
    attempt: Number(response.headers.get("x-dagq-attempt")) || attempt,
    size: Number(response.headers.get("x-dagq-log-size") ?? offset + bytes.length),
    growing: response.headers.get("x-dagq-log-growing") === "true",
  };
}

export const api = {
  list: (params) => call(`workflows?${new URLSearchParams(params)}`),
  workflow: (id) => call(`workflows/${seg(id)}`),
  graph: (id) => call(`workflows/${seg(id)}/graph`),
  cost: (id) => call(`workflows/${seg(id)}/cost`),
  task: (id, task) => call(`workflows/${seg(id)}/tasks/${seg(task)}`),
  log: (id, task) => call(`workflows/${seg(id)}/tasks/${seg(task)}/log`, { as: "text" }),
  logPiece,
  attempts: (id, task) => call(`workflows/${seg(id)}/tasks/${seg(task)}/attempts`),
  output: (id, task) => call(`workflows/${seg(id)}/tasks/${seg(task)}/output`, { as: "text" }),
  cancel: (id) => call(`workflows/${seg(id)}/cancel?reason=${seg("cancelled from the dashboard")}`, { method: "POST" }),
  retry: (id) => call(`workflows/${seg(id)}/retry`, { method: "POST" }),
  workers: () => call("workers"),
  schedules: () => call("schedules"),
  schedule: (name) => call(`schedules/${seg(name)}`),
  openapi: () => call("openapi.json"),
};

let routes = null;

/** Whether this deployment serves an API path (from its OpenAPI document, which a test keeps equal
 * to the app's routes): lets a view say "not available" without provoking a 404. */
export async function serves(path) {
  if (routes === null) {
    try {
      routes = new Set(Object.keys((await api.openapi()).paths || {}));
    } catch {
      routes = new Set();
    }
  }
  return routes.has(path);
}
