// The operations panel: GET /v1/ops every two seconds; the trend charts are the points this
// page has seen (nothing is stored anywhere else for them).
import { api, ApiError, el, setupSignIn, when } from "./session.js";
import { drawChart } from "./chart.js";

const $ = (id) => document.getElementById(id);
const POLL_MS = 2000;
const SPAN_S = 300; // what the charts show
const history = []; // {at, total, interactive, bulk, p50, p95}

function secs(v) {
  if (v === null || v === undefined) return "–";
  return v < 1 ? `${Math.round(v * 1000)} ms` : v < 120 ? `${v.toFixed(1)} s` : `${Math.round(v / 60)} min`;
}

function num(v, digits = 1) {
  return v === null || v === undefined ? "–" : Number(v).toFixed(digits);
}

function rows(table, items, cells) {
  $(table).tBodies[0].replaceChildren(...items.map((item) => {
    const tr = el("tr");
    for (const c of cells(item)) tr.append(c instanceof Node ? c : el("td", c));
    return tr;
  }));
}

function gpuText(w) {
  if (!w.gpus.length) return "no GPU";
  if (!w.gpu_readings?.length) return "no reading (NVML not available)";
  return w.gpu_readings.map((g) => `GPU ${g.index}: ${Math.round(g.memory_used_mib)} / ${Math.round(g.memory_total_mib)} MiB, ${g.utilization_pct === null ? "–" : `${g.utilization_pct}%`}`).join("; ");
}

// what each API key has waiting in a lane's backlog (its id: chunks), the most first
function perKey(waiting) {
  const entries = Object.entries(waiting || {});
  return entries.length ? entries.map(([key, n]) => `${key}: ${n}`).join(", ") : "–";
}

function show(ops) {
  const byLane = (lane) => ops.lanes.filter((r) => r.lane === lane).reduce((s, r) => s + r.segments_per_s, 0);
  const inter = ops.latency.find((l) => l.lane === "interactive");
  history.push({ at: ops.at, total: ops.segments_per_s, interactive: byLane("interactive"), bulk: byLane("bulk"), p50: inter?.p50_s ?? null, p95: inter?.p95_s ?? null });
  while (history.length && history[0].at < ops.at - SPAN_S) history.shift();

  $("tile-throughput").textContent = num(ops.segments_per_s);
  $("tile-p95").textContent = secs(inter?.p95_s);
  $("tile-cache").textContent = ops.cache.ratio === null ? "–" : `${Math.round(ops.cache.ratio * 100)}%`;
  $("tile-workers").textContent = String(ops.workers.length);
  $("tile-dead").textContent = String(ops.dead_letters);
  $("tile-dead").classList.toggle("alarm", ops.dead_letters > 0);

  const series = (key, cls) => ({ name: key, cls, points: history.map((h) => [h.at, h[key]]) });
  drawChart($("chart-throughput"), [series("total", "total"), series("interactive", "interactive"), series("bulk", "bulk")], { spanS: SPAN_S });
  drawChart($("chart-latency"), [series("p50", "p50"), series("p95", "p95")], { spanS: SPAN_S, digits: 2, empty: "no interactive job finished in the last minute" });

  rows("lanes", ops.lanes, (r) => [r.pool, r.lane, r.queued, secs(r.oldest_queued_s), r.in_flight, secs(r.oldest_in_flight_s), r.workers ? String(r.workers) : el("td", "no live worker", "alarm"), num(r.segments_per_s), perKey(r.waiting_by_key)]);
  rows("workers", ops.workers, (w) => [
    w.name, w.engine, w.model, w.gpus.length ? w.gpus.join(",") : "none", w.tensor_parallel_size,
    w.pull_window ?? "–", w.busy_share === null ? "–" : `${Math.round(w.busy_share * 100)}%`, num(w.segments_per_s),
    `${secs(Math.max(0, ops.at - w.beat_at))} ago`, w.healthy ? "serving" : `down: ${w.unhealthy_reason || "?"}`, gpuText(w),
  ]);
  rows("dead", ops.latest_dead_letters, (d) => [when(d.at), d.job_id ?? "–", d.chunk ?? "–", d.lane ?? "–", d.reason]);
  $("updated").textContent = `Updated ${new Date(ops.at * 1000).toLocaleTimeString()}; refreshes every ${POLL_MS / 1000} s.`;
}

async function poll() {
  try {
    show((await api("/v1/ops")).body);
  } catch (err) {
    if (err instanceof ApiError && [401, 403].includes(err.status)) {
      // a revoked key stays revoked: stop asking, say what to do
      $("updated").textContent = `Stopped: ${err.message}. Sign out and sign in with an operator's key.`;
      return;
    }
    $("updated").textContent = `Not updated: ${err.message}`;
  }
  setTimeout(poll, POLL_MS);
}

setupSignIn({
  probe: () => api("/v1/ops"),
  onReady: ({ body }) => {
    show(body);
    setTimeout(poll, POLL_MS);
  },
  explain: (err) => {
    if (err instanceof ApiError && err.status === 403) return "This key is not an operator's: make one with mtfleet keys create --role operator.";
    if (err instanceof ApiError && err.status === 401) return `That API key was not accepted: ${err.message}`;
    return null;
  },
});
