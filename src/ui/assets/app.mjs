// The page: polls the scheduler's /inspect (beside /ui/, so "../inspect"), keeps the filters,
// sort and page, and renders one page of nodes at a time, or one pod's page when the address
// ends in #pod=NAMESPACE/NAME. Polling stops while the tab is hidden or the user pauses it, and
// starts again with a fresh read when it comes back. The "would it fit" form posts to ../fit.
// When the scheduler asks for a Kubernetes token (401, 403), the page asks the user for one and
// keeps it in sessionStorage, sent in Authorization and X-Tessera-Authorization (which
// kubectl tessera ui passes on through the API server).
import { fitRequest } from './fit.mjs';
import { renderFitAnswer, renderFitError } from './fit_view.mjs';
import {
  buildCluster, filterNodes, filterPending, formatCount, groupByModel, pageOf, sortNodes,
} from './model.mjs';
import { podFromHash } from './pod.mjs';
import { renderPod } from './pod_view.mjs';
import {
  fillSelect, renderModels, renderNodes, renderPending, renderWarnings,
} from './view.mjs';

const PAGE_SIZE = 50;
const INSPECT_URL = '../inspect';
const FIT_URL = '../fit';
const TOKEN_KEY = 'tessera-scheduler-token';

const $ = (id) => document.getElementById(id);
const ui = {
  status: $('status'), alert: $('alert'), form: $('filters'), node: $('f-node'),
  model: $('f-model'), namespace: $('f-namespace'), pod: $('f-pod'), sort: $('f-sort'),
  interval: $('f-interval'), pause: $('pause'), models: $('models').tBodies[0],
  summary: $('map-summary'), prev: $('prev'), next: $('next'), pageLabel: $('page-label'),
  nodes: $('nodes'), pending: $('pending').tBodies[0], pendingEmpty: $('pending-empty'),
  mapHeading: $('map-heading'), warnings: $('warnings'), overview: $('overview'),
  podView: $('pod-view'), podHeading: $('pod-heading'), podBody: $('pod-body'),
  tokenForm: $('token-form'), token: $('token'), fitForm: $('fit-form'),
  fitKindClaim: $('fit-kind-claim'), fitKindDialect: $('fit-kind-dialect'),
  fitDialect: $('fit-dialect'), fitClaim: $('fit-claim'), fitResources: $('fit-resources'),
  fitAnnotations: $('fit-annotations'), fitCount: $('fit-count'), fitMemory: $('fit-memory'),
  fitCores: $('fit-cores'), fitSubmit: $('fit-submit'), fitAnswer: $('fit-answer'),
};

const state = {
  cluster: null,    // buildCluster's answer, or null before the first read
  lastText: '',     // the last answer's text: an unchanged answer is not rendered again
  page: 0,
  paused: false,
  timer: 0,
  inFlight: null,   // AbortController of the read under way
  updatedAt: null,  // Date of the last answer read
  error: '',
  pod: '',          // the pod whose page is shown, "" for the map
};

// The token the user gave for this tab, or "".
function token() {
  try {
    return globalThis.sessionStorage?.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';  // storage refused (a privacy setting): the page asks again
  }
}

function authHeaders() {
  const t = token();
  return t ? { Authorization: `Bearer ${t}`, 'X-Tessera-Authorization': `Bearer ${t}` } : {};
}

function filters() {
  return { node: ui.node.value.trim(), model: ui.model.value, namespace: ui.namespace.value,
           pod: ui.pod.value.trim() };
}

function intervalSeconds() {
  return Number(ui.interval.value);
}

function render() {
  const c = state.cluster;
  ui.podView.hidden = state.pod === '';
  ui.overview.hidden = state.pod !== '';
  if (!c) return;
  if (state.pod !== '') {
    renderPod(ui.podHeading, ui.podBody, c, state.pod);
    return;
  }
  renderWarnings(ui.warnings, c.warnings);
  const f = filters();
  fillSelect(ui.model, c.models);
  fillSelect(ui.namespace, c.namespaces);
  const shown = sortNodes(filterNodes(c.nodes, f), ui.sort.value);
  renderModels(ui.models, groupByModel(shown));
  const page = pageOf(shown, state.page, PAGE_SIZE);
  state.page = page.page;
  renderNodes(ui.nodes, page.items);
  ui.summary.textContent = shown.length === 0
      ? `No node of ${formatCount(c.nodes.length)} passes the filters.`
      : `Nodes ${formatCount(page.first)} to ${formatCount(page.last)} of ` +
        `${formatCount(shown.length)}` +
        (shown.length < c.nodes.length ? ` (filtered from ${formatCount(c.nodes.length)})` : '') +
        '.';
  ui.pageLabel.textContent = `Page ${page.page + 1} of ${page.pages}`;
  ui.prev.disabled = page.page === 0;
  ui.next.disabled = page.page >= page.pages - 1;
  const pending = filterPending(c.pending, f);
  renderPending(ui.pending, pending);
  ui.pendingEmpty.hidden = pending.length > 0;
}

function showStatus() {
  const when = state.updatedAt ? `Updated ${state.updatedAt.toLocaleTimeString()}` : 'Not read yet';
  let how = `every ${intervalSeconds()} s`;
  if (state.paused) how = 'updates paused';
  else if (document.hidden) how = 'updates paused while the tab is hidden';
  ui.status.textContent = `${when}; ${how}.`;
  ui.alert.hidden = state.error === '';
  ui.alert.textContent = state.error;
}

async function poll() {
  state.timer = 0;
  const controller = new AbortController();
  state.inFlight = controller;
  const timeout = setTimeout(() => controller.abort(), Math.max(2, intervalSeconds()) * 1000);
  try {
    const res = await fetch(INSPECT_URL, { cache: 'no-store', signal: controller.signal,
                                           headers: { Accept: 'application/json',
                                                      ...authHeaders() } });
    if (!res.ok) {
      const refused = await refusal(res, '/inspect');
      ui.tokenForm.hidden = !refused.askToken;
      throw new Error(refused.message);
    }
    ui.tokenForm.hidden = true;
    const text = await res.text();
    if (text !== state.lastText) {
      state.cluster = buildCluster(JSON.parse(text));
      state.lastText = text;
      render();
    }
    state.updatedAt = new Date();
    state.error = '';
  } catch (e) {
    if (controller.signal.aborted && state.inFlight !== controller) return;  // superseded
    const why = controller.signal.aborted ? 'no answer in time' : e.message;
    state.error = `Cannot read the scheduler's /inspect: ${why}. The page shows the last answer ` +
                  'and tries again.';
  } finally {
    clearTimeout(timeout);
    if (state.inFlight === controller) state.inFlight = null;
  }
  showStatus();
  schedule();
}

// Starts the next read after the interval, unless one is due or under way, or polling is off.
function schedule() {
  if (state.timer || state.inFlight || state.paused || document.hidden) return;
  state.timer = setTimeout(poll, intervalSeconds() * 1000);
}

function stop() {
  clearTimeout(state.timer);
  state.timer = 0;
  if (state.inFlight) {
    const c = state.inFlight;
    state.inFlight = null;
    c.abort();
  }
}

function restartNow() {
  stop();
  showStatus();
  if (!state.paused && !document.hidden) poll();
}

// What an answer that is not 2xx says, and whether a token for the scheduler could help. Under
// kubectl tessera ui the API server stands in front and refuses with its own meta/v1 Status
// (for instance 403 without create on pods/proxy for /fit): that names the API server, and asks
// for no token, which it would not read. The scheduler's own refusals are {"error": ...}.
// message: "the scheduler answered HTTP 401 for /inspect: <its error>".
async function refusal(res, what) {
  let body = null;
  try {
    body = JSON.parse(await res.text());
  } catch {
    body = null;
  }
  const apiServer = body?.kind === 'Status';
  const why = (apiServer ? body.message : body?.error) ?? '';
  const who = apiServer ? 'the API server' : 'the scheduler';
  return { askToken: !apiServer && (res.status === 401 || res.status === 403),
           message: `${who} answered HTTP ${res.status} for ${what}` + (why ? `: ${why}` : '') };
}

// Shows the pod of the address's fragment, or the map; the focus goes to the new heading.
function route() {
  const pod = podFromHash(globalThis.location?.hash);
  if (pod === state.pod) return;
  state.pod = pod;
  render();
  (pod ? ui.podHeading : ui.mapHeading).focus();
}

function fitKind() {
  return ui.fitKindClaim.checked ? 'claim' : 'dialect';
}

function showFitKind() {
  ui.fitDialect.hidden = fitKind() !== 'dialect';
  ui.fitClaim.hidden = fitKind() !== 'claim';
}

async function checkFit() {
  let body;
  try {
    body = fitRequest({ kind: fitKind(), resources: ui.fitResources.value,
                        annotations: ui.fitAnnotations.value, count: ui.fitCount.value,
                        memory: ui.fitMemory.value, cores: ui.fitCores.value });
  } catch (e) {
    return renderFitError(ui.fitAnswer, e.message);
  }
  ui.fitSubmit.disabled = true;
  ui.fitAnswer.textContent = 'Asking the scheduler…';
  try {
    const res = await fetch(FIT_URL, { method: 'POST', cache: 'no-store', body: JSON.stringify(body),
                                       headers: { 'Content-Type': 'application/json',
                                                  Accept: 'application/json',
                                                  ...authHeaders() } });
    if (!res.ok) {
      const refused = await refusal(res, '/fit');
      if (refused.askToken) ui.tokenForm.hidden = false;
      throw new Error(refused.message);
    }
    renderFitAnswer(ui.fitAnswer, JSON.parse(await res.text()));
  } catch (e) {
    renderFitError(ui.fitAnswer, `Cannot check: ${e.message}.`);
  } finally {
    ui.fitSubmit.disabled = false;
  }
}

function onFiltersChanged() {
  state.page = 0;
  render();
}

ui.form.addEventListener('submit', (e) => e.preventDefault());
for (const input of [ui.node, ui.pod]) input.addEventListener('input', onFiltersChanged);
for (const select of [ui.model, ui.namespace, ui.sort]) {
  select.addEventListener('change', onFiltersChanged);
}
ui.interval.addEventListener('change', () => {
  stop();
  showStatus();
  schedule();
});
ui.pause.addEventListener('click', () => {
  state.paused = !state.paused;
  ui.pause.setAttribute('aria-pressed', String(state.paused));
  ui.pause.textContent = state.paused ? 'Resume updates' : 'Pause updates';
  restartNow();
});
function turnPage(delta) {
  state.page += delta;
  render();
  ui.mapHeading.focus();  // keyboard and screen-reader users land on the new page's start
}
ui.prev.addEventListener('click', () => turnPage(-1));
ui.next.addEventListener('click', () => turnPage(1));
ui.tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  try {
    globalThis.sessionStorage?.setItem(TOKEN_KEY, ui.token.value.trim());
  } catch {
    state.error = 'This browser keeps nothing for the tab (storage refused): the token is not kept.';
  }
  ui.token.value = '';
  restartNow();
});
ui.fitForm.addEventListener('submit', (e) => {
  e.preventDefault();
  checkFit();
});
for (const radio of [ui.fitKindClaim, ui.fitKindDialect]) {
  radio.addEventListener('change', showFitKind);
}
globalThis.addEventListener?.('hashchange', route);
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) return restartNow();
  stop();
  showStatus();
});

state.pod = podFromHash(globalThis.location?.hash);
showFitKind();
render();
restartNow();
