// The page's modules run against a stand-in DOM built from index.html's ids and options
// (fake_dom.mjs), with fetch and timers in the test's hands: the first read, the drawing of
// nodes, bars, models and pending pods, paging, filters, and when it polls (interval, hidden
// tab, pause, errors). A real browser is still to come (docs/ui.md, "Planned").
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
async function openPage(answers) {
  const doc = pageDocument();
  const timers = new Map();
  let nextTimer = 1;
  const fetched = [];
  globalThis.document = doc;
  globalThis.setTimeout = (fn, ms) => {
    timers.set(nextTimer, { fn, ms });
    return nextTimer++;
  };
  globalThis.clearTimeout = (id) => timers.delete(id);
  globalThis.fetch = async (url) => {
    fetched.push(url);
    const a = answers.length > 1 ? answers.shift() : answers[0];
    if (typeof a === 'number') return { ok: false, status: a, text: async () => '' };
    return { ok: true, status: 200, text: async () => JSON.stringify(a) };
  };
  await import(`./assets/app.mjs?page=${++loads}`);
  const page = {
    doc, timers, fetched,
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
  assert.deepEqual(pending, ['team-1/waitsinit (init)1 GPU x 1024 MiB',
                             'main1 GPU x 200000 MiB']);
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
