// The signed-in session of a page and its calls to the /v1 API.
// The API key lives in sessionStorage only (gone when the tab closes) and travels as
// "Authorization: Bearer"; no cookie is ever set. With MT_AUTH=off (the page's
// <meta name="mt-auth">) there is nothing to sign in with.
const STORE = "mtfleet.apiKey";
export const authOff = document.querySelector('meta[name="mt-auth"]')?.content === "off";

export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

function headers(extra) {
  const h = new Headers(extra || {});
  const key = sessionStorage.getItem(STORE);
  if (key) h.set("Authorization", `Bearer ${key}`);
  return h;
}

// The headers of an event-stream request: the key, and where to resume (Last-Event-ID).
export function streamHeaders(lastEventId) {
  const h = headers({ Accept: "text/event-stream" });
  if (lastEventId !== null && lastEventId !== undefined) h.set("Last-Event-ID", lastEventId);
  return h;
}

async function failure(resp) {
  let type = "http_error";
  let message = `${resp.status} ${resp.statusText}`;
  try {
    const body = await resp.json();
    if (body && body.error) {
      type = body.error.type || type;
      message = body.error.message || message;
    }
  } catch (_) {
    /* not JSON: keep the status line */
  }
  return new ApiError(resp.status, type, message);
}

// One call to the API: JSON in (opts.json) or a FormData (opts.form); the Response itself
// with opts.raw, else its JSON. Throws ApiError with the API's own message.
export async function api(path, opts = {}) {
  const init = { method: opts.method || "GET", headers: headers() };
  if (opts.json !== undefined) {
    init.headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(opts.json);
  } else if (opts.form) {
    init.body = opts.form;
  }
  const resp = await fetch(path, init);
  if (!resp.ok) throw await failure(resp);
  if (opts.raw) return resp;
  return { status: resp.status, body: await resp.json() };
}

// Wire the page's sign-in form. probe() is the first call the page needs (it proves the key);
// onReady(result) shows the page. A key already in this tab's session is tried at once.
export function setupSignIn({ probe, onReady, explain }) {
  const form = document.getElementById("signin");
  const field = document.getElementById("api-key");
  const status = document.getElementById("signin-status");
  const out = document.getElementById("signout");
  const app = document.getElementById("app");

  async function attempt() {
    status.textContent = "Signing in…";
    try {
      const result = await probe();
      status.textContent = "";
      form.hidden = true;
      app.hidden = false;
      out.hidden = authOff;
      onReady(result);
    } catch (err) {
      sessionStorage.removeItem(STORE);
      form.hidden = false;
      app.hidden = true;
      status.textContent = (explain && explain(err)) || `Could not sign in: ${err.message}`;
      field.focus();
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const key = field.value.trim();
    if (!key) {
      status.textContent = "Enter an API key.";
      return;
    }
    sessionStorage.setItem(STORE, key);
    field.value = "";
    attempt();
  });
  out.addEventListener("click", () => {
    sessionStorage.removeItem(STORE);
    location.reload();
  });
  if (authOff || sessionStorage.getItem(STORE)) {
    attempt();
  } else {
    form.hidden = false;
    field.focus();
  }
}

// Text for a Unix time: the local clock time today, else the date and time.
export function when(unix) {
  if (!unix) return "";
  const d = new Date(unix * 1000);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

// A table cell (or any element) with text.
export function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
