// Tests of the page's pure functions (assets/model.mjs) and of its colours' contrast
// (assets/style.css), under node's own runner: `node --test src/ui/model_test.mjs` (CTest:
// ui_model_js). No npm package.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import {
  buildCluster, chargesOf, describeShare, filterNodes, filterPending, formatCount, formatMiB,
  groupByModel, pageOf, percent, sortNodes,
} from './assets/model.mjs';

// An /inspect answer as src/scheduler/inspect.cc writes it: a scaled node, a plain one, a node
// without inventory; a pod with an init container, a reserved one, a GPU no inventory lists.
const inspect = {
  nodes: [
    { name: 'gpu-b', ready: true, serving: true, unknownGpus: [], gpus: [
      { uuid: 'B0', index: 0, model: 'NVIDIA H200', numa: 0, healthy: true, memoryMiB: 144384,
        memoryScaling: 1, virtualMemoryMiB: 144384, usedMiB: 144384, usedCores: 100, slots: 10,
        usedSlots: 0, pods: 1, exclusive: true },
    ] },
    { name: 'gpu-a', ready: true, serving: false, gpus: [
      { uuid: 'A0', index: 0, model: 'SimGPU-24G', numa: 0, healthy: true, memoryMiB: 24576,
        memoryScaling: 2, virtualMemoryMiB: 49152, usedMiB: 12288, usedCores: 50, slots: 10,
        usedSlots: 2, pods: 2, exclusive: false },
      { uuid: 'A1', index: 1, model: 'SimGPU-24G', numa: 0, healthy: false, memoryMiB: 24576,
        memoryScaling: 2, virtualMemoryMiB: 49152, usedMiB: 0, usedCores: 0, slots: 10,
        usedSlots: 0, pods: 0, exclusive: false },
    ], unknownGpus: [
      { uuid: 'GONE', index: 7, model: 'SimGPU-24G', memoryMiB: 0, usedMiB: 1024, pods: 1 },
    ] },
    { name: 'broken', ready: true, serving: true, gpus: [], unknownGpus: [],
      inventoryError: 'no tessera.io/gpus annotation' },
  ],
  allocations: [
    { pod: 'ml/trainer', uid: 'u1', node: 'gpu-b', reserved: false, allocation: {
      version: 1, node: 'gpu-b', containers: [
        { name: 'trainer', mode: 'hard', devices: [
          { uuid: 'B0', memoryMiB: 144384, cores: 100, exclusive: true }] }] } },
    // Init peak 8 GiB against an app sum of 4 + 4 GiB: the charge is 8 GiB; cores 30 + 20.
    { pod: 'default/web', uid: 'u2', node: 'gpu-a', reserved: true, allocation: {
      version: 1, node: 'gpu-a', containers: [
        { name: 'warmup', init: true, mode: 'hard', devices: [
          { uuid: 'A0', memoryMiB: 8192, cores: 10 }] },
        { name: 'main', mode: 'hard', slot: true, devices: [
          { uuid: 'A0', memoryMiB: 4096, cores: 30 }] },
        { name: 'side', mode: 'hard', slot: true, devices: [
          { uuid: 'A0', memoryMiB: 4096, cores: 20 }] }] } },
    { pod: 'team-x/share', uid: 'u3', node: 'gpu-a', reserved: false, allocation: {
      version: 1, node: 'gpu-a', containers: [
        { name: 'app', mode: 'elastic', devices: [
          { uuid: 'A0', memoryMiB: 4096, cores: 0 }, { uuid: 'GONE', memoryMiB: 1024, cores: 0 },
          { uuid: 'NOWHERE', memoryMiB: 1, cores: 0 }] }] } },
  ],
  pending: [
    { pod: 'team-x/big', uid: 'u4', containers: [
      { name: 'main', init: false, request: '1 GPU x 200000 MiB' }] },
    { pod: 'default/wait', uid: 'u5', containers: [
      { name: 'c', init: false, request: '2 GPUs x all memory, exclusive' }] },
  ],
};

test('chargesOf takes the larger of the init peak and the app sum per GPU', () => {
  const [a0] = chargesOf(inspect.allocations[1].allocation);
  assert.deepEqual(a0, { uuid: 'A0', memoryMiB: 8192, cores: 50, exclusive: false,
                         containers: ['warmup', 'main', 'side'] });
  const app = chargesOf({ containers: [
    { name: 'i', init: true, devices: [{ uuid: 'G', memoryMiB: 100, cores: 90 }] },
    { name: 'a', devices: [{ uuid: 'G', memoryMiB: 300, cores: 60 }] },
    { name: 'b', devices: [{ uuid: 'G', memoryMiB: 300, cores: 60 }] }] });
  assert.equal(app[0].memoryMiB, 600);
  assert.equal(app[0].cores, 100);  // capped as the scheduler caps it
});

test('buildCluster puts each share on its GPU, sorted, and lists models and namespaces', () => {
  const c = buildCluster(inspect);
  assert.deepEqual(c.nodes.map((n) => n.name), ['broken', 'gpu-a', 'gpu-b']);
  const a = c.nodes[1];
  assert.equal(a.serving, false);
  assert.deepEqual(a.gpus.map((g) => [g.index, g.unknown]), [[0, false], [1, false], [null, true]]);
  const a0 = a.gpus[0];
  assert.equal(a0.virtualMemoryMiB, 49152);
  assert.equal(a0.memoryScaling, 2);
  assert.deepEqual(a0.shares.map((s) => [s.pod, s.memoryMiB, s.cores, s.reserved]),
                   [['default/web', 8192, 50, true], ['team-x/share', 4096, 0, false]]);
  assert.equal(a0.shares.reduce((sum, s) => sum + s.memoryMiB, 0), a0.usedMiB);
  assert.deepEqual(a.gpus[2].shares.map((s) => s.pod), ['team-x/share']);
  assert.equal(a.gpus[1].healthy, false);
  assert.equal(c.nodes[0].inventoryError, 'no tessera.io/gpus annotation');
  assert.deepEqual(c.models, ['NVIDIA H200', 'SimGPU-24G']);
  assert.deepEqual(c.namespaces, ['default', 'ml', 'team-x']);
  assert.deepEqual(c.pending.map((p) => p.pod), ['default/wait', 'team-x/big']);
});

test('buildCluster reads a scheduler before virtual memory as scaling 1', () => {
  const old = { nodes: [{ name: 'n', gpus: [{ uuid: 'G', index: 0, model: 'T4', memoryMiB: 15360,
                                               usedMiB: 0, usedCores: 0, pods: 0 }] }] };
  const g = buildCluster(old).nodes[0].gpus[0];
  assert.equal(g.memoryScaling, 1);
  assert.equal(g.virtualMemoryMiB, 15360);
  assert.deepEqual(buildCluster(old).pending, []);
});

test('buildCluster refuses what is not an /inspect answer, saying what is missing', () => {
  assert.throws(() => buildCluster({ error: 'x' }), /"nodes" is not a list/);
  assert.throws(() => buildCluster(null), /"nodes" is not a list/);
});

test('filterNodes by node, model, namespace and pod', () => {
  const { nodes } = buildCluster(inspect);
  const none = { node: '', model: '', namespace: '', pod: '' };
  assert.equal(filterNodes(nodes, none).length, 3);
  assert.deepEqual(filterNodes(nodes, { ...none, node: 'GPU-' }).map((n) => n.name),
                   ['gpu-a', 'gpu-b']);
  // Model: only the GPUs of that model, and nodes without one are left out.
  const h200 = filterNodes(nodes, { ...none, model: 'NVIDIA H200' });
  assert.deepEqual(h200.map((n) => n.name), ['gpu-b']);
  // Namespace: the GPUs that hold one of its shares, with only those shares.
  const teamX = filterNodes(nodes, { ...none, namespace: 'team-x' });
  assert.deepEqual(teamX.map((n) => n.name), ['gpu-a']);
  assert.deepEqual(teamX[0].gpus.map((g) => g.uuid), ['A0', 'GONE']);
  assert.deepEqual(teamX[0].gpus[0].shares.map((s) => s.pod), ['team-x/share']);
  // Pod: a substring of namespace/name, any case; combined with the others.
  assert.deepEqual(filterNodes(nodes, { ...none, pod: 'TRAIN' }).map((n) => n.name), ['gpu-b']);
  assert.deepEqual(filterNodes(nodes, { ...none, pod: 'default/w' })[0].gpus[0].shares
                       .map((s) => s.pod), ['default/web']);
  assert.equal(filterNodes(nodes, { ...none, pod: 'trainer', model: 'SimGPU-24G' }).length, 0);
  assert.equal(filterNodes(nodes, { ...none, namespace: 'ml', node: 'gpu-a' }).length, 0);
  // The input is left as it was.
  assert.equal(nodes[1].gpus[0].shares.length, 2);
});

test('filterPending by namespace and pod', () => {
  const { pending } = buildCluster(inspect);
  assert.deepEqual(filterPending(pending, { namespace: 'team-x', pod: '' }).map((p) => p.pod),
                   ['team-x/big']);
  assert.deepEqual(filterPending(pending, { namespace: '', pod: 'WAIT' }).map((p) => p.pod),
                   ['default/wait']);
  assert.equal(filterPending(pending, { namespace: 'ml', pod: '' }).length, 0);
});

test('sortNodes by name, free and allocated memory', () => {
  const { nodes } = buildCluster(inspect);
  assert.deepEqual(sortNodes(nodes, 'name').map((n) => n.name), ['broken', 'gpu-a', 'gpu-b']);
  // gpu-a: 98304 virtual (+0 for the unknown GPU), 13312 used; gpu-b full; broken has none.
  assert.deepEqual(sortNodes(nodes, 'free').map((n) => n.name), ['gpu-a', 'broken', 'gpu-b']);
  assert.deepEqual(sortNodes(nodes, 'used').map((n) => n.name), ['gpu-b', 'gpu-a', 'broken']);
});

test('pageOf pages and clamps', () => {
  const items = Array.from({ length: 120 }, (_, i) => i);
  assert.deepEqual(pageOf(items, 0, 50).items.length, 50);
  const last = pageOf(items, 2, 50);
  assert.deepEqual([last.page, last.pages, last.first, last.last, last.items.length],
                   [2, 3, 101, 120, 20]);
  assert.equal(pageOf(items, 9, 50).page, 2);
  assert.equal(pageOf(items, -3, 50).page, 0);
  assert.equal(pageOf(items, NaN, 50).page, 0);
  const empty = pageOf([], 4, 50);
  assert.deepEqual([empty.page, empty.pages, empty.first, empty.last], [0, 1, 0, 0]);
});

test('groupByModel sums GPUs, memory, cores and shares per model', () => {
  const groups = groupByModel(buildCluster(inspect).nodes);
  assert.deepEqual(groups.map((g) => [g.model, g.gpus, g.memoryMiB, g.virtualMemoryMiB,
                                      g.usedMiB, g.cores, g.usedCores, g.shares]), [
    ['NVIDIA H200', 1, 144384, 144384, 144384, 100, 100, 1],
    ['SimGPU-24G', 3, 49152, 98304, 13312, 300, 50, 3],
  ]);
});

test('formatMiB, percent and formatCount', () => {
  assert.equal(formatMiB(0), '0 MiB');
  assert.equal(formatMiB(1023), '1023 MiB');
  assert.equal(formatMiB(1024), '1 GiB');
  assert.equal(formatMiB(24268), '23.7 GiB');
  assert.equal(formatMiB(144384), '141 GiB');
  assert.equal(formatMiB(1536 * 1024), '1.5 TiB');
  assert.equal(formatMiB(-1), '?');
  assert.equal(formatMiB(undefined), '?');
  assert.equal(percent(12288, 49152), 25);
  assert.equal(percent(1, 0), 0);
  assert.equal(formatCount(1000), '1,000');
  assert.equal(formatCount(999), '999');
  assert.equal(formatCount(1234567), '1,234,567');
});

test('describeShare says memory, compute and whether the bind is still reserved', () => {
  const a0 = buildCluster(inspect).nodes[1].gpus[0];
  assert.equal(describeShare(a0.shares[0]),
               'default/web (warmup, main, side): 8 GiB, 50% cores, reserved (bind not yet seen)');
  assert.equal(describeShare(a0.shares[1]), 'team-x/share (app): 4 GiB, no compute limit');
  const b0 = buildCluster(inspect).nodes[2].gpus[0];
  assert.equal(describeShare(b0.shares[0]), 'ml/trainer (trainer): 141 GiB, exclusive');
});

// A 1,000-node cluster of 8 GPUs each with 20,000 pods: building the view, filtering and paging
// stay well under the polling interval (a quadratic join of shares to GPUs would take seconds).
test('1,000 nodes: build, filter, sort and page within a second', () => {
  const nodes = [];
  const allocations = [];
  for (let n = 0; n < 1000; n++) {
    const gpus = [];
    for (let i = 0; i < 8; i++) {
      gpus.push({ uuid: `GPU-${n}-${i}`, index: i, model: n % 3 ? 'A100-80GB' : 'L4', numa: 0,
                  healthy: true, memoryMiB: 81920, memoryScaling: 1, virtualMemoryMiB: 81920,
                  usedMiB: 0, usedCores: 0, slots: 10, usedSlots: 0, pods: 0, exclusive: false });
    }
    nodes.push({ name: `node-${String(n).padStart(4, '0')}`, ready: true, serving: true, gpus,
                 unknownGpus: [] });
    for (let p = 0; p < 20; p++) {
      allocations.push({ pod: `ns-${p % 7}/pod-${n}-${p}`, uid: `u-${n}-${p}`, node: nodes[n].name,
                         reserved: false, allocation: { version: 1, node: nodes[n].name,
                         containers: [{ name: 'main', mode: 'hard', devices: [
                           { uuid: `GPU-${n}-${p % 8}`, memoryMiB: 4096, cores: 10 }] }] } });
    }
  }
  const text = JSON.stringify({ nodes, allocations, pending: [] });
  const start = performance.now();
  const c = buildCluster(JSON.parse(text));
  const shown = sortNodes(filterNodes(c.nodes, { node: '', model: 'A100-80GB', namespace: 'ns-3',
                                                 pod: '' }), 'free');
  const page = pageOf(shown, 3, 50);
  groupByModel(shown);
  const ms = performance.now() - start;
  assert.equal(c.nodes.length, 1000);
  assert.equal(page.items.length, 50);
  assert.ok(ms < 1000, `took ${ms.toFixed(0)} ms`);
  console.log(`1,000 nodes, 8,000 GPUs, 20,000 pods: /inspect ${(text.length / 1e6).toFixed(1)} MB, ` +
              `parse + build + filter + sort + page ${ms.toFixed(0)} ms`);
});

// WCAG 2.1 contrast of each colour pair of style.css that is drawn on another.
function luminance(hex) {
  const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
      .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}

function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

test('the colours of style.css meet WCAG 2.1 AA contrast', () => {
  const css = readFileSync(new URL('./assets/style.css', import.meta.url), 'utf8');
  const colours = Object.fromEntries(
      [...css.matchAll(/--([a-z0-9-]+):\s*(#[0-9a-f]{6});/g)].map((m) => [m[1], m[2]]));
  const pairs = [
    // text (4.5:1)
    ['text', 'bg', 4.5], ['text', 'panel', 4.5], ['text', 'track', 4.5], ['muted', 'bg', 4.5],
    ['muted', 'panel', 4.5], ['bad', 'bg', 4.5], ['bad', 'bad-bg', 4.5], ['bad', 'panel', 4.5],
    // bars, their edges, controls and the focus ring (3:1, WCAG 1.4.11)
    ['seg-0', 'track', 3], ['seg-1', 'track', 3], ['seg-0', 'bg', 3], ['seg-1', 'bg', 3],
    ['seg-dra', 'track', 3], ['seg-dra', 'bg', 3], ['ok', 'bg', 4.5], ['ok', 'panel', 4.5],
    // the physical-memory marker on the track; on a segment its --bg halo (seg-* on bg above)
    ['marker', 'track', 3], ['border', 'bg', 3], ['border', 'panel', 3],
    ['focus', 'bg', 3], ['focus', 'panel', 3],
  ];
  for (const [fg, bg, min] of pairs) {
    assert.ok(colours[fg] && colours[bg], `style.css defines --${fg} and --${bg}`);
    const ratio = contrast(colours[fg], colours[bg]);
    assert.ok(ratio >= min, `--${fg} on --${bg}: ${ratio.toFixed(2)}:1, needs ${min}:1`);
  }
});
