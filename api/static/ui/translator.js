// The web translator: text in one call, documents as jobs followed until done, recent jobs.
import { api, ApiError, el, setupSignIn, when } from "./session.js";
import { FINAL, watchJob } from "./progress.js";

const $ = (id) => document.getElementById(id);
let pairs = [];
let names = {};
let glossaries = [];

function option(value, text) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text;
  return o;
}

function label(code) {
  return names[code] ? `${names[code]} (${code})` : code;
}

function fill(select, values, keep) {
  const before = keep ?? select.value;
  select.replaceChildren(...values.map(([v, t]) => option(v, t)));
  if (values.some(([v]) => v === before)) select.value = before;
}

// --- the languages chosen ------------------------------------------------------------------
// The last source and target the user chose are kept in localStorage (the API key is not: it
// stays in the tab's sessionStorage) and shown again while the fleet still serves them.
const CHOSEN = { source: "mtfleet.translator.source", target: "mtfleet.translator.target" };

function chosen(which) {
  try {
    return localStorage.getItem(CHOSEN[which]);
  } catch (_) {
    return null; // storage turned off: nothing remembered
  }
}

function choose(which, value) {
  try {
    localStorage.setItem(CHOSEN[which], value);
  } catch (_) {
    /* storage turned off or full: the choice lasts this page only */
  }
}

// The served code a browser language tag stands for: the tag itself when served ("zh-Hant",
// "pt-BR"), Chinese by its script or region, else its primary subtag ("es-MX" -> "es").
function served(tag, codes) {
  const low = tag.toLowerCase();
  const exact = codes.find((c) => c.toLowerCase() === low);
  if (exact) return exact;
  const [primary, ...rest] = low.split("-");
  const code = primary !== "zh" ? primary : rest.some((p) => ["hant", "tw", "hk", "mo"].includes(p)) ? "zh-Hant" : "zh";
  return codes.includes(code) ? code : null;
}

// The target to show: of the one shown, the one last chosen, the browser's languages in order
// and then every target, the first that this source is served into and is not the source.
function sensibleTarget(source, targets, shown) {
  const browser = navigator.languages?.length ? navigator.languages : [navigator.language || ""];
  const candidates = [shown, chosen("target"), ...browser.map((t) => served(t, targets)), ...targets];
  return candidates.find((t) => t && t !== source && targets.includes(t));
}

function fillTargets() {
  const source = $("source").value;
  const targets = [...new Set(pairs.filter((p) => source === "auto" || p.source === source).map((p) => p.target))].sort();
  fill($("target"), targets.map((t) => [t, label(t)]), sensibleTarget(source, targets, $("target").value));
  fillGlossaries();
}

function fillGlossaries() {
  const source = $("source").value;
  const target = $("target").value;
  const fitting = glossaries.filter((g) => g.target_lang === target && (source === "auto" || g.source_lang === source));
  fill($("glossary"), [["", "None"], ...fitting.map((g) => [g.id, `${g.name} (${g.entry_count} terms${g.pattern_count ? `, ${g.pattern_count} protected patterns` : ""})`])]);
}

async function loadLanguages() {
  const [{ body: langs }, { body: gl }] = await Promise.all([api("/v1/languages"), api("/v1/glossaries")]);
  pairs = langs.pairs;
  names = Object.fromEntries(langs.languages.map((l) => [l.code, l.name]));
  glossaries = gl.glossaries;
  // quality estimation: only where a pool has a model for it (MT_QE_MODEL)
  const scoring = (langs.pools || []).filter((p) => p.quality_model).map((p) => p.name);
  $("qe").disabled = !scoring.length;
  $("qe-hint").textContent = scoring.length ? `(pools that score: ${scoring.join(", ")})` : "(no pool of this fleet has a quality-estimation model)";
  const sources = [...new Set(pairs.map((p) => p.source))].sort();
  fill($("source"), [["auto", "Detect automatically"], ...sources.map((s) => [s, label(s)])], chosen("source") ?? "auto");
  fillTargets();
  if (!pairs.length) $("text-status").textContent = "No language pair is served yet: start a worker.";
}

function languages() {
  const body = { source_lang: $("source").value, target_lang: $("target").value };
  if ($("glossary").value) body.glossary_id = $("glossary").value;
  if ($("qe").checked) body.quality_estimation = true;
  return body;
}

// --- the text's table: what "Download as a table" saves ---------------------------------------
let table = null; // {header, rows} of the last text translated

function cell(value) {
  return String(value ?? "").replace(/[\t\r\n]+/g, " ");
}

function saveTable() {
  if (!table) return;
  const tsv = [table.header, ...table.rows].map((r) => r.map(cell).join("\t")).join("\n") + "\n";
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([tsv], { type: "text/tab-separated-values;charset=utf-8" }));
  a.download = "translation.tsv";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 30000);
}

// --- text ----------------------------------------------------------------------------------
async function translateText(event) {
  event.preventDefault();
  const lines = $("text").value.split("\n");
  const at = [];
  lines.forEach((line, i) => line.trim() && at.push(i));
  const out = $("translation");
  const status = $("text-status");
  if (!at.length) {
    status.textContent = "Type some text first.";
    return;
  }
  $("translate").disabled = true;
  $("text-download").hidden = true;
  table = null;
  status.textContent = "Translating…";
  try {
    let { status: code, body } = await api("/v1/translate", { method: "POST", json: { texts: at.map((i) => lines[i]), ...languages() } });
    if (code === 202) {
      status.textContent = "Queued; waiting for a worker…";
      await new Promise((resolve, reject) => {
        const stop = watchJob(body.id, (job, err) => {
          if (!err) {
            if (FINAL.includes(job.status)) { stop(); resolve(); }
          } else if ([401, 403, 404].includes(err.status)) {
            stop(); reject(err); // the job cannot be read: no result will come
          } else {
            status.textContent = `Queued; still waiting (${err.message})…`; // watchJob retries
          }
        });
      });
      body = (await api(`/v1/jobs/${body.id}/result`)).body;
    }
    const result = [...lines];
    at.forEach((i, k) => { result[i] = body.translations[k] ?? `[not translated] ${lines[i]}`; });
    out.replaceChildren(el("p", result.join("\n"), "translated"));
    // the table: one row per line translated; with quality estimation, its score and mark
    const scores = Object.fromEntries((body.quality || []).map((q) => [q.index, q]));
    const scored = Object.keys(scores).length > 0;
    table = {
      header: ["line", "source", "translation", ...(scored ? ["quality", "needs review"] : [])],
      rows: at.map((i, k) => [
        i + 1, lines[i], body.translations[k] ?? "",
        ...(scored ? [scores[k] ? scores[k].score.toFixed(2) : "", scores[k]?.low_quality ? "yes" : "no"] : []),
      ]),
    };
    $("text-download").hidden = false;
    const problems = [...(body.errors || []), ...(body.warnings || [])];
    for (const p of problems) out.append(el("p", `Line ${at[p.index] + 1}: ${p.message}`, "note"));
    status.textContent = body.cached ? `Done (${body.cached} from the phrase cache).` : "Done.";
    if (body.id) loadRecent();
  } catch (err) {
    status.textContent = "";
    out.replaceChildren(el("p", `Not translated: ${err.message}`, "error"));
  } finally {
    $("translate").disabled = false;
  }
}

// --- documents -----------------------------------------------------------------------------
function filename(resp, fallback) {
  const cd = resp.headers.get("Content-Disposition") || "";
  const star = cd.match(/filename\*=UTF-8''([^;]+)/i);
  if (star) {
    try {
      return decodeURIComponent(star[1]);
    } catch (_) {
      /* not valid percent-encoding: the plain filename, or the fallback */
    }
  }
  const plain = cd.match(/filename="([^"]+)"/i);
  return plain ? plain[1] : fallback;
}

export async function download(job) {
  const resp = await api(`/v1/jobs/${job.id}/document`, { raw: true });
  const blob = await resp.blob();
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = filename(resp, job.document_name || `${job.id}.out`);
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 30000);
}

function button(text, name, onClick) {
  const b = el("button", text);
  b.type = "button";
  b.setAttribute("aria-label", name);
  b.addEventListener("click", onClick);
  return b;
}

function upload(file) {
  const item = el("li");
  const title = el("span", file.name, "name");
  const bar = el("progress");
  bar.max = 1;
  bar.value = 0;
  bar.setAttribute("aria-label", `Progress of ${file.name}`);
  const state = el("span", "waiting…", "state");
  state.setAttribute("role", "status");
  const actions = el("span", null, "actions");
  item.append(title, bar, state, actions);
  $("uploads").prepend(item);

  const form = new FormData();
  form.append("file", file, file.name);
  for (const [k, v] of Object.entries(languages())) form.append(k, v);
  // sent when its turn comes (sendNext); settles once the fleet has accepted or refused it
  return () => {
    state.textContent = "uploading…";
    return send(form, file, bar, state, actions);
  };
}

function send(form, file, bar, state, actions) {
  return api("/v1/documents", { method: "POST", form })
    .then(({ body: job }) => {
      job.document_name = file.name;
      let stop = null;
      const cancel = button("Cancel", `Cancel ${file.name}`, async () => {
        cancel.disabled = true;
        try { await api(`/v1/jobs/${job.id}`, { method: "DELETE" }); } catch (err) { state.textContent = err.message; }
      });
      actions.append(cancel);
      stop = watchJob(job.id, (now, err) => {
        if (err) { state.textContent = err.message; return; }
        const p = now.progress;
        bar.max = Math.max(1, p.total);
        bar.value = p.done + p.failed;
        state.textContent = `${now.status}: ${p.done + p.failed} of ${p.total} sentences`;
        if (FINAL.includes(now.status)) {
          stop && stop();
          cancel.remove();
          if (now.status === "succeeded" || now.status === "partial") {
            actions.append(button("Download", `Download ${file.name}`, () => download(job).catch((e) => { state.textContent = e.message; })));
          }
          loadRecent();
        }
      });
    })
    .catch((err) => {
      state.textContent = `not accepted: ${err.message}`;
      bar.remove();
    });
}

// Files are sent two at a time (each waits for the fleet to read it; one API key has a share
// of the document processes): the rest show "waiting…" until their turn.
const UPLOADS_AT_ONCE = 2;
let sending = 0;
const toSend = [];

function uploadAll(files) {
  for (const f of files) toSend.push(upload(f));
  sendNext();
}

function sendNext() {
  while (sending < UPLOADS_AT_ONCE && toSend.length) {
    const next = toSend.shift();
    sending += 1;
    next().finally(() => { sending -= 1; sendNext(); });
  }
}

// --- recent jobs ---------------------------------------------------------------------------
async function loadRecent() {
  try {
    const { body } = await api("/v1/jobs?limit=20");
    const rows = body.jobs.map((job) => {
      const tr = el("tr");
      const what = job.document_name || (job.document_format ? `${job.document_format} document` : `${job.progress.total} ${job.progress.total === 1 ? "text" : "texts"}`);
      const cells = [when(job.created_at), what, `${job.detected_source_lang || job.source_lang} → ${job.target_lang}`, job.status, `${job.progress.done + job.progress.failed}/${job.progress.total}`];
      for (const c of cells) tr.append(el("td", c));
      const act = el("td");
      if (job.document_format && (job.status === "succeeded" || job.status === "partial")) {
        act.append(button("Download", `Download ${what}`, () => download(job).catch((e) => { $("recent-status").textContent = e.message; })));
      }
      tr.append(act);
      return tr;
    });
    $("recent").tBodies[0].replaceChildren(...rows);
    $("recent-status").textContent = rows.length ? "" : "No jobs yet.";
  } catch (err) {
    $("recent-status").textContent = err.message;
  }
}

function start() {
  $("source").addEventListener("change", () => { choose("source", $("source").value); fillTargets(); });
  $("target").addEventListener("change", () => { choose("target", $("target").value); fillGlossaries(); });
  $("text-form").addEventListener("submit", translateText);
  $("text-download").addEventListener("click", saveTable);
  $("files").addEventListener("change", (e) => { uploadAll(e.target.files); e.target.value = ""; });
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); uploadAll(e.dataTransfer.files); });
  $("refresh").addEventListener("click", loadRecent);
  loadRecent();
}

setupSignIn({
  probe: loadLanguages,
  onReady: start,
  explain: (err) => (err instanceof ApiError && err.status === 401 ? `That API key was not accepted: ${err.message}` : null),
});
