// The Tether viewer page: the list of executions, and one execution live.
// Plain JavaScript, no framework and no build step. The server computes everything that needs
// the engine (statuses, replays, the diagram's SVG); this file fetches, arranges and listens.
"use strict";

const STATUS = {
  not_reached: ["○", "not reached"], open: ["●", "open"], success: ["✓", "success"],
  failure: ["✗", "failure"], skipped: ["↷", "skipped"], halted: ["⊘", "halted"],
};
const GOOD = new Set(["evaluation_passed", "step_complete", "action_complete", "protocol_accepted",
  "passed", "entered", "written", "recorded", "jumped", "ran", "success", "called", "closed"]);
const BAD = new Set(["evaluation_failed", "action_failed", "failed", "error", "protocol_rejected",
  "refused", "failure"]);
// The per-server token `tether view` writes into this page: its posts carry it.
const TOKEN = document.querySelector('meta[name="tether-token"]').content;

const $ = (selector) => document.querySelector(selector);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

async function getJSON(url) {
  const response = await fetch(url, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
  return body;
}

// A stream of events from the server. The stream of what the page shows drives the "live"
// mark, once `ready` (what else the page loads first) is; a stream with `ready` null does not.
function listen(url, onMessage, ready = Promise.resolve()) {
  const live = $("#live");
  const source = new EventSource(url);
  if (ready) {
    source.onopen = () => ready.then(() => { live.textContent = "live"; live.className = "live on"; });
    source.onerror = () => { live.textContent = "reconnecting…"; live.className = "live off"; };
  }
  source.onmessage = (event) => onMessage(JSON.parse(event.data).value);
  return source;
}

function badge(status) {
  return el("span", { class: `badge ${status}` }, status);
}

function ago(iso) {
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return `${Math.round(seconds)} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return iso.slice(0, 10);
}

function showError(message) {
  for (const id of ["#list-view", "#run-view", "#overview-view", "#heat-view", "#inbox-view"]) $(id).hidden = true;
  $("#error-view").hidden = false;
  $("#error-text").textContent = message;
}

// -- the list of executions ---------------------------------------------------------------------

// The list page shows a page of the executions the filter keeps; the side list beside an
// execution the first `side.limit` of them ("More" asks for a longer page).
const PAGE = 50;
const listing = { tree: "", status: "", offset: 0 };
const side = { limit: PAGE };

async function showList() {
  $("#list-view").hidden = false;
  $("#crumbs").replaceChildren(el("b", {}, "Executions"));
  const asked = new URLSearchParams(location.search);
  Object.assign(listing, {
    tree: asked.get("tree") || "", status: asked.get("status") || "",
    offset: Math.max(0, Number(asked.get("offset")) || 0),
  });
  $("#filter-status").value = listing.status;
  $("#filter").addEventListener("submit", (event) => event.preventDefault());
  $("#filter-tree").addEventListener("change", () => filterBy({ tree: $("#filter-tree").value, offset: 0 }));
  $("#filter-status").addEventListener("change", () => filterBy({ status: $("#filter-status").value, offset: 0 }));
  $("#page-back").addEventListener("click", () => filterBy({ offset: Math.max(0, listing.offset - PAGE) }));
  $("#page-next").addEventListener("click", () => filterBy({ offset: listing.offset + PAGE }));
  await refreshListing();
  listen("/api/events", refreshListing);
  setInterval(() => document.querySelectorAll("[data-iso]").forEach((cell) => {
    cell.textContent = ago(cell.dataset.iso);
  }), 10000);
}

function filterBy(change) {
  Object.assign(listing, change);
  const url = new URL(location.href);
  for (const name of ["tree", "status", "offset"]) {
    if (listing[name]) url.searchParams.set(name, listing[name]); else url.searchParams.delete(name);
  }
  history.replaceState(null, "", url);
  refreshListing();
}

function runsQuery(query) {
  return "/api/runs?" + new URLSearchParams(Object.entries(query).filter(([, value]) => value));
}

// Questions whose answers may come back out of order (a filter changed twice, a measure chosen
// while the first load runs): `ask()` numbers a new one, and only the latest is shown.
function questions() {
  let asked = 0;
  return { ask: () => ++asked, isLatest: (question) => question === asked };
}

// The listing feeds the list page, or the side list beside an execution.
const listingQuestions = questions();
async function refreshListing() {
  const onList = !$("#list-view").hidden;
  const ticket = listingQuestions.ask();
  let found;
  try {
    found = await getJSON(runsQuery(onList ? { ...listing, limit: PAGE } : { limit: side.limit }));
  } catch (error) {
    if (onList && listingQuestions.isLatest(ticket)) showError(error.message);
    return;
  }
  if (!listingQuestions.isLatest(ticket)) return;
  if (onList) renderList(found);
  else if (!$("#run-view").hidden) renderSide(found);
}

function renderList(found) {
  $("#folder").textContent = found.folder;
  const trees = $("#filter-tree");
  trees.replaceChildren(el("option", { value: "" }, "all"),
    ...[...new Set([...found.trees, listing.tree].filter(Boolean))].sort().map((name) =>
      el("option", { value: name }, name)));
  trees.value = listing.tree;
  $("#no-runs").hidden = found.total > 0 || Boolean(listing.tree || listing.status);
  $("#no-match").hidden = found.total > 0 || !(listing.tree || listing.status);
  $("#runs").hidden = found.runs.length === 0;
  $("#page-range").textContent = found.runs.length
    ? `${found.offset + 1}–${found.offset + found.runs.length} of ${found.total}`
    : `none of ${found.total}`;
  $("#page-back").disabled = found.offset === 0;
  $("#page-next").disabled = found.offset + found.runs.length >= found.total;
  $("#runs tbody").replaceChildren(...found.runs.map((run) => {
    const link = el("a", { href: `/?run=${encodeURIComponent(run.path)}` }, run.path);
    if (run.error) {
      return el("tr", { "data-path": run.path }, el("td", {}, link),
        el("td", { colspan: 7, class: "muted" }, run.error));
    }
    const { settled, actions } = run.progress;
    const share = actions ? Math.round((100 * settled) / actions) : 0;
    return el("tr", { "data-path": run.path },
      el("td", {}, link),
      el("td", {}, run.tree),
      el("td", {}, badge(run.status)),
      el("td", {}, run.phase),
      el("td", { class: "open-step" }, run.open_step
        ? [run.open_step.name, " ", el("span", { class: "muted" }, run.open_step.type)] : "—"),
      el("td", { class: "progress", title: `${settled} of ${actions} actions settled` },
        el("span", { class: "bar-track" }, el("span", { class: "bar-fill", style: `width:${share}%` })),
        `${settled}/${actions}`),
      el("td", {}, run.entries),
      el("td", { "data-iso": run.updated_at, title: run.updated_at }, ago(run.updated_at)));
  }));
}

// -- one execution --------------------------------------------------------------------------------

// What the page holds of the execution it shows; `freshRun` starts afresh for another one.
const run = {};
let listingLoaded = Promise.resolve(); // the side list's first load
function freshRun(path) {
  return {
    path, revision: null, trace: [], total: 0, nodes: {}, order: [], at: 0, doc: null,
    following: true, selected: null, snap: null, loading: false, again: false, asked: questions(),
    folded: new Set(), anchor: null, source: null,
  };
}

async function showRun(path) {
  $("#run-view").hidden = false;
  $("#side-toggle").hidden = false;
  $("#legend").replaceChildren(...Object.entries(STATUS).map(([status, [glyph, label]]) =>
    el("i", { class: `st-${status}` }, `${glyph} ${label}`)));
  $("#slider").addEventListener("input", () => moveTo(Number($("#slider").value)));
  $("#to-live").addEventListener("click", () => moveTo(run.total));
  $("#fork").addEventListener("click", showFork);
  $("#side-toggle").addEventListener("click", () => showSide($("#run-view").dataset.side !== "open"));
  $("#side-close").addEventListener("click", () => showSide(false));
  $("#side-more-button").addEventListener("click", () => {
    side.limit = Math.min(500, side.limit + PAGE);
    refreshListing();
  });
  showSide(!NARROW.matches);
  setupDiagram();
  window.addEventListener("popstate", () => {
    const path = new URLSearchParams(location.search).get("run");
    if (path === null) location.reload(); else if (path !== run.path) switchRun(path, false);
  });
  // The side list follows the listing; the page is live once it holds both.
  let listed;
  listingLoaded = new Promise((resolve) => { listed = resolve; });
  listen("/api/events", () => refreshListing().then(listed), null);
  const at = new URLSearchParams(location.search).get("at");
  try {
    await openRun(path);
  } catch (error) {
    showError(error.message);
    return;
  }
  if (at !== null && Number(at) < run.total) await moveTo(Number(at));
}

// Show the execution at `path` in place of the one shown: its document, then its live stream.
async function openRun(path) {
  if (run.source) run.source.close();
  Object.assign(run, freshRun(path));
  $("#crumbs").replaceChildren(el("a", { href: "/" }, "Executions"), " / ", el("b", {}, path));
  document.querySelectorAll("#side-runs li").forEach((li) => markCurrent(li, li.dataset.path === path));
  $("#fork-help").hidden = true;
  $("#human").dataset.tokens = "";
  $("#human").hidden = true;
  $("#human").replaceChildren();
  $("#node").replaceChildren(el("p", { class: "muted" }, "Select a node in the tree."));
  for (const box of ["#var", "#const"]) $(box).replaceChildren();
  view.fit = true;
  await loadRun();
  run.source = listen(`/api/events?path=${encodeURIComponent(path)}`, (revision) => {
    if (revision !== run.revision) refreshRun();
  }, listingLoaded);
}

// Another execution of the side list, without leaving the page.
async function switchRun(path, push = true) {
  if (push) history.pushState(null, "", `/?run=${encodeURIComponent(path)}`);
  if (NARROW.matches) showSide(false);
  try {
    await openRun(path);
  } catch (error) {
    if (run.path !== path) return;
    $("#run-title").textContent = path;
    $("#run-description").textContent = "";
    $("#run-origin").hidden = true;
    $("#run-facts").replaceChildren();
    $("#timeline").replaceChildren();
    $("#diagram").replaceChildren();
    $("#human").hidden = true;
    const banner = $("#run-banner");
    banner.hidden = false;
    banner.className = "banner failure";
    banner.textContent = error.message;
  }
}

// -- the side list of executions ------------------------------------------------------------------

const NARROW = window.matchMedia("(max-width: 900px)");

function showSide(open) {
  $("#run-view").dataset.side = open ? "open" : "closed";
  $("#side-toggle").setAttribute("aria-expanded", String(open));
}

function markCurrent(li, current) {
  li.classList.toggle("current", current);
  const link = li.querySelector("a");
  if (current) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
}

function renderSide(found) {
  $("#side-more").hidden = found.total <= found.runs.length;
  $("#side-count").textContent = `${found.runs.length} of ${found.total}`;
  $("#side-runs").replaceChildren(...found.runs.map((item) => {
    const meta = item.error
      ? el("span", { class: "side-meta muted" }, "cannot be read")
      : el("span", { class: "side-meta" }, el("span", { class: `dot ${item.status}`, title: item.status }),
        `${item.tree} · ${item.progress.settled}/${item.progress.actions}`);
    const link = el("a", {
      href: `/?run=${encodeURIComponent(item.path)}`,
      title: item.error || `${item.tree} · ${item.status} · ${item.phase}`,
      onclick: (event) => { event.preventDefault(); if (item.path !== run.path) switchRun(item.path); },
    }, el("span", { class: "side-name" }, item.path), meta);
    const li = el("li", { "data-path": item.path }, link);
    markCurrent(li, item.path === run.path);
    return li;
  }));
}

async function refreshRun() {
  if (run.loading) { run.again = true; return; }
  run.loading = true;
  try {
    do { run.again = false; await loadRun(); } while (run.again);
  } catch (error) {
    $("#run-banner").hidden = false;
    $("#run-banner").className = "banner failure";
    $("#run-banner").textContent = error.message;
  } finally {
    run.loading = false;
  }
}

async function loadRun() {
  const path = run.path;
  const query = new URLSearchParams({ path });
  if (run.trace.length) {
    query.set("since", run.trace.length);
    query.set("last_seq", run.trace[run.trace.length - 1].seq);
  }
  if (run.folded.size) query.set("fold", [...run.folded].join(","));
  const doc = await getJSON(`/api/run?${query}`);
  if (path !== run.path) return;
  const kept = doc.trace_offset ? run.trace.slice(0, doc.trace_offset) : [];
  const rebuilt = doc.trace_offset === 0;
  run.trace = kept.concat(doc.trace);
  run.revision = doc.revision;
  run.total = doc.total;
  run.doc = doc;
  run.order = doc.nodes;
  run.nodes = Object.fromEntries(doc.nodes.map((node) => [node.key, node]));
  renderTitle(doc);
  renderTimeline(rebuilt ? 0 : doc.trace_offset, rebuilt);
  const slider = $("#slider");
  slider.max = run.total;
  if (run.following || run.at > run.total) {
    run.asked.ask(); // an earlier entry asked for is no longer wanted
    showSnapshot(doc);
  } else {
    renderPosition();
  }
}

async function moveTo(at) {
  run.following = at >= run.total;
  const ticket = run.asked.ask();
  if (run.following) {
    showSnapshot(run.doc);
    return;
  }
  const query = new URLSearchParams({ path: run.path, at });
  if (run.folded.size) query.set("fold", [...run.folded].join(","));
  const doc = await getJSON(`/api/run?${query}`);
  if (run.asked.isLatest(ticket) && query.get("path") === run.path) showSnapshot(doc);
}

function renderTitle(doc) {
  $("#run-title").textContent = doc.tree.name + (doc.tree.version ? ` ${doc.tree.version}` : "");
  $("#run-description").textContent = doc.tree.description || "";
  const origin = doc.forked_from;
  $("#run-origin").hidden = !origin;
  if (origin) {
    const source = origin.path === null ? el("code", {}, origin.uri)
      : el("a", { href: `/?run=${encodeURIComponent(origin.path)}&at=${origin.at}` }, origin.path);
    $("#run-origin").replaceChildren("Forked from ", source, ` after entry ${origin.at}`,
      origin.path === null ? " (elsewhere: not in this place)" : "");
  }
  document.title = `${doc.tree.name} · Tether viewer`;
}

// Show `doc` (the latest document, or one `at` an earlier entry): diagram, facts, scopes.
function showSnapshot(doc) {
  const snap = doc.snapshot;
  run.snap = snap;
  run.at = snap.at;
  run.fork = doc.fork;
  const slider = $("#slider");
  slider.max = run.total;
  slider.value = snap.at;
  const url = new URL(location.href);
  if (run.following) url.searchParams.delete("at"); else url.searchParams.set("at", snap.at);
  history.replaceState(null, "", url);
  const diagram = $("#diagram");
  drawDiagram(doc.svg);
  diagram.classList.toggle("past", !run.following);
  diagram.querySelectorAll("g.node").forEach((g) => {
    g.addEventListener("click", () => select(g.dataset.key));
    if (g.dataset.key === run.selected) g.classList.add("selected");
  });
  renderFacts(snap, doc.progress);
  renderBanner(snap);
  renderHuman(snap);
  if (!$("#fork-help").hidden) showFork();
  renderPosition();
  renderJSON($("#var"), snap.var);
  renderJSON($("#const"), snap.const);
  renderNode();
}

function renderFacts(snap, progress) {
  const { settled, actions } = progress;
  const facts = [
    ["Status", badge(snap.status)],
    ["Phase", snap.phase],
    ["Progress", `${settled}/${actions} actions`],
    ["Revision", run.revision],
    ["Updated", el("span", { title: run.doc.updated_at }, ago(run.doc.updated_at))],
  ];
  $("#run-facts").replaceChildren(...facts.flatMap(([name, value]) =>
    [el("dt", {}, name), el("dd", {}, value)]));
}

function renderBanner(snap) {
  const banner = $("#run-banner");
  let text = null;
  let kind = "";
  if (snap.error) { text = `Replay stopped early: ${snap.error}`; kind = "failure"; }
  else if (snap.status === "failed") { text = snap.failure || "The execution failed."; kind = "failure"; }
  else if (snap.status === "complete") { text = "The workflow is done."; kind = "complete"; }
  else if (!snap.protocol_accepted) { text = "Waiting for the agent to accept the protocol."; }
  else if (snap.open.length) {
    const first = snap.open[0];
    const more = snap.open.length > 1 ? ` (and ${snap.open.length - 1} more open)` : "";
    text = `Cursor: ${first.type} “${first.name}”${more}`;
  }
  banner.hidden = text === null;
  banner.className = `banner ${kind}`;
  banner.textContent = text || "";
}

function renderPosition() {
  const entry = run.at > 0 ? run.trace[run.at - 1] : null;
  const when = entry ? ` · ${entry.ts.replace("T", " ").replace("Z", "")}` : "";
  $("#position").replaceChildren(
    run.at === run.total
      ? el("span", {}, el("b", {}, `latest`), ` · ${run.total} entries${when}`)
      : el("span", {}, "after entry ", el("b", {}, run.at), ` of ${run.total}${when}`));
  $("#to-live").classList.toggle("following", run.following);
  document.querySelectorAll("#timeline li").forEach((li, index) => {
    li.classList.toggle("future", index >= run.at);
    li.classList.toggle("at", index === run.at - 1);
  });
}

// -- the diagram: pan, zoom and fold ---------------------------------------------------------------

// Which part of the tree the frame shows: `x`, `y` the tree's point at its top-left corner,
// `scale` screen pixels per unit of the tree. `fit` follows the frame until the reader moves.
const view = { x: 0, y: 0, scale: 1, fit: true, width: 0, height: 0 };
const ZOOM = { min: 0.1, max: 4, step: 1.25 };
// "Fit" never shrinks the tree below this scale, where a name is still about 11 px high: a
// tree too big for the frame at it opens at it instead, around the cursor, and scrolls.
const LEGIBLE = 0.8;

// Put a new picture in the frame and show it as the reader left the last one.
function drawDiagram(svgText) {
  const frame = $("#diagram");
  frame.innerHTML = svgText;
  const svg = frame.querySelector("svg");
  const width = Number(svg.getAttribute("width"));
  const height = Number(svg.getAttribute("height"));
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
  const resized = width !== view.width || height !== view.height;
  Object.assign(view, { width, height });
  if (resized) sizeFrame();
  if (run.anchor) keepAnchor(run.anchor);
  run.anchor = null;
  if (view.fit) fitView(); else showView();
}

// The frame is as tall as the tree at its fitting width, within bounds.
function sizeFrame() {
  const frame = $("#diagram");
  const most = Math.max(220, window.innerHeight * (NARROW.matches ? 0.55 : 0.7));
  const scale = Math.max(LEGIBLE, Math.min(1, frame.clientWidth / view.width));
  frame.style.height = `${Math.round(Math.min(most, Math.max(160, view.height * scale)))}px`;
}

// The whole tree, centred, if it fits the frame at a legible scale; else the tree at that
// scale with the cursor (or the root) in view, from the top of the tree, the rest a scroll away.
function fitView() {
  const frame = $("#diagram");
  const whole = Math.min(1, frame.clientWidth / view.width, frame.clientHeight / view.height);
  const scale = Math.max(LEGIBLE, whole);
  const w = frame.clientWidth / scale;
  const h = frame.clientHeight / scale;
  let x = (view.width - w) / 2;
  let y = (view.height - h) / 2;
  if (scale > whole) {
    const focus = $("#diagram g.node.cursor") || $('#diagram g.node[data-key=""]');
    const box = boxAt(focus.dataset.key);
    const rect = focus.querySelector("rect.box");
    const [boxW, boxH] = [Number(rect.getAttribute("width")), Number(rect.getAttribute("height"))];
    x = Math.min(Math.max(0, box.x + boxW / 2 - w / 2), Math.max(0, view.width - w));
    y = Math.min(Math.max(0, box.y + boxH / 2 - h / 2), Math.max(0, view.height - h));
    if (view.width <= w) x = (view.width - w) / 2;
    if (view.height <= h) y = (view.height - h) / 2;
  }
  Object.assign(view, { scale, fit: true, x, y });
  showView();
}

// At least a corner of the tree stays in the frame, however far it is dragged.
function showView() {
  const svg = $("#diagram svg");
  if (!svg) return;
  const frame = $("#diagram");
  const w = frame.clientWidth / view.scale;
  const h = frame.clientHeight / view.scale;
  const keep = 48 / view.scale;
  view.x = Math.min(Math.max(view.x, keep - w), view.width - keep);
  view.y = Math.min(Math.max(view.y, keep - h), view.height - keep);
  svg.setAttribute("viewBox", `${view.x} ${view.y} ${w} ${h}`);
  $("#zoom-level").textContent = `${Math.round(view.scale * 100)}%`;
}

// Zoom by `factor` about the point (px, py) of the frame (its centre by default).
function zoomBy(factor, px, py) {
  const frame = $("#diagram");
  const cx = px ?? frame.clientWidth / 2;
  const cy = py ?? frame.clientHeight / 2;
  const scale = Math.min(ZOOM.max, Math.max(ZOOM.min, view.scale * factor));
  Object.assign(view, {
    x: view.x + cx / view.scale - cx / scale,
    y: view.y + cy / view.scale - cy / scale,
    scale, fit: false,
  });
  showView();
}

function panBy(dx, dy) {
  Object.assign(view, { x: view.x - dx / view.scale, y: view.y - dy / view.scale, fit: false });
  showView();
}

function boxAt(key) {
  const g = document.querySelector(`#diagram g.node[data-key="${CSS.escape(key)}"]`);
  const [x, y] = g.getAttribute("transform").slice("translate(".length, -1).split(",").map(Number);
  return { key, x, y };
}

// A fold or unfold leaves the node whose button was pressed where it was on the screen.
function keepAnchor(anchor) {
  if (view.fit) return;
  const now = boxAt(anchor.key);
  view.x += now.x - anchor.x;
  view.y += now.y - anchor.y;
}

function toggleFold(key) {
  if (run.folded.has(key)) run.folded.delete(key); else run.folded.add(key);
  run.anchor = boxAt(key);
  if (run.following) refreshRun(); else moveTo(run.at);
}

function setupDiagram() {
  const frame = $("#diagram");
  $("#zoom-in").addEventListener("click", () => zoomBy(ZOOM.step));
  $("#zoom-out").addEventListener("click", () => zoomBy(1 / ZOOM.step));
  $("#zoom-fit").addEventListener("click", fitView);
  $("#zoom-actual").addEventListener("click", () => zoomBy(1 / view.scale));
  window.addEventListener("resize", () => { sizeFrame(); if (view.fit) fitView(); else showView(); });
  frame.addEventListener("click", (event) => {
    const fold = event.target.closest("g.fold");
    if (fold) toggleFold(fold.dataset.fold);
  });
  // Ctrl + scroll (a pinch on a touchpad) zooms about the pointer; scrolling moves the tree
  // while there is more of it to see, and the page otherwise.
  frame.addEventListener("wheel", (event) => {
    const rect = frame.getBoundingClientRect();
    const unit = event.deltaMode === WheelEvent.DOM_DELTA_LINE ? 16 : 1;
    if (event.ctrlKey || event.metaKey) {
      event.preventDefault();
      zoomBy(Math.exp((-event.deltaY * unit) / 300), event.clientX - rect.left, event.clientY - rect.top);
    } else if (view.width * view.scale > frame.clientWidth + 1 || view.height * view.scale > frame.clientHeight + 1) {
      event.preventDefault();
      panBy(-event.deltaX * unit, -event.deltaY * unit);
    }
  }, { passive: false });
  // A drag moves the tree (a click that moved is not a click on a node); two fingers zoom.
  const pointers = new Map();
  let moved = false;
  frame.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    pointers.set(event.pointerId, { x: event.clientX, y: event.clientY });
    if (pointers.size === 1) moved = false;
  });
  frame.addEventListener("pointermove", (event) => {
    const last = pointers.get(event.pointerId);
    if (!last) return;
    const now = { x: event.clientX, y: event.clientY };
    if (pointers.size === 2) {
      const [a, b] = [...pointers.entries()].map(([id, p]) => (id === event.pointerId ? now : p));
      const [c, d] = [...pointers.values()];
      const rect = frame.getBoundingClientRect();
      const apart = Math.hypot(a.x - b.x, a.y - b.y) / Math.max(1, Math.hypot(c.x - d.x, c.y - d.y));
      zoomBy(apart, (a.x + b.x) / 2 - rect.left, (a.y + b.y) / 2 - rect.top);
      moved = true;
    } else if (moved || Math.hypot(now.x - last.x, now.y - last.y) > 4) {
      if (!moved) frame.setPointerCapture(event.pointerId);
      moved = true;
      frame.classList.add("dragging");
      panBy(now.x - last.x, now.y - last.y);
    } else {
      return;
    }
    pointers.set(event.pointerId, now);
  });
  const release = (event) => {
    pointers.delete(event.pointerId);
    if (!pointers.size) frame.classList.remove("dragging");
  };
  frame.addEventListener("pointerup", release);
  frame.addEventListener("pointercancel", release);
  frame.addEventListener("click", (event) => {
    if (moved) { event.stopPropagation(); moved = false; }
  }, true);
  frame.addEventListener("keydown", (event) => {
    const keys = {
      "+": () => zoomBy(ZOOM.step), "=": () => zoomBy(ZOOM.step), "-": () => zoomBy(1 / ZOOM.step),
      "0": fitView, "1": () => zoomBy(1 / view.scale),
      ArrowLeft: () => panBy(60, 0), ArrowRight: () => panBy(-60, 0),
      ArrowUp: () => panBy(0, 60), ArrowDown: () => panBy(0, -60),
    };
    if (keys[event.key]) { event.preventDefault(); keys[event.key](); }
  });
}

// -- a person's answer to an open human step ---------------------------------------------------------

// The open human steps, live only (an earlier position is history). A panel stays as it is while
// its step stays open, so a note being typed survives the updates that arrive meanwhile.
function renderHuman(snap) {
  const box = $("#human");
  const open = run.following && snap.status === "running"
    ? snap.open.filter((request) => request.type === "human") : [];
  const tokens = open.map((request) => request.step).join(" ");
  if (box.dataset.tokens === tokens) return;
  box.dataset.tokens = tokens;
  box.hidden = open.length === 0;
  box.replaceChildren(...(open.length ? [el("h2", {}, "Waiting for a person")] : []),
    ...open.map((request) => humanForm(request)));
}

// A stored time (`2026-03-02T13:00:00.000Z`) as a person reads it: `2026-03-02 13:00:00 UTC`.
function utc(time) {
  return time.replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function humanForm(request, path = run.path) {
  const note = el("textarea", { placeholder: "A note for the trace (optional)", "aria-label": "note" });
  const result = el("span", { class: "result", role: "status" });
  const buttons = [];
  const answer = async (decision) => {
    buttons.forEach((button) => { button.disabled = true; });
    result.className = "result";
    result.textContent = decision === "approve" ? "Approving…" : "Rejecting…";
    try {
      const response = await fetch("/api/human", {
        method: "POST",
        cache: "no-store",
        headers: { "Content-Type": "application/json", "X-Tether-Token": TOKEN },
        body: JSON.stringify({ path, decision, note: note.value || null, step: request.step }),
      });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
      result.textContent = body.message;
    } catch (error) {
      result.className = "result error";
      result.textContent = error.message;
      buttons.forEach((button) => { button.disabled = false; });
    }
  };
  buttons.push(el("button", { type: "button", class: "approve", onclick: () => answer("approve") }, "Approve"));
  buttons.push(el("button", { type: "button", class: "reject", onclick: () => answer("reject") }, "Reject"));
  return el("div", { class: "ask", "data-step": request.step },
    el("b", {}, request.name),
    el("div", { class: "prompt" }, request.prompt),
    request.shows && el("dl", { class: "shows" }, ...Object.entries(request.shows).flatMap(
      ([name, value]) => [el("dt", {}, name), el("dd", {}, JSON.stringify(value))])),
    request.deadline && el("p", { class: "deadline" }, `Waits until ${utc(request.deadline)}, then `
      + (request.on_timeout === "fail" ? "the execution fails." : "it counts as rejected.")),
    note,
    el("div", { class: "actions" }, ...buttons, result));
}

// -- fork from here ---------------------------------------------------------------------------------

// The command that starts a new execution from the slider's position, as the server wrote it for
// that position (quoted for a shell; past a check entry, which belongs to the answer before it).
function showFork() {
  const fork = run.fork;
  $("#fork-command").textContent = fork.command;
  $("#fork-note").textContent = fork.at === run.at
    ? "Paths are those of the folder this viewer serves; the original is not changed."
    : `The check after entry ${run.at} belongs to its answer, so this forks after entry ${fork.at}.`;
  $("#fork-help").hidden = false;
  if (navigator.clipboard) navigator.clipboard.writeText(fork.command).catch(() => {});
}

// -- trace timeline ---------------------------------------------------------------------------------

function outcome(text) {
  const kind = GOOD.has(text) ? "good" : BAD.has(text) ? "bad" : "neutral";
  return el("span", { class: `outcome ${kind}` }, String(text).replaceAll("_", " "));
}

function describe(entry) {
  const parts = [];
  if (entry.name) parts.push(el("b", {}, entry.name), " ");
  if (entry.item !== undefined) parts.push(el("span", { class: "muted" }, `item ${entry.item + 1}`), " ");
  if (entry.kind === "var_write") {
    parts.push(el("code", { class: "value" }, `$VAR.${entry.path} = ${JSON.stringify(entry.value)}`));
  } else if (entry.kind === "check") {
    parts.push(el("code", {}, entry.submitted), entry.on ? ` (${entry.on.replace("_", " ")}) ` : " ");
  } else if (entry.kind === "think") {
    parts.push(el("span", { class: "note" }, entry.submitted));
  } else if (entry.kind === "tool") {
    const input = entry.input || {};
    const shown = input.command ?? input.file_path ?? input.path ?? input.url ?? input.pattern;
    parts.push(el("code", {}, entry.tool), " ");
    if (shown !== undefined) parts.push(el("code", { class: "value" }, String(shown).slice(0, 200)));
  } else if (entry.kind === "human") {
    parts.push(`answered from the ${entry.by} `);
  } else if (entry.kind === "timeout") {
    parts.push(`no answer by ${utc(entry.deadline)} (on_timeout: ${entry.on_timeout}) `);
  } else if (entry.kind === "independent") {
    parts.push(el("span", { class: "muted" }, "outside the workflow"), " ");
    for (const [path, value] of Object.entries(entry.values || {})) {
      parts.push(el("code", { class: "value" }, `$VAR.${path} = ${JSON.stringify(value)}`), " ");
    }
  } else if (entry.submitted !== undefined) {
    parts.push(el("code", {}, String(entry.submitted)), " ");
  }
  const ran = { true: "ran", false: "failed", null: "outcome_unknown" };
  const result = entry.kind === "tool" ? ran[entry.ok] : entry.outcome;
  parts.push("→ ", outcome(result));
  if (entry.note) parts.push(el("span", { class: "note" }, entry.note));
  return parts;
}

// Why an answer made its action fail, said on the answer's own row: the check that was false
// (or could not be evaluated) among those its commit ran, the statement judged false, the
// failure reported, or the person's rejection.
function why(index) {
  const entry = run.trace[index];
  const failed = entry.outcome === "action_failed" || entry.outcome === "evaluation_failed"
    || (entry.kind === "human" && entry.outcome === "failure");
  if (!failed || !entry.cursor) return null;
  const key = entry.cursor.path.join(".");
  for (let next = index + 1; next < run.trace.length && run.trace[next].kind === "check"; next += 1) {
    const check = run.trace[next];
    if (!check.cursor || check.cursor.path.join(".") !== key) continue;
    if (check.outcome === "failed") {
      return el("span", { class: "why" }, "✗ check ", el("code", {}, check.submitted), " is false");
    }
    if (check.outcome === "error") {
      return el("span", { class: "why" }, "✗ check ", el("code", {}, check.submitted),
        ` could not be evaluated${check.note ? `: ${check.note}` : ""}`);
    }
  }
  const step = (run.nodes[key] || { steps: [] }).steps[entry.cursor.step];
  if (entry.kind === "evaluate") {
    return el("span", { class: "why" }, "✗ judged false: ", step ? `“${step.text}”` : "");
  }
  if (entry.kind === "instruct" && entry.submitted === "failure") {
    return el("span", { class: "why" }, "✗ the agent reported failure");
  }
  if (entry.kind === "human") {
    return el("span", { class: "why" }, `✗ rejected by a person (from the ${entry.by})`);
  }
  return null;
}

function renderTimeline(from, rebuilt) {
  const list = $("#timeline");
  if (rebuilt) list.replaceChildren();
  const rows = run.trace.slice(from).map((entry, offset) => {
    const index = from + offset;
    return el("li", { "data-seq": entry.seq, "data-kind": entry.kind, onclick: () => moveTo(index + 1) },
      el("span", { class: "seq" }, `#${entry.seq}`),
      el("span", { class: "ts", title: entry.ts }, (entry.ts || "").slice(11, 19)),
      el("span", {}, el("span", { class: `chip k-${entry.kind}` }, entry.kind.replace("_", " "))),
      el("span", { class: "what" }, describe(entry), why(index)));
  });
  list.append(...rows);
  if (run.following && rows.length) list.scrollTop = list.scrollHeight;
}

// -- node details -------------------------------------------------------------------------------------

function select(key) {
  run.selected = key;
  document.querySelectorAll("#diagram g.node").forEach((g) => {
    g.classList.toggle("selected", g.dataset.key === key);
  });
  document.querySelectorAll("#timeline li").forEach((li, index) => {
    const cursor = run.trace[index].cursor;
    li.classList.toggle("mark", cursor !== null && cursor.path.join(".") === key);
  });
  renderNode();
}

function renderNode() {
  const box = $("#node");
  const node = run.nodes[run.selected];
  if (!node || !run.snap) return;
  const view = run.snap.nodes[node.key];
  const [glyph, label] = STATUS[view.status];
  const facts = [];
  if (view.step !== null && view.status === "open") facts.push(`step ${view.step + 1}/${node.steps.length}`);
  if (view.retries) facts.push(`retry ${view.retries}/${node.retries}`);
  if (view.item !== null) facts.push(`${node.for_each.as} ${view.item + 1}/${view.items}`);
  if (view.run) facts.push(`run ${view.run}/${node.repeat.max}`);
  for (const held of view.claims.length ? view.claims : view.claim ? [view.claim] : []) {
    const item = held.item === undefined || held.item === null ? "" : ` (${node.for_each.as} ${held.item + 1})`;
    facts.push(`claimed by ${held.agent}${item} until ${utc(held.until)}`);
  }
  const parts = [
    el("div", { class: "kind" }, [node.type, ...node.modifiers].join(" · ")),
    el("h3", {}, node.name),
    el("div", { class: `status st-${view.status}` }, `${glyph} ${label}`, facts.length ? ` · ${facts.join(" · ")}` : ""),
  ];
  if (node.description) parts.push(el("p", { class: "muted" }, node.description));
  if (node.when) parts.push(el("p", {}, "when ", el("code", {}, node.when)));
  if (node.for_each) {
    parts.push(el("p", {}, `for each ${node.for_each.as} in `, el("code", {}, node.for_each.in),
      ` (at most ${node.for_each.max})`));
  }
  if (node.repeat) {
    parts.push(el("p", {}, "repeat until ", el("code", {}, node.repeat.until),
      ` (at most ${node.repeat.max} runs)`));
  }
  if (node.steps.length) {
    parts.push(el("ol", { class: "steps" }, node.steps.map((step, index) => {
      let state = "";
      if (view.status === "success" || (view.step !== null && index < view.step)) state = "done";
      if (view.status === "open" && index === view.step) state = "current";
      return el("li", { class: state, "data-step": index },
        el("span", { class: `chip k-${step.kind}` }, step.kind),
        el("div", { class: "text" }, step.text),
        step.writes ? el("div", { class: "writes" }, `writes ${step.writes.map((w) => "$VAR." + w).join(", ")}`) : null);
    })));
  }
  if (node.children.length) {
    parts.push(el("ul", { class: "entries" }, node.children.map((child) => {
      const [g, l] = STATUS[run.snap.nodes[child].status];
      return el("li", {}, el("a", { href: "#", onclick: (event) => { event.preventDefault(); select(child); } },
        run.nodes[child].name), ` ${g} ${l}`);
    })));
  }
  const own = run.trace.slice(0, run.at).filter((entry) => entry.cursor && entry.cursor.path.join(".") === node.key);
  parts.push(el("h2", { style: "margin-top:12px" }, `Trace entries (${own.length})`));
  parts.push(own.length
    ? el("ul", { class: "entries" }, own.map((entry) => el("li", {}, `#${entry.seq} `,
      el("span", { class: `chip k-${entry.kind}` }, entry.kind.replace("_", " ")), " ", describe(entry))))
    : el("p", { class: "muted" }, "None yet."));
  box.replaceChildren(...parts);
}

// -- JSON browser -------------------------------------------------------------------------------------

// Every level starts open; a level the reader folded stays folded across updates.
function renderJSON(box, value) {
  const folded = new Set([...box.querySelectorAll("details:not([open])")].map((d) => d.dataset.path));
  box.replaceChildren(jsonNode(null, value, "$", folded));
}

function jsonNode(key, value, path, folded) {
  const label = key === null ? [] : [el("span", { class: "key" }, JSON.stringify(key)), ": "];
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    return el("details", { "data-path": path, open: !folded.has(path) },
      el("summary", {}, ...label, el("span", { class: "sum" }, summary)),
      entries.map(([k, v]) => jsonNode(k, v, `${path}.${k}`, folded)));
  }
  const kind = typeof value === "string" ? "str" : typeof value === "number" ? "num" : "lit";
  return el("div", { class: "row" }, ...label, el("span", { class: kind }, JSON.stringify(value)));
}

// -- across executions: the overview and a tree's heat map ------------------------------------------

function seconds(value) {
  if (value === null || value === undefined) return "—";
  return value < 120 ? `${Number(value.toPrecision(3))} s` : `${Number((value / 60).toPrecision(3))} min`;
}

function spread(figure) {
  return figure.count ? `${seconds(figure.median)} / ${seconds(figure.p90)}` : "—";
}

function reasons(counts) {
  const text = Object.entries(counts).map(([code, n]) => `${code} ${n}`).join(", ");
  return text || "0";
}

function heatLink(tree, measure = "failures") {
  return `/?heat=${encodeURIComponent(tree.name)}&hash=${encodeURIComponent(tree.hash)}&measure=${measure}`;
}

function treeTitle(tree) {
  return `${tree.name}${tree.version ? ` ${tree.version}` : ""}`;
}

// A page of figures across the executions (the overview, the inbox): shown under its crumbs,
// filled, and filled again on every change.
async function showPage(view, title, refresh) {
  $(view).hidden = false;
  $("#crumbs").replaceChildren(el("a", { href: "/" }, "Executions"), " / ", el("b", {}, title));
  await refresh();
  listen("/api/events", refresh);
}

// The JSON document at `url`, or null once the error it gave is shown.
async function fetched(url) {
  try {
    return await getJSON(url);
  } catch (error) {
    showError(error.message);
    return null;
  }
}

async function refreshOverview() {
  const doc = await fetched("/api/overview");
  if (!doc) return;
  const figures = doc.figures;
  $("#ov-folder").textContent = doc.folder;
  $("#ov-summary").textContent = `${figures.executions} executions of ${figures.trees.length} trees`
    + (figures.unreadable ? ` (${figures.unreadable} unreadable, left out)` : "");
  $("#ov-trees").replaceChildren(...figures.trees.map((tree) =>
    overviewTree(tree, new Set(doc.fallbacks[tree.hash] || []))));
}

// A failure is red unless the action is a selector's planned fallback (`fallbacks`: its key),
// which the selector recovers from by trying its next branch.
function failedCell(action, fallbacks) {
  if (!action.failures) return el("td", {}, 0);
  if (!fallbacks.has(action.path.join("."))) return el("td", { class: "hot" }, action.failures);
  return el("td", { class: "fallback", title: "a selector's fallback: after a failure here it tries its next branch" },
    action.failures, el("span", { class: "muted" }, " fallback"));
}

function overviewTree(tree, fallbacks) {
  const runs = tree.executions;
  const rows = tree.actions.map((action) => el("tr", { "data-path": action.path.join(".") },
    el("td", { style: `padding-left:${12 + 14 * (action.path.length - 1)}px` }, action.name),
    el("td", {}, action.reached), el("td", {}, action.attempts),
    failedCell(action, fallbacks),
    el("td", {}, action.retries), el("td", {}, reasons(action.refused)),
    el("td", {}, spread(action.answer_time)), el("td", {}, action.stops_refused),
    el("td", {}, `${action.tools_denied} / ${action.tools_recorded}`),
    el("td", {}, spread(action.human_wait))));
  const checks = tree.checks.length ? el("div", { class: "checks" },
    el("h3", {}, "Checks that said no most: failed an attempt or refused a close"),
    el("ul", {}, ...tree.checks.map((check) => el("li", {}, el("b", {}, check.total), " ",
      check.action, ": ", el("code", {}, check.expression),
      el("span", { class: "muted" }, ` (failed an attempt ${check.failed}, refused a close ${check.refused})`))))) : null;
  return el("section", { class: "panel tree-card", "data-tree": tree.name, "data-hash": tree.hash },
    el("h2", {}, el("span", { class: "tree-name" }, treeTitle(tree)),
      el("span", { class: "muted mono" }, tree.hash.slice(0, 19)),
      el("a", { class: "to-heat", href: heatLink(tree) }, "Heat map")),
    el("p", { class: "statuses" },
      el("span", { class: "badge running" }, `${runs.running} running`), " ",
      el("span", { class: "badge complete" }, `${runs.complete} complete`), " ",
      el("span", { class: "badge failed" }, `${runs.failed} failed`), " ",
      el("span", { class: "muted" }, `time to finish (median / p90): ${spread(tree.time_to_finish)}`),
      Object.keys(tree.refused).length ? el("span", { class: "muted" }, ` · refused answers: ${reasons(tree.refused)}`) : null),
    el("div", { class: "table-wrap" }, el("table", { class: "runs figures" },
      el("thead", {}, el("tr", {}, ...["Action", "Reached", "Attempts", "Failed", "Retries", "Refused",
        "Answer p50 / p90", "Stops refused", "Tools denied / recorded", "Person's wait p50 / p90"]
        .map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows))),
    checks);
}

const heatView = { name: null, hash: null, measure: "failures", actions: {}, chosen: null, asked: questions() };

async function showHeat(name, hash, measure) {
  Object.assign(heatView, { name, hash, measure: measure || "failures" });
  $("#heat-view").hidden = false;
  $("#crumbs").replaceChildren(el("a", { href: "/" }, "Executions"), " / ",
    el("a", { href: "/?overview" }, "Overview"), " / ", el("b", {}, name));
  $("#measure").addEventListener("change", () => {
    heatView.measure = $("#measure").value;
    const url = new URL(location.href);
    url.searchParams.set("measure", heatView.measure);
    history.replaceState(null, "", url);
    refreshHeat();
  });
  const frame = $("#heat-diagram");
  frame.addEventListener("mouseover", (event) => {
    const node = event.target.closest("g.node.heat");
    if (node) showFigures(node.dataset.key);
  });
  frame.addEventListener("click", (event) => {
    const node = event.target.closest("g.node.heat");
    if (node) chooseAction(node.dataset.key);
  });
  await refreshHeat();
  listen("/api/events", refreshHeat);
}

async function refreshHeat() {
  const query = new URLSearchParams({ tree: heatView.name, hash: heatView.hash, measure: heatView.measure });
  const question = heatView.asked.ask();
  const doc = await fetched(`/api/heat?${query}`);
  if (!doc || !heatView.asked.isLatest(question)) return;  // a later question (another measure, a change) is on its way
  const tree = doc.tree;
  $("#heat-title").textContent = treeTitle(tree);
  $("#heat-sub").textContent = `${tree.executions.total} executions: ${tree.executions.running} running, `
    + `${tree.executions.complete} complete, ${tree.executions.failed} failed · ${tree.hash.slice(0, 19)}`;
  $("#measure").replaceChildren(...Object.entries(doc.measures).map(([value, label]) =>
    el("option", { value, selected: value === doc.measure }, label)));
  $("#heat-legend").replaceChildren(el("i", { class: "heat-scale" }, "fewer"),
    ...[0, 1, 2, 3, 4, 5].map((level) => el("i", { class: `swatch heat-${level}` })), el("i", {}, "more"));
  heatView.actions = Object.fromEntries(doc.actions.map((action) => [action.key, action]));
  $("#heat-diagram").innerHTML = doc.svg;
  if (heatView.chosen !== null) {
    const box = $(`#heat-diagram g.node[data-key="${CSS.escape(heatView.chosen)}"]`);
    if (box) box.classList.add("selected");
    await listBehind(heatView.chosen);
  }
}

function showFigures(key) {
  const action = heatView.actions[key];
  if (!action) return;
  const facts = [
    ["Reached", action.reached], ["Attempts", action.attempts], ["Failed", action.failures],
    ["Retries used", action.retries], ["Answers refused", reasons(action.refused)],
    ["Answer time p50 / p90", spread(action.answer_time)], ["Stops refused", action.stops_refused],
    ["Tool calls denied / recorded", `${action.tools_denied} / ${action.tools_recorded}`],
    ["Person's wait p50 / p90", spread(action.human_wait)],
  ];
  $("#heat-figures").replaceChildren(el("h3", {}, action.name),
    el("dl", { class: "figures-list" }, ...facts.flatMap(([label, value]) => [el("dt", {}, label), el("dd", {}, value)])));
}

async function chooseAction(key) {
  heatView.chosen = key;
  document.querySelectorAll("#heat-diagram g.node.selected").forEach((g) => g.classList.remove("selected"));
  $(`#heat-diagram g.node[data-key="${CSS.escape(key)}"]`).classList.add("selected");
  showFigures(key);
  await listBehind(key);
}

async function listBehind(key) {
  const action = heatView.actions[key];
  const query = new URLSearchParams({ tree: heatView.name, hash: heatView.hash, key, measure: heatView.measure });
  const doc = await getJSON(`/api/behind?${query}`);
  const label = $("#measure").selectedOptions[0].textContent;
  $("#heat-runs-title").textContent = `Executions behind ${action ? action.name : key}: ${label}`;
  $("#heat-runs").replaceChildren(...(doc.executions.length ? doc.executions.map((found) =>
    el("li", { "data-path": found.path },
      el("a", { href: `/?run=${encodeURIComponent(found.path)}` }, found.path), " ", badge(found.status),
      el("span", { class: "muted" }, ` ${found.meta}`)))
    : [el("li", { class: "muted" }, "None.")]));
  const more = doc.total - doc.executions.length;
  if (more > 0) $("#heat-runs").append(el("li", { class: "muted" }, `and ${more} more`));
}

// -- the inbox: what waits on a person across the executions (GET /api/inbox) -------------------

// A human step's panel stays while its step stays open, so a note being typed survives updates.
async function refreshInbox() {
  const doc = await fetched("/api/inbox");
  if (!doc) return;
  $("#in-folder").textContent = doc.folder;
  const key = (wait) => `${wait.kind} ${wait.name} ${wait.approve || wait.since}`;
  const kept = new Map([...$("#in-waits").children].map((row) => [row.dataset.key, row]));
  $("#in-waits").replaceChildren(...doc.waits.map((wait) => kept.get(key(wait)) || inboxRow(wait, key(wait))));
  $("#in-summary").textContent = doc.waits.length ? `${doc.waits.length} waiting` : "Nothing waits on a person.";
}

const INBOX_TEXT = {
  parked: (wait) => `Parked at ${wait.step}: ${wait.reason}`,
  refused: (wait) => `${wait.refusals} answers refused in a row at ${wait.step}: ${wait.last_message}`,
  lapsed: (wait) => `${wait.agent}'s claim of ${wait.step} lapsed: another agent may take it over`,
};

function inboxRow(wait, key) {
  const age = wait.age_seconds === null ? "" : ` · waiting ${seconds(wait.age_seconds)}`;
  const head = el("div", {}, el("a", { href: `/?run=${encodeURIComponent(wait.name)}` }, wait.name),
    ` · ${wait.kind}${age}`);
  const body = wait.kind === "human"
    ? [humanForm({ name: wait.step, step: wait.token, prompt: wait.prompt, shows: wait.shows }, wait.name), el("code", {}, wait.approve)]
    : [el("div", {}, INBOX_TEXT[wait.kind](wait))];
  return el("div", { class: `wait ${wait.kind}`, "data-key": key, "data-name": wait.name }, head, ...body);
}

// -- start ----------------------------------------------------------------------------------------------

const asked = new URLSearchParams(location.search);
if (asked.get("run")) showRun(asked.get("run"));
else if (asked.has("overview")) showPage("#overview-view", "Overview", refreshOverview);
else if (asked.has("inbox")) showPage("#inbox-view", "Inbox", refreshInbox);
else if (asked.get("heat")) showHeat(asked.get("heat"), asked.get("hash"), asked.get("measure"));
else showList();
