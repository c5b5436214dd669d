// The page's modules run against a stand-in DOM built from index.html's ids and options
// (fake_dom.mjs), with fetch and timers in the test's hands: the first read, the drawing of
// nodes, bars, models and pending pods with their reasons, DRA shares, paging, filters, when it
// polls (interval, hidden tab, pause, errors), a pod's page, the "would it fit" form and the
// token. The page in a real browser: browser/browser_test.mjs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { FakeDocument, option } from './fake_dom.mjs';

const html = readFileSync(new URL('./assets/index.html', import.meta.url), 'utf8');

// A document with an element for each id of index.html, its selects' options, its tables' body.
function pageDocument() {
  const doc = new FakeDocument();
  for (const m of html.matchAll(/<(\w+)\s[^>]*\bid="([^"]+)"/g)) doc.add(m[1], m[2]);
  for (const m of html.matchAll(/<select id="([^"]+)"[^>]*>([\s\S]*?)<\/select>/g)) {
    const select = doc.getElementById(m[1]);
    for (const o of m[2].matchAll(/<option value="([^"]*)"( selected)?>([^<]*)<\/option>/g)) {
      select.append(option(o[1], o[3]));
      if (o[2]) select.value = o[1];
    }
  }
  for (const id of ['models', 'pending']) doc.getElementById(id).append(doc.createElement('tbody'));
  return doc;
}

function inspectOf(nodeCount) {
  const nodes = [];
  const allocations = [];
  for (let n = 0; n < nodeCount; n++) {
    const name = `node-${String(n).padStart(3, '0')}`;
    nodes.push({ name, ready: true, serving: true, unknownGpus: [], gpus: [
      { uuid: `G${n}`, index: 0, model: n % 2 ? 'L4' : 'SimGPU-24G', numa: 0, healthy: true,
        memoryMiB: 24576, memoryScaling: n % 2 ? 1 : 2, virtualMemoryMiB: n % 2 ? 24576 : 49152,
        usedMiB: 8192, usedCores: 30, slots: 10, usedSlots: 1, pods: 1, exclusive: false }] });
    allocations.push({ pod: `team-${n % 3}/p${n}`, uid: `u${n}`, node: name, reserved: false,
                       allocation: { version: 1, node: name, containers: [
                         { name: 'main', mode: 'hard', slot: true, devices: [
                           { uuid: `G${n}`, memoryMiB: 8192, cores: 30 }] }] } });
  }
  return { nodes, allocations, pending: [
    { pod: 'team-1/waits', uid: 'w', containers: [
      { name: 'init', init: true, request: '1 GPU x 1024 MiB' },
      { name: 'main', init: false, request: '1 GPU x 200000 MiB' }] }] };
}

let loads = 0;

// Loads a fresh copy of app.mjs on a fresh document. `answers` is what fetch returns, in order
// (the last one again once they run out): a value is sent as JSON, a number is that HTTP status.
// `fitAnswers` answer POST ../fit the same way; `hash` is the address's fragment at load.
async function openPage(answers, { fitAnswers = [], hash = '' } = {}) {
  const doc = pageDocument();
  const timers = new Map();
  let nextTimer = 1;
  const fetched = [];
  const posted = [];
  const inspectHeaders = [];
  const windowListeners = {};
  globalThis.location = { hash };
  globalThis.addEventListener = (type, fn) => (windowListeners[type] ??= []).push(fn);
  const storage = new Map();
  globalThis.sessionStorage = { getItem: (k) => storage.get(k) ?? null,
                                setItem: (k, v) => storage.set(k, String(v)) };
  globalThis.document = doc;
  globalThis.setTimeout = (fn, ms) => {
    timers.set(nextTimer, { fn, ms });
    return nextTimer++;
  };
  globalThis.clearTimeout = (id) => timers.delete(id);
  globalThis.fetch = async (url, options = {}) => {
    let a;
    if (url === '../fit') {
      posted.push(options);
      a = fitAnswers.shift();
    } else {
      fetched.push(url);
      inspectHeaders.push(options.headers ?? {});
      a = answers.length > 1 ? answers.shift() : answers[0];
    }
    if (a && a.status) return { ok: false, status: a.status, text: async () => JSON.stringify(a.body) };
    if (typeof a === 'number') return { ok: false, status: a, text: async () => '' };
    return { ok: true, status: 200, text: async () => JSON.stringify(a) };
  };
  await import(`./assets/app.mjs?page=${++loads}`);
  const page = {
    doc, timers, fetched, posted, storage, inspectHeaders,
    navigate: async (to) => {
      globalThis.location.hash = to;
      for (const fn of windowListeners.hashchange ?? []) fn({});
      await page.settle();
    },
    el: (id) => doc.getElementById(id),
    text: (id) => doc.getElementById(id).textContent,
    articles: () => doc.getElementById('nodes').children,
    // The poll timer (the one at the interval; a read's own time limit is cleared by then).
    pollTimers: () => [...timers.values()],
    settle: async () => {
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    },
    runTimers: async () => {
      const due = [...timers.entries()];
      timers.clear();
      for (const [, t] of due) t.fn();
      await page.settle();
    },
  };
  await page.settle();
  return page;
}

test('every id the script of the page uses is in index.html', () => {
  const app = readFileSync(new URL('./assets/app.mjs', import.meta.url), 'utf8');
  const used = [...app.matchAll(/\$\('([^']+)'\)/g)].map((m) => m[1]);
  assert.ok(used.length >= 19);
  for (const id of used) assert.match(html, new RegExp(`id="${id}"`), id);
});

test('reads ../inspect at once and draws the map, the models and the pending pods', async () => {
  const page = await openPage([inspectOf(2)]);
  assert.deepEqual(page.fetched, ['../inspect']);
  assert.equal(page.articles().length, 2);
  const scaled = page.articles()[0];
  assert.match(scaled.textContent, /^node-000GPU 0SimGPU-24G/);
  assert.match(scaled.textContent,
               /memory 8 GiB of 48 GiB \(17%\), virtual: 24 GiB physical x 2/);
  assert.match(scaled.textContent, /cores 30% of 100%, vGPU slots 1 of 10/);
  assert.match(scaled.textContent, /team-0\/p0 \(main\): 8 GiB, 30% cores/);
  const bars = scaled.findAll((e) => e.className.startsWith('bar '));
  assert.equal(bars.length, 2);
  assert.equal(bars[0].getAttribute('role'), 'img');
  assert.match(bars[0].getAttribute('aria-label'), /^memory 8 GiB of 48 GiB/);
  const [seg, marker] = bars[0].children;
  assert.equal(seg.style.width, `${(8192 * 100) / 49152}%`);
  assert.equal(marker.className, 'marker');
  assert.equal(marker.style.left, '50%');
  assert.equal(bars[1].children[0].style.width, '30%');
  // The unscaled GPU has no marker.
  assert.equal(page.articles()[1].findAll((e) => e.className === 'marker').length, 0);

  assert.deepEqual(page.el('models').tBodies[0].children.map((r) => r.firstChild.textContent),
                   ['L4', 'SimGPU-24G']);
  const pending = page.el('pending').tBodies[0].children.map((r) => r.textContent);
  assert.deepEqual(pending, ['team-1/waitsinit (init)1 GPU x 1024 MiB' +
                             'not filtered by this scheduler yet (kube-scheduler has not asked ' +
                             'it since it started)',
                             'main1 GPU x 200000 MiB']);
  const why = page.el('pending').tBodies[0].children[0].children[3];
  assert.equal(why.getAttribute('rowspan'), '2');
  assert.equal(page.el('pending-empty').hidden, true);
  assert.deepEqual(page.el('f-model').options.map((o) => o.value), ['', 'L4', 'SimGPU-24G']);
  assert.deepEqual(page.el('f-namespace').options.map((o) => o.value),
                   ['', 'team-0', 'team-1']);
  assert.match(page.text('status'), /^Updated .*; every 5 s\.$/);
  assert.equal(page.el('alert').hidden, true);
  assert.deepEqual(page.pollTimers().map((t) => t.ms), [5000]);
});

test('pages of 50 nodes, and the filters go back to the first page', async () => {
  const page = await openPage([inspectOf(120)]);
  assert.equal(page.articles().length, 50);
  assert.equal(page.text('map-summary'), 'Nodes 1 to 50 of 120.');
  assert.equal(page.text('page-label'), 'Page 1 of 3');
  assert.equal(page.el('prev').disabled, true);
  page.el('next').dispatch('click');
  page.el('next').dispatch('click');
  assert.equal(page.text('map-summary'), 'Nodes 101 to 120 of 120.');
  assert.equal(page.articles().length, 20);
  assert.equal(page.el('next').disabled, true);
  assert.equal(page.doc.activeElement, page.el('map-heading'));

  page.el('f-node').value = 'NODE-01';
  page.el('f-node').dispatch('input');
  assert.equal(page.text('map-summary'), 'Nodes 1 to 10 of 10 (filtered from 120).');
  page.el('f-model').value = 'L4';
  page.el('f-model').dispatch('change');
  assert.equal(page.text('map-summary'), 'Nodes 1 to 5 of 5 (filtered from 120).');
  assert.deepEqual(page.el('models').tBodies[0].children.map((r) => r.firstChild.textContent),
                   ['L4']);
  page.el('f-pod').value = 'nobody';
  page.el('f-pod').dispatch('input');
  assert.equal(page.text('map-summary'), 'No node of 120 passes the filters.');
  assert.equal(page.articles().length, 0);
  assert.equal(page.el('pending-empty').hidden, false);
});

test('polls at the interval, not while hidden or paused, and keeps the map on errors', async () => {
  const first = inspectOf(3);
  const page = await openPage([first, first, 503, inspectOf(4)]);
  const drawn = page.articles();
  await page.runTimers();
  assert.equal(page.fetched.length, 2);
  assert.equal(page.articles(), drawn, 'an unchanged answer is not drawn again');

  await page.runTimers();  // 503
  assert.equal(page.el('alert').hidden, false);
  assert.match(page.text('alert'), /HTTP 503 for \/inspect.*shows the last answer/);
  assert.equal(page.articles().length, 3);
  assert.equal(page.pollTimers().length, 1, 'it tries again');

  page.el('f-interval').value = '30';
  page.el('f-interval').dispatch('change');
  assert.deepEqual(page.pollTimers().map((t) => t.ms), [30000]);
  assert.match(page.text('status'), /every 30 s\.$/);

  page.doc.hidden = true;
  page.doc.dispatch('visibilitychange');
  assert.equal(page.pollTimers().length, 0);
  assert.match(page.text('status'), /paused while the tab is hidden\.$/);
  page.el('f-interval').value = '10';
  page.el('f-interval').dispatch('change');
  assert.equal(page.pollTimers().length, 0, 'no read is planned while hidden');
  page.doc.hidden = false;
  page.doc.dispatch('visibilitychange');
  await page.settle();
  assert.equal(page.fetched.length, 4, 'a fresh read when the tab shows again');
  assert.equal(page.articles().length, 4);
  assert.equal(page.el('alert').hidden, true);

  page.el('pause').dispatch('click');
  assert.equal(page.pollTimers().length, 0);
  assert.equal(page.el('pause').getAttribute('aria-pressed'), 'true');
  assert.equal(page.text('pause'), 'Resume updates');
  assert.match(page.text('status'), /updates paused\.$/);
  page.el('pause').dispatch('click');
  await page.settle();
  assert.equal(page.fetched.length, 5);
  assert.equal(page.pollTimers().length, 1);
});

test('an answer that is not /inspect\'s shape is an alert, not a blank page', async () => {
  const page = await openPage([{ error: 'no' }]);
  assert.match(page.text('alert'), /"nodes" is not a list/);
  assert.equal(page.articles().length, 0);
});

// /inspect of a scheduler with the filter's reasons and DRA shares (ui_api: pending[].filter,
// draShares, warnings).
function inspectWithReasonsAndClaims() {
  const doc = inspectOf(2);
  doc.pending[0].filter = {
    time: '2026-12-06T05:01:02Z', nodesChecked: 8, fits: [], fitsLeftOut: 0, reasonsLeftOut: 1,
    reasons: Array.from({ length: 7 }, (_, i) => ({
      node: `node-00${i}`, unresolvable: i === 0,
      reason: `insufficient GPU memory: need 200000 MiB on 1 GPU, largest free ${16384 + i} MiB` })),
  };
  doc.draShares = [{ claim: 'team-0/shared', uid: 'c', node: 'node-001', device: 'gpu-0',
                     gpuIndex: 0, gpuUuid: 'G1', memoryMiB: 4096, wholeMemory: false, cores: 20,
                     pods: ['team-0/reader'], dra: true }];
  doc.warnings = ['claim team-0/bad: device gpu-9: no such GPU'];
  return doc;
}

test('a pending pod shows the reasons per node of the last filter', async () => {
  const page = await openPage([inspectWithReasonsAndClaims()]);
  const why = page.el('pending').tBodies[0].children[0].children[3];
  assert.match(why.textContent, /^filtered at 05:01:02 UTC: 8 nodes checked, fits on none/);
  const lists = why.findAll((e) => e.tagName === 'UL');
  assert.equal(lists[0].children.length, 5, 'five reasons in the table');
  assert.equal(lists[0].children[0].textContent,
               'node-000: insufficient GPU memory: need 200000 MiB on 1 GPU, largest free ' +
               '16384 MiB (not even when empty)');
  const more = why.findAll((e) => e.tagName === 'DETAILS');
  assert.equal(more.length, 1);
  assert.match(more[0].textContent, /^2 more nodes/);
  assert.match(why.textContent, /and 1 more refusing nodes not listed by the scheduler$/);
  const link = page.el('pending').tBodies[0].children[0].children[0].children[0];
  assert.equal(link.tagName, 'A');
  assert.equal(link.href, '#pod=team-1%2Fwaits');
});

test('DRA shares are drawn on their GPU beside the device-plugin shares', async () => {
  const page = await openPage([inspectWithReasonsAndClaims()]);
  const plain = page.articles()[1];
  assert.match(plain.textContent, /memory 12 GiB of 24 GiB \(50%\), 4 GiB of it through DRA claims/);
  assert.match(plain.textContent, /cores 50% of 100%, 20% through DRA claims, vGPU slots 1 of 10/);
  assert.match(plain.textContent,
               /claim team-0\/shared \(DRA, pods team-0\/reader\): 4 GiB, 20% cores/);
  const memory = plain.findAll((e) => e.className === 'bar bar-memory')[0];
  assert.deepEqual(memory.children.map((s) => s.className), ['seg seg-dra', 'seg seg-1']);
  assert.deepEqual(memory.children.map((s) => s.style.width), ['16.666666666666668%', '33.333333333333336%']);
  assert.equal(page.el('warnings').hidden, false);
  assert.equal(page.text('warnings'), 'claim team-0/bad: device gpu-9: no such GPU');
  // The model table counts both kinds.
  assert.match(page.el('models').tBodies[0].children[0].textContent, /12 GiB of 24 GiB \(50%\)/);
});

test('a pod\'s page: its decision and limits, then back to the map', async () => {
  const page = await openPage([inspectWithReasonsAndClaims()], { hash: '#pod=team-1%2Fp1' });
  assert.equal(page.el('pod-view').hidden, false);
  assert.equal(page.el('overview').hidden, true);
  assert.equal(page.text('pod-heading'), 'Pod team-1/p1');
  const body = page.text('pod-body');
  assert.match(body, /^Placed on node node-001\./);
  assert.match(body, /main \(compute mode hard, takes a vGPU slot\)GPU 0 \(L4, G1\): 8 GiB, 30% cores/);
  assert.match(body, /UsageNot shown: the scheduler's \/inspect carries what is allocated/);

  await page.navigate('#pod=team-1%2Fwaits');
  assert.equal(page.text('pod-heading'), 'Pod team-1/waits');
  assert.match(page.text('pod-body'), /^Waiting for a GPU\.Requestinit \(init\): 1 GPU x 1024 MiB/);
  assert.match(page.text('pod-body'), /Why it waitsfiltered at 05:01:02 UTC/);
  assert.equal(page.doc.activeElement, page.el('pod-heading'));

  await page.navigate('#pod=team-0%2Freader');
  assert.match(page.text('pod-body'), /^Holds a GPU through DRA claims/);
  assert.match(page.text('pod-body'),
               /claim team-0\/shared: gpu-0 on node-001 \(GPU 0\), 4 GiB, 20% cores/);

  await page.navigate('');
  assert.equal(page.el('pod-view').hidden, true);
  assert.equal(page.el('overview').hidden, false);
  assert.equal(page.doc.activeElement, page.el('map-heading'));
});

test('the would-it-fit form posts the request and shows the answer or the error', async () => {
  const answer = { fits: true, kind: 'dialect', node: 'node-001', score: 7,
                   request: [{ name: 'main', init: false, request: '1 GPU x 8000 MiB' }],
                   gpus: [{ container: 'main', index: 0, uuid: 'G1', model: 'L4',
                            memoryMiB: 8000, cores: 0 }],
                   fitting: ['node-001'],
                   nodes: [{ node: 'node-000', reason: 'insufficient GPU memory', unresolvable: false }] };
  const page = await openPage([inspectOf(2)], {
    fitAnswers: [answer, { status: 400, body: { error: 'claim.cores: 150 is outside 0..100' } }],
  });
  page.el('fit-resources').value = 'nvidia.com/gpu: 1\nnvidia.com/gpumem: 8000';
  page.el('fit-form').dispatch('submit');
  await page.settle();
  assert.equal(page.posted.length, 1);
  assert.equal(page.posted[0].method, 'POST');
  assert.equal(page.posted[0].headers['Content-Type'], 'application/json');
  assert.deepEqual(JSON.parse(page.posted[0].body),
                   { containers: [{ name: 'main', resources: { 'nvidia.com/gpu': '1',
                                                               'nvidia.com/gpumem': '8000' } }] });
  assert.equal(page.text('fit-answer'),
               'Fits now on node-001 (node score 7 of 10).Request as parsed: main: 1 GPU x 8000 ' +
               'MiB.main: GPU 0 (L4, G1), 8000 MiB, no compute limitFits on: node-001.Where it ' +
               'does not fit, and why:node-000: insufficient GPU memory');

  page.el('fit-kind-claim').checked = true;
  page.el('fit-kind-claim').dispatch('change');
  assert.equal(page.el('fit-dialect').hidden, true);
  assert.equal(page.el('fit-claim').hidden, false);
  page.el('fit-count').value = '1';
  page.el('fit-cores').value = '150';
  page.el('fit-form').dispatch('submit');
  await page.settle();
  assert.equal(page.posted.length, 1, 'a bad field is refused before asking the scheduler');
  assert.equal(page.text('fit-answer'), 'Compute (% of a GPU): "150" is not a whole number from 0 to 100');
  page.el('fit-cores').value = '';
  page.el('fit-memory').value = '8Gi';
  page.el('fit-form').dispatch('submit');
  await page.settle();
  assert.deepEqual(JSON.parse(page.posted[1].body), { claim: { count: 1, memory: '8Gi' } });
  assert.equal(page.text('fit-answer'),
               'Cannot check: the scheduler answered HTTP 400 for /fit: claim.cores: 150 is ' +
               'outside 0..100.');
  assert.equal(page.el('fit-submit').disabled, false);
});

test('a scheduler that wants a token gets the one the user gives, in both headers', async () => {
  const page = await openPage([{ status: 401, body: { error: 'no bearer token' } }, inspectOf(1)]);
  assert.equal(page.el('token-form').hidden, false);
  assert.match(page.text('alert'), /HTTP 401 for \/inspect: no bearer token/);
  page.el('token').value = ' abc ';
  page.el('token-form').dispatch('submit');
  await page.settle();
  assert.equal(page.storage.get('tessera-scheduler-token'), 'abc');
  assert.equal(page.el('token').value, '', 'the field does not keep it');
  assert.equal(page.el('token-form').hidden, true);
  assert.equal(page.articles().length, 1);
  assert.equal(page.inspectHeaders[0].Authorization, undefined);
  assert.equal(page.inspectHeaders[1].Authorization, 'Bearer abc');
  assert.equal(page.inspectHeaders[1]['X-Tessera-Authorization'], 'Bearer abc');
});

// Under kubectl tessera ui the API server may refuse the page itself, with its own Status (a 403
// for POST /fit without create on pods/proxy): the page says so in its words and asks for no
// token, which the API server would not read.
test('the API server\'s own refusal names it and asks for no token', async () => {
  const forbidden = { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 403,
                      reason: 'Forbidden',
                      message: 'pods "s" is forbidden: User "u" cannot create resource ' +
                               '"pods/proxy" in API group "" in the namespace "tessera-system"' };
  const page = await openPage([inspectOf(1)], { fitAnswers: [{ status: 403, body: forbidden }] });
  page.el('fit-resources').value = 'nvidia.com/gpu: 1';
  page.el('fit-form').dispatch('submit');
  await page.settle();
  assert.equal(page.text('fit-answer'),
               'Cannot check: the API server answered HTTP 403 for /fit: pods "s" is forbidden: ' +
               'User "u" cannot create resource "pods/proxy" in API group "" in the namespace ' +
               '"tessera-system".');
  assert.equal(page.el('token-form').hidden, true);

  const refused = await openPage([{ status: 403, body: { ...forbidden,
                                                        message: 'cannot get pods/proxy' } }]);
  assert.match(refused.text('alert'),
               /the API server answered HTTP 403 for \/inspect: cannot get pods\/proxy/);
  assert.equal(refused.el('token-form').hidden, true);
});
