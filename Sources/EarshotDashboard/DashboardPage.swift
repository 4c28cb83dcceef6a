/// The dashboard's page: plain HTML, CSS and JavaScript served from the binary; it loads nothing
/// else. It takes `/state.json` once, then every report the WebSocket `/socket` pushes (drawing
/// the newest once per frame), and moves each programme's cursor between reports at the box's
/// measured rate. For tests and
/// benchmarks it keeps `window.earshotLatencies` (event to screen, ms) and
/// `window.earshotCueChanges` (each cue status drawn: the one before, none when first drawn, and
/// the time it was drawn).
enum DashboardPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Earshot dashboard</title>
<style>
  :root { --bg: #f6f7f9; --card: #fff; --ink: #1d232b; --muted: #65707d; --line: #d9dee5;
          --ok: #1f8a4c; --warn: #b7791f; --bad: #c53030; --accent: #2b6cb0; }
  body { margin: 0; font: 15px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--ink); }
  header { padding: 12px 20px; border-bottom: 1px solid var(--line); background: var(--card); display: flex; gap: 16px; align-items: baseline; }
  header h1 { font-size: 18px; margin: 0; }
  #page-status { color: var(--muted); }
  main { padding: 16px 20px; display: grid; gap: 12px; }
  .fleet-line { display: grid; grid-template-columns: 14px 1.2fr 1fr 2fr 1fr; gap: 10px; align-items: center;
                background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; cursor: pointer; }
  .dot { width: 12px; height: 12px; border-radius: 50%; background: var(--muted); }
  .dot.connected { background: var(--ok); } .dot.reconnecting, .dot.connecting { background: var(--warn); } .dot.refused { background: var(--bad); }
  .box { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
  .box h2 { font-size: 17px; margin: 0 0 6px; }
  .muted { color: var(--muted); }
  .problem { color: var(--bad); }
  .timeline { position: relative; height: 26px; background: #eef1f5; border-radius: 4px; margin: 10px 0 4px; overflow: hidden; }
  .cursor { position: absolute; top: 0; bottom: 0; width: 3px; background: var(--accent); }
  .cue { position: absolute; top: 4px; bottom: 4px; min-width: 6px; border-radius: 3px; opacity: .85; }
  .cue[data-status=upcoming] { background: #a0aec0; } .cue[data-status=started] { background: var(--ok); }
  .cue[data-status=ended] { background: #4a5568; } .cue[data-status=skipped] { background: var(--warn); }
  .cue.owed { outline: 2px solid var(--bad); }
  table { border-collapse: collapse; margin-top: 6px; } td, th { padding: 2px 10px 2px 0; text-align: left; }
  .legend span { margin-right: 12px; }
  .box.stale .programme-title, .box.stale .timeline, .box.stale .cues { opacity: .5; }
  .stale-note { color: var(--warn); }
</style>
</head>
<body>
<header><h1>Earshot</h1><span id="page-status">connecting to the dashboard…</span></header>
<main id="boxes"></main>
<script>
"use strict";
const token = new URLSearchParams(location.search).get("token");
const q = token ? "?token=" + encodeURIComponent(token) : "";
let report = { boxes: [], madeAtMs: 0 }, receivedAt = Date.now(), open = new Set();

function esc(text) { return String(text).replace(/[&<>"']/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;","'":"&#39;"}[c])); }
function clock(s) { if (s == null) return "–"; s = Math.max(0, s); const m = Math.floor(s / 60), r = (s % 60).toFixed(1).padStart(4, "0"); return m + ":" + r; }
// The position now: the box's at positionAtMs, moved on to when the dashboard made the report
// (both on the dashboard's clock, which it measures the box's against) and from there by this
// browser's own clock.
function position(p) { return !p.moving ? p.position : p.position + Math.max(0, (report.madeAtMs - p.positionAtMs + Date.now() - receivedAt) / 1000) * p.rate; }
function hours(h) { return h >= 1 ? h.toFixed(1) + " h" : (h * 60).toFixed(1) + " min"; }
function timeOfDay(ms) { return ms == null ? "–" : new Date(ms).toLocaleTimeString(); }
function connectionText(b) {
  return { connected: "connected", connecting: "connecting…", reconnecting: "unreachable, reconnecting…", refused: "refused the key" }[b.connection] || b.connection;
}

function render() {
  const main = document.getElementById("boxes");
  main.innerHTML = report.boxes.map((b, i) => {
    const p = b.programme;
    const line = `<div class="fleet-line" data-index="${i}" data-box="${esc(b.name)}" data-connection="${b.connection}">
      <div class="dot ${b.connection}"></div><strong>${esc(b.name)}</strong>
      <span class="connection">${esc(connectionText(b))}</span>
      <span class="fleet-programme">${p ? esc(p.title) + (b.stale ? " (last heard)" : "") : (b.state ? esc(b.state) : "")}</span>
      <span class="muted">${esc(b.server)}</span></div>`;
    if (!open.has(b.name) && report.boxes.length > 1) return line;
    return line + boxView(b);
  }).join("") || "<p class='muted'>No boxes.</p>";
  for (const el of main.querySelectorAll(".fleet-line")) el.onclick = () => {
    const name = report.boxes[el.dataset.index].name; open.has(name) ? open.delete(name) : open.add(name); render();
  };
  tick();
}

function boxView(b) {
  const p = b.programme, c = b.capture;
  let html = `<section class="box${b.stale ? " stale" : ""}" data-box="${esc(b.name)}">`;
  if (b.problem) html += `<div class="problem" data-problem>${esc(b.problem)}</div>`;
  if (b.stale) html += `<div class="stale-note" data-stale>last heard at ${esc(timeOfDay(b.lastHeardAtMs))}: what it played then</div>`;
  if (b.notServing) html += `<div class="problem">not serving: ${esc(b.notServing)}</div>`;
  if (b.state) html += `<div>session: <span class="state">${esc(b.state)}</span> <span class="muted">(daemon start ${esc(b.epoch)})</span></div>`;
  if (p) {
    html += `<h2 class="programme-title">${esc(p.title)}</h2>
      <div class="muted">${esc(p.catalog)} v${esc(p.catalogVersion)}, reference ${esc(p.referenceIndex)}, confidence ${p.confidence.toFixed(2)}, speed ${(p.rate * 100).toFixed(2)} %</div>
      <div class="timeline" data-duration="${p.duration ?? ""}">`;
    const length = p.duration || Math.max(60, position(p) * 1.25);
    for (const cue of p.cues) {
      const left = 100 * cue.start / length, width = cue.end != null ? Math.max(0.5, 100 * (cue.end - cue.start) / length) : 0.5;
      const late = cue.lateness != null ? `, ${(cue.lateness * 1000).toFixed(0)} ms late` : "";
      html += `<div class="cue${cue.owed ? " owed" : ""}" data-cue="${esc(cue.id)}" data-status="${cue.status}" style="left:${left}%;width:${width}%"
        title="${esc(cue.id)} at ${clock(cue.start)}: ${cue.status}${late}${cue.owed ? " (owed)" : ""}"></div>`;
    }
    html += `<div class="cursor"></div></div>
      <div><span class="position">${clock(position(p))}</span> / ${clock(p.duration)}</div>`;
    if (p.cues.length) {
      html += `<table class="cues"><tr><th>cue</th><th>at</th><th>state</th><th>lateness</th></tr>` + p.cues.map(cue =>
        `<tr data-cue-row="${esc(cue.id)}"><td>${esc(cue.id)}</td><td>${clock(cue.start)}</td><td>${cue.status}${cue.owed ? " (owed)" : ""}</td>
         <td>${cue.lateness != null ? (cue.lateness * 1000).toFixed(0) + " ms" : ""}</td></tr>`).join("") + "</table>";
    }
  } else if (b.connection === "connected") {
    html += `<h2 class="programme-title muted">nothing recognised</h2>`;
  }
  if (c) html += `<div class="capture">capture: ${esc(c.source)} · ${esc(c.xruns)} xruns · ${esc(c.reopens)} reopens · ${esc(c.gaps)} gaps
      ${c.problem ? `<span class="problem">${esc(c.problem)}</span>` : ""}</div>`;
  if (b.catalogs) html += `<table class="catalogs"><tr><th>catalog</th><th>version</th><th>state</th><th>references</th><th>length</th><th>signed by</th></tr>` +
    b.catalogs.map(k => `<tr data-catalog="${esc(k.name)}" data-version="${esc(k.version)}" data-state="${esc(k.state)}"><td>${esc(k.name)}</td><td>v${esc(k.version)}</td>
      <td>${esc(k.state)}${k.problem ? ` <span class="${k.state === "failed" ? "problem" : "muted"}">${esc(k.problem)}</span>` : ""}</td>
      <td>${esc(k.references)}</td><td>${hours(k.hours)}</td><td>${k.signer ? esc(k.signer) : ""}</td></tr>`).join("") + "</table>";
  if (b.matches.length) html += `<table class="matches"><tr><th>last matches</th><th>catalog</th><th>offset</th><th>confidence</th></tr>` +
    b.matches.map(m => `<tr><td>${esc(m.title)}</td><td>${esc(m.catalog)}</td><td>${clock(m.offset)}</td><td>${m.confidence.toFixed(2)}</td></tr>`).join("") + "</table>";
  return html + "</section>";
}

// Moves the cursors between reports at each box's rate.
function tick() {
  for (const box of document.querySelectorAll("section.box")) {
    const b = report.boxes.find(x => x.name === box.dataset.box), p = b && b.programme;
    if (!p) continue;
    const now = position(p), length = p.duration || Math.max(60, now * 1.25);
    const cursor = box.querySelector(".cursor"), text = box.querySelector(".position");
    if (cursor) { cursor.style.left = Math.min(100, 100 * now / length) + "%"; cursor.dataset.position = now.toFixed(2); }
    if (text) text.textContent = clock(now);
  }
}
setInterval(tick, 100);

// How long each event took from the daemon to the screen (ms), and each cue status as drawn.
window.earshotLatencies = [];
window.earshotCueChanges = [];
function cueStatuses(r) {
  const statuses = new Map();
  for (const b of r.boxes) for (const c of (b.programme ? b.programme.cues : [])) statuses.set(b.name + "\n" + c.id, c.status);
  return statuses;
}
// Each report holds everything, so only the newest is drawn, once per frame: a page that cannot
// keep up with a busy fleet skips reports instead of falling behind.
// Reports are numbered by the dashboard program (from 0 again when it restarts, so on each new
// socket): one older than the newest taken is dropped.
let pending = null, newestSeq = -1;
function take(next) {
  if (!next || !Array.isArray(next.boxes) || next.seq < newestSeq) return;
  newestSeq = next.seq;
  const first = pending == null;
  pending = { report: next, at: Date.now() };
  if (!first) return;
  if (document.hidden) { setTimeout(draw, 0); return; }
  requestAnimationFrame(draw);
  setTimeout(draw, 250);  // where frames stop while the page counts as shown
}
document.addEventListener("visibilitychange", () => { if (pending) draw(); });
function draw() {
  const next = pending;
  pending = null;
  if (!next) return;
  const seen = new Map(report.boxes.map(b => [b.name, b.lastEventAtMs])), shown = cueStatuses(report);
  report = next.report; receivedAt = next.at; render();
  document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  const drawn = Date.now();
  for (const [key, status] of cueStatuses(report)) {
    if (shown.get(key) !== status && window.earshotCueChanges.length < 100000) {
      const [box, cue] = key.split("\n");
      window.earshotCueChanges.push({ box, cue, from: shown.get(key) ?? null, status, atMs: drawn });
    }
  }
  for (const b of report.boxes) {
    // Not a box's first event after a snapshot, which waited for that snapshot to be taken.
    if (b.lastEventAtMs != null && seen.get(b.name) != null && seen.get(b.name) !== b.lastEventAtMs && window.earshotLatencies.length < 100000) {
      window.earshotLatencies.push(drawn - b.lastEventAtMs);
    }
  }
}

function connect() {
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/socket" + q);
  ws.onopen = () => { newestSeq = -1; document.getElementById("page-status").textContent = "live"; };
  ws.onmessage = e => take(JSON.parse(e.data));
  ws.onclose = () => { document.getElementById("page-status").textContent = "the dashboard program is gone; retrying…"; setTimeout(connect, 1000); };
}
fetch("/state.json" + q).then(r => r.json()).then(take).finally(connect);
</script>
</body>
</html>
"""#
}
