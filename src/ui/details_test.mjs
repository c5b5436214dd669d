// Tests of the pure functions behind the newer parts of the page: DRA shares and the filter's
// reasons in the model (assets/model.mjs), a pod's page (assets/pod.mjs) and the "would it fit"
// form (assets/fit.mjs). `node --test src/ui/details_test.mjs` (CTest: ui_details_js).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fitRequest, fitSummary, parseLines } from './assets/fit.mjs';
import {
  buildCluster, describeFilter, describeReason, describeShare, filterNodes, groupByModel,
  sortNodes,
} from './assets/model.mjs';
import { describeClaim, describeDevice, podDetails, podFromHash, podHash } from './assets/pod.mjs';

const gpu = (uuid, index, usedMiB, usedCores) => ({
  uuid, index, model: 'SimGPU-24G', numa: 0, healthy: true, memoryMiB: 24576, memoryScaling: 1,
  virtualMemoryMiB: 24576, usedMiB, usedCores, slots: 10, usedSlots: 1, pods: 1, exclusive: false,
});

// Two nodes; a device-plugin pod on a/0; DRA claims on a/0 (by UUID), b/1 (by index: the
// inventory had no UUID for it in the answer) and on a GPU no node lists.
const inspect = {
  nodes: [
    { name: 'a', ready: true, serving: true, gpus: [gpu('A0', 0, 4096, 30), gpu('A1', 1, 0, 0)] },
    { name: 'b', ready: true, serving: true, gpus: [gpu('B0', 0, 0, 0), gpu('B1', 1, 0, 0)] },
  ],
  allocations: [
    { pod: 'ml/dp', uid: 'u', node: 'a', reserved: false, allocation: { version: 1, node: 'a',
      containers: [{ name: 'main', mode: 'elastic', slot: true, devices: [
        { uuid: 'A0', memoryMiB: 4096, cores: 30, coresLimit: 60 }] }] } },
  ],
  pending: [
    { pod: 'ml/big', uid: 'p', containers: [{ name: 'main', init: false, request: '1 GPU x 30000 MiB' }],
      filter: { time: '2026-12-06T05:01:02Z', nodesChecked: 2, fits: [], reasonsLeftOut: 0,
                fitsLeftOut: 0, reasons: [
                  { node: 'a', reason: 'insufficient GPU memory', unresolvable: true },
                  { node: 'b', reason: 'insufficient GPU memory', unresolvable: true }] } },
    { pod: 'ml/new', uid: 'q', containers: [] },
  ],
  draShares: [
    { claim: 'team/c1', uid: '1', node: 'a', device: 'gpu-0', gpuIndex: 0, gpuUuid: 'A0',
      memoryMiB: 2048, wholeMemory: false, cores: 20, pods: ['team/r1', 'team/r2'], dra: true },
    { claim: 'team/c2', uid: '2', node: 'b', device: 'gpu-1', gpuIndex: 1, memoryMiB: 24576,
      wholeMemory: true, cores: 0, pods: [], dra: true },
    { claim: 'team/c3', uid: '3', node: 'gone', device: 'gpu-0', gpuIndex: 0, memoryMiB: 1,
      cores: 0, pods: [], dra: true },
  ],
  warnings: ['claim team/bad: device gpu-0: consumedCapacity memory: not a quantity'],
};

test('DRA shares sit on their GPU by UUID or by node and index, and add to its allocation', () => {
  const c = buildCluster(inspect);
  const a0 = c.nodes[0].gpus[0];
  assert.deepEqual(a0.shares.map((s) => [s.pod, s.dra === true]), [['ml/dp', false], ['team/c1', true]]);
  assert.deepEqual([a0.usedMiB, a0.draMiB, a0.allocatedMiB, a0.allocatedCores], [4096, 2048, 6144, 50]);
  const b1 = c.nodes[1].gpus[1];
  assert.deepEqual([b1.allocatedMiB, b1.shares[0].wholeMemory], [24576, true]);
  assert.deepEqual(c.warnings, [
    'claim team/bad: device gpu-0: consumedCapacity memory: not a quantity',
    'claim team/c3: device gpu-0 on node gone is not a GPU of the map']);
  assert.ok(c.namespaces.includes('team'));
  // Sums and sorting count both kinds.
  assert.deepEqual(groupByModel(c.nodes).map((m) => [m.usedMiB, m.usedCores]), [[30720, 50]]);
  assert.deepEqual(sortNodes(c.nodes, 'used').map((n) => n.name), ['b', 'a']);
  // A pod filter finds a claim by the pods that hold it.
  assert.deepEqual(filterNodes(c.nodes, { node: '', model: '', namespace: '', pod: 'r2' })
                       .map((n) => n.gpus.map((g) => g.uuid)), [['A0']]);
  assert.equal(describeShare(a0.shares[1]), 'claim team/c1 (DRA, pods team/r1, team/r2): 2 GiB, 20% cores');
  assert.equal(describeShare(b1.shares[0]), 'claim team/c2 (DRA, no pod yet): all memory (24 GiB), no compute limit');
});

test('the filter of a pending pod in words', () => {
  const c = buildCluster(inspect);
  const big = c.pending[0];
  assert.equal(describeFilter(big.filter), 'filtered at 05:01:02 UTC: 2 nodes checked, fits on none');
  assert.equal(describeReason(big.filter.reasons[0]), 'a: insufficient GPU memory (not even when empty)');
  assert.equal(describeFilter(c.pending[1].filter), null);
  assert.equal(describeFilter({ time: '', nodesChecked: 1, fits: ['a', 'b'], fitsLeftOut: 3,
                                reasons: [] }), 'filtered: 1 node checked, fits on a, b and 3 more');
  assert.equal(describeReason({ node: 'b', reason: 'unhealthy', unresolvable: false }), 'b: unhealthy');
});

test('a pod\'s page: placed, pending, holding claims, or unknown', () => {
  const c = buildCluster(inspect);
  const dp = podDetails(c, 'ml/dp');
  assert.equal(dp.state, 'placed');
  assert.equal(dp.node, 'a');
  assert.deepEqual(dp.containers[0], { name: 'main', init: false, mode: 'elastic', slot: true, devices: [
    { uuid: 'A0', index: 0, model: 'SimGPU-24G', memoryMiB: 4096, cores: 30, coresLimit: 60,
      exclusive: false }] });
  assert.equal(describeDevice(dp.containers[0].devices[0]),
               'GPU 0 (SimGPU-24G, A0): 4 GiB, 30% cores, bursts to 60%');
  assert.equal(describeDevice({ index: null, model: '', uuid: 'X', memoryMiB: 1024, cores: 0,
                                coresLimit: 0, exclusive: true }), 'GPU ? (X): 1 GiB, exclusive');
  assert.equal(podDetails(c, 'ml/big').state, 'pending');
  assert.equal(podDetails(c, 'ml/big').pending.filter.reasons.length, 2);
  const r1 = podDetails(c, 'team/r1');
  assert.equal(r1.state, 'dra');
  assert.equal(describeClaim(r1.claims[0]), 'claim team/c1: gpu-0 on a (GPU 0), 2 GiB, 20% cores');
  assert.equal(podDetails(c, 'nobody/x').state, 'unknown');
  assert.equal(podHash('ml/dp'), '#pod=ml%2Fdp');
  assert.equal(podFromHash('#pod=ml%2Fdp'), 'ml/dp');
  assert.equal(podFromHash('#pod=%E0'), '', 'a malformed fragment shows the map');
  assert.equal(podFromHash('#map-heading'), '');
  assert.equal(podFromHash(undefined), '');
});

test('the fit form: lines to a request, with errors that say what is allowed', () => {
  assert.deepEqual(parseLines('# comment\n nvidia.com/gpu: 1\n\ntencent.com/vcuda-core=30 ', 'R'),
                   { 'nvidia.com/gpu': '1', 'tencent.com/vcuda-core': '30' });
  assert.throws(() => parseLines('nvidia.com/gpu', 'Resource limits'),
                /^Error: Resource limits, line 1: "nvidia.com\/gpu" is not "name: value"/);
  assert.throws(() => parseLines('a: 1\na: 2', 'R'), /line 2: a is given twice/);
  assert.deepEqual(fitRequest({ kind: 'dialect', resources: 'aliyun.com/gpu-mem: 8',
                                annotations: 'nvidia.com/use-gputype: A100' }),
                   { containers: [{ name: 'main', resources: { 'aliyun.com/gpu-mem': '8' } }],
                     annotations: { 'nvidia.com/use-gputype': 'A100' } });
  assert.throws(() => fitRequest({ kind: 'dialect', resources: '  ' }),
                /give at least one, for example nvidia.com\/gpu: 1/);
  assert.deepEqual(fitRequest({ kind: 'claim', count: '2', memory: ' 8Gi ', cores: '30' }),
                   { claim: { count: 2, memory: '8Gi', cores: 30 } });
  assert.deepEqual(fitRequest({ kind: 'claim', count: '1', memory: '', cores: '' }),
                   { claim: { count: 1 } });
  assert.throws(() => fitRequest({ kind: 'claim', count: '0' }), /GPUs: "0" is not a whole number from 1 to 64/);
  assert.throws(() => fitRequest({ kind: 'claim', count: '1', cores: '1.5' }), /Compute/);
  assert.throws(() => fitRequest({ kind: 'x' }), /unknown request kind "x"/);
});

test('the answer of /fit in words', () => {
  const yes = fitSummary({ fits: true, kind: 'claim', node: 'a',
                           request: [{ name: 'main', init: false, request: '1 GPU x 8192 MiB' }],
                           gpus: [{ container: 'main', index: 1, uuid: 'A1', model: 'SimGPU-24G',
                                    memoryMiB: 8192, cores: 30 }],
                           fitting: ['a', 'b'], nodes: [], note: 'kube-scheduler chooses' });
  assert.equal(yes.headline, 'Fits now on a.');
  assert.deepEqual(yes.gpus, ['main: GPU 1 (SimGPU-24G, A1), 8192 MiB, 30% cores']);
  assert.deepEqual(yes.request, ['main: 1 GPU x 8192 MiB']);
  assert.equal(yes.note, 'kube-scheduler chooses');
  assert.deepEqual(fitSummary({ fits: true, node: 'a', gpus: [
    { container: 'main', uuid: 'GONE', memoryMiB: 1024, cores: 0, exclusive: true }] }).gpus,
                   ['main: GPU ? (GONE), 1024 MiB, exclusive']);
  const no = fitSummary({ fits: false, nodes: [{ node: 'a', reason: 'r', unresolvable: true }] });
  assert.equal(no.headline, 'Does not fit on any node now.');
  assert.deepEqual(no.refusals, [{ node: 'a', reason: 'r', unresolvable: true }]);
  assert.deepEqual([no.gpus, no.fitting], [[], []]);
});
