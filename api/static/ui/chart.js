// A small trend chart: lines over time in an <svg>, drawn from the points the page kept.
// series: [{ name, cls, points: [[unixSeconds, value or null], ...] }]; a null is a gap.
const NS = "http://www.w3.org/2000/svg";
const W = 600;
const H = 160;
const PAD = { left: 48, right: 8, top: 8, bottom: 20 };

function node(tag, attrs, text) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}

export function drawChart(svg, series, { unit = "", digits = 1, spanS = 300, empty = "no data yet" } = {}) {
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.replaceChildren();
  const all = series.flatMap((s) => s.points).filter((p) => p[1] !== null);
  if (!all.length) {
    svg.append(node("text", { x: W / 2, y: H / 2, class: "empty", "text-anchor": "middle" }, empty));
    return;
  }
  const now = Math.max(...all.map((p) => p[0]));
  const t0 = now - spanS;
  const top = Math.max(1e-9, ...all.map((p) => p[1])) * 1.1;
  const x = (t) => PAD.left + ((t - t0) / spanS) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
  svg.append(node("line", { x1: PAD.left, y1: y(0), x2: W - PAD.right, y2: y(0), class: "axis" }));
  for (const v of [0, top / 2, top]) {
    svg.append(node("text", { x: PAD.left - 4, y: y(v) + 4, class: "tick", "text-anchor": "end" },
      `${v.toFixed(digits)}${unit}`));
  }
  svg.append(node("text", { x: PAD.left, y: H - 4, class: "tick" }, `${Math.round(spanS / 60)} min ago`));
  svg.append(node("text", { x: W - PAD.right, y: H - 4, class: "tick", "text-anchor": "end" }, "now"));
  for (const s of series) {
    let run = [];
    const flush = () => {
      if (run.length > 1) svg.append(node("polyline", { points: run.join(" "), class: `line ${s.cls}` }));
      if (run.length === 1) {
        const [px, py] = run[0].split(",");
        svg.append(node("circle", { cx: px, cy: py, r: 2, class: `dot ${s.cls}` }));
      }
      run = [];
    };
    for (const [t, v] of s.points) {
      if (t < t0) continue;
      if (v === null) flush();
      else run.push(`${x(t).toFixed(1)},${y(v).toFixed(1)}`);
    }
    flush();
  }
}
