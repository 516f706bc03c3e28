// Following a job until it is final: the ONE place the pages do it.
// It reads the job's Server-Sent Events (GET /v1/jobs/{id}/events: progress a few times a
// second, then the final event). EventSource cannot send an Authorization header, so the
// stream is read with fetch; a broken stream is resumed with Last-Event-ID, and a page falls
// back to polling GET /v1/jobs/{id} once a second when the stream cannot be had at all.
// Callers only see onUpdate(job, err) for every change and the returned stop().
import { api, streamHeaders } from "./session.js";

export const FINAL = ["succeeded", "partial", "failed", "cancelled"];
const POLL_MS = 1000;
const RETRY_MS = 1000;
const MAX_BROKEN = 3; // streams in a row that broke before an event: poll instead

// The blocks of an event stream, as {event, id, data} (comments and retry: skipped).
async function* sseBlocks(body, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  try {
    while (!signal.aborted) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buf.indexOf("\n\n")) >= 0) {
        const block = { event: "message", id: null, data: [] };
        for (const line of buf.slice(0, end).split("\n")) {
          if (!line || line.startsWith(":")) continue;
          const at = line.indexOf(":");
          const name = at < 0 ? line : line.slice(0, at);
          const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
          if (name === "data") block.data.push(value);
          else if (name === "event") block.event = value;
          else if (name === "id") block.id = value;
        }
        buf = buf.slice(end + 2);
        if (block.data.length) yield block;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

export function watchJob(jobId, onUpdate) {
  const path = `/v1/jobs/${encodeURIComponent(jobId)}`;
  const abort = new AbortController();
  let timer = null;
  let lastId = null;
  let broken = 0;

  const done = (job) => FINAL.includes(job.status);
  const later = (fn, ms) => { if (!abort.signal.aborted) timer = setTimeout(fn, ms); };

  async function poll() {
    if (abort.signal.aborted) return;
    try {
      const { body: job } = await api(path);
      onUpdate(job, null);
      if (done(job)) return;
    } catch (err) {
      onUpdate(null, err);
      if ([401, 403, 404].includes(err.status)) return;
    }
    later(poll, POLL_MS);
  }

  async function stream() {
    if (abort.signal.aborted) return;
    let events = 0;
    try {
      const headers = streamHeaders(lastId);
      const resp = await fetch(`${path}/events`, { headers, signal: abort.signal });
      if (resp.status === 204) return poll(); // final already: one read says how it ended
      if (!resp.ok) {
        if ([401, 403, 404].includes(resp.status)) return poll(); // poll reports the error
        throw new Error(`event stream: ${resp.status}`);
      }
      for await (const block of sseBlocks(resp.body, abort.signal)) {
        events += 1;
        broken = 0;
        if (block.id !== null) lastId = block.id;
        const job = JSON.parse(block.data.join("\n"));
        onUpdate(job, null);
        if (done(job)) return;
      }
    } catch (err) {
      if (abort.signal.aborted) return;
    }
    // the stream ended or broke before the final event: resume, or poll when it keeps failing
    broken = events ? 0 : broken + 1;
    if (broken >= MAX_BROKEN) later(poll, 0);
    else later(stream, RETRY_MS);
  }

  stream();
  return () => {
    abort.abort();
    clearTimeout(timer);
  };
}
