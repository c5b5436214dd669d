// The page in a real browser: headless Chromium, driven through the DevTools protocol, opens
// /ui/ of a real `tessera scheduler` that watches the tessera-fake-apiserver program (cluster.mjs)
// and checks what a user sees: the map's GPUs and shares (device plugin and DRA) with their bars
// laid out, a pending pod's reasons, a pod's page, the "would it fit" form's answer (the same as
// the scheduler's /fit), labels and keyboard focus. It saves screenshots and prints the page's
// load time and data size.
//
//   node --experimental-websocket browser_test.mjs BIN_DIR OUT_DIR [--nodes N]
//
// Without --nodes: the small cluster, checks and screenshots (OUT_DIR/*.png; with
// TESSERA_UI_DOCS_IMAGES=DIR they are also copied there). With --nodes N: N nodes of bench's
// shape (8 x NVIDIA H200 each, as bench/cluster_scale.cc makes them) with a pod on every GPU,
// and the load time. Exit 0 passed, 1 failed, 77 skipped (no Chromium, or a node without
// WebSocket: CTest's SKIP_RETURN_CODE).
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { Browser, findChromium } from './cdp.mjs';
import { nodeObject, podObject, TestCluster } from './cluster.mjs';

const SKIP = 77;
const [binDir, outDir, ...rest] = process.argv.slice(2);
const nodesArg = rest[0] === '--nodes' ? Number(rest[1]) : 0;

function check(ok, what) {
  if (!ok) throw new Error(what);
}

// The map as the browser shows it: per node article, its GPUs with their lines, shares and the
// laid-out widths of the memory bar's segments.
const READ_MAP = `[...document.querySelectorAll('#nodes article')].map((a) => ({
  node: a.querySelector('h3').textContent,
  gpus: [...a.querySelectorAll('li.gpu')].map((li) => ({
    head: li.querySelector('.gpu-head').textContent,
    lines: [...li.querySelectorAll('.gpu-line')].map((p) => p.textContent),
    shares: [...li.querySelectorAll('.shares li')].map((s) => s.textContent),
    bar: li.querySelector('.bar-memory').getBoundingClientRect().width - 2,
    segs: [...li.querySelectorAll('.bar-memory .seg')].map((s) => ({
      cls: s.className, width: s.getBoundingClientRect().width })),
  })),
}))`;

// Opens the page and measures: from navigation to the map drawn (the first node article, after
// the first read of /inspect), in the page's own clock; and /inspect's size on the wire.
async function openAndTime(page, url) {
  await page.navigate(url);
  const drawnAt = await page.waitFor(
      `document.querySelector('#nodes article') && !document.getElementById('status')
         .textContent.startsWith('Loading') && performance.now()`, { everyMs: 5 });
  return page.evaluate(`(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const inspect = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/inspect'));
    const files = performance.getEntriesByType('resource').filter((e) => e.name.includes('/ui/'));
    return { drawnMs: ${drawnAt}, domContentLoadedMs: nav.domContentLoadedEventEnd,
             loadMs: nav.loadEventEnd, inspectMs: inspect.responseEnd - inspect.startTime,
             inspectWire: inspect.transferSize, inspectBody: inspect.decodedBodySize,
             filesWire: files.reduce((n, e) => n + e.transferSize, nav.transferSize),
             articles: document.querySelectorAll('#nodes article').length };
  })()`);
}

function printTiming(label, t) {
  console.log(`timing ${label}: map drawn ${t.drawnMs.toFixed(0)} ms after navigation ` +
              `(DOMContentLoaded ${t.domContentLoadedMs.toFixed(0)} ms, load ${t.loadMs.toFixed(0)} ms); ` +
              `/inspect ${(t.inspectBody / 1024).toFixed(1)} KiB, ${(t.inspectWire / 1024).toFixed(1)} KiB ` +
              `on the wire, read in ${t.inspectMs.toFixed(0)} ms; the page's files ` +
              `${(t.filesWire / 1024).toFixed(1)} KiB on the wire; ${t.articles} node articles drawn`);
}

async function smallCluster(cluster) {
  await cluster.namespace('ml');
  await cluster.namespace('team-a');
  const a = [0, 1].map((i) => ({ uuid: `GPU-a${i}`, model: 'SimGPU-24G', memoryMiB: 24576 }));
  const b = [0, 1].map((i) => ({ uuid: `GPU-b${i}`, model: 'NVIDIA H200', memoryMiB: 144384 }));
  await cluster.create('/api/v1/nodes', nodeObject('gpu-a', a));
  await cluster.create('/api/v1/nodes', nodeObject('gpu-b', b));
  await cluster.inspectWhen((d) => d.nodes.filter((n) => (n.gpus ?? []).length > 0).length === 2,
                            'both GPU nodes');
  const pods = [
    podObject('default', 'web', { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '4096',
                                  'nvidia.com/gpucores': '30' }),
    podObject('ml', 'trainer', { 'tencent.com/vcuda-core': '50', 'tencent.com/vcuda-memory': '16' }),
    podObject('team-a', 'notebook', { 'aliyun.com/gpu-mem': '8' }),
    podObject('default', 'big', { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '200000' }),
  ];
  const placed = {};
  for (const p of pods) {
    await cluster.create(`/api/v1/namespaces/${p.metadata.namespace}/pods`, p);
    placed[`${p.metadata.namespace}/${p.metadata.name}`] =
        await cluster.schedule(p, ['gpu-a', 'gpu-b']);
  }
  check(placed['default/big'] === null, 'default/big must not fit anywhere');
  // A DRA claim on gpu-b's GPU 1 for a pod of team-a, as kube-scheduler's allocator writes it.
  await cluster.create('/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims', {
    apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim',
    metadata: { name: 'shared', namespace: 'team-a' },
    spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.tessera.io' } }] } },
    status: { allocation: { devices: { results: [
                { request: 'gpu', driver: 'gpu.tessera.io', pool: 'gpu-b', device: 'gpu-1',
                  consumedCapacity: { memory: '4Gi', cores: '20' } }] } },
              reservedFor: [{ resource: 'pods', name: 'reader', uid: 'uid-reader' }] } });
  const inspect = await cluster.inspectWhen(
      (d) => d.allocations.length === 3 && (d.draShares ?? []).length === 1 &&
             d.pending.some((p) => p.pod === 'default/big' && p.filter),
      'the three placed pods, the claim and the pending pod\'s filter');
  console.log(`ok   a real scheduler placed ${JSON.stringify(placed)} and holds a DRA claim`);
  return inspect;
}

// The GPU (node, index) each pod's decision names, from /inspect and the inventories.
function placementsOf(inspect) {
  const where = new Map();
  for (const n of inspect.nodes) for (const g of n.gpus ?? []) where.set(g.uuid, [n.name, g.index]);
  const out = [];
  for (const a of inspect.allocations) {
    const uuids = new Set(a.allocation.containers.flatMap((c) => c.devices.map((d) => d.uuid)));
    for (const u of uuids) out.push({ pod: a.pod, node: where.get(u)[0], index: where.get(u)[1] });
  }
  return out;
}

async function checkSmallCluster(page, cluster, inspect, url) {
  const timing = await openAndTime(page, url);
  printTiming('small cluster (2 GPU nodes, 4 GPUs, 3 pods, 1 claim, 1 pending)', timing);
  check(page.errors.length === 0, `the page logged errors: ${page.errors.join('; ')}`);
  await page.screenshot().then((png) => save('ui-map.png', png));
  // What `hidden` hides is not drawn: the token form (the scheduler is open), the claim fields.
  const shown = await page.evaluate(`['token-form', 'fit-claim', 'fit-dialect', 'pod-view']
      .map((id) => getComputedStyle(document.getElementById(id)).display !== 'none')`);
  check(JSON.stringify(shown) === '[false,false,true,false]', `drawn: ${shown}`);

  const map = await page.evaluate(READ_MAP);
  check(JSON.stringify(map.map((n) => n.node)) === '["gpu-a","gpu-b"]',
        `nodes on the map: ${map.map((n) => n.node)}`);
  const heads = map.flatMap((n) => n.gpus.map((g) => `${n.node} ${g.head}`));
  check(JSON.stringify(heads) === JSON.stringify([
    'gpu-a GPU 0SimGPU-24G', 'gpu-a GPU 1SimGPU-24G', 'gpu-b GPU 0NVIDIA H200',
    'gpu-b GPU 1NVIDIA H200']), `GPUs on the map: ${JSON.stringify(heads)}`);
  for (const { pod, node, index } of placementsOf(inspect)) {
    const gpu = map.find((n) => n.node === node).gpus[index];
    check(gpu.shares.some((s) => s.startsWith(`${pod} (main): `)),
          `${pod} is not listed on ${node} GPU ${index}: ${JSON.stringify(gpu.shares)}`);
  }
  const b1 = map.find((n) => n.node === 'gpu-b').gpus[1];
  check(b1.shares.includes('claim team-a/shared (DRA, pods team-a/reader): 4 GiB, 20% cores'),
        `the DRA share on gpu-b GPU 1: ${JSON.stringify(b1.shares)}`);
  check(b1.lines[0].includes('4 GiB of it through DRA claims'), `gpu-b GPU 1: ${b1.lines[0]}`);
  const dra = b1.segs.find((s) => s.cls === 'seg seg-dra');
  const expected = (b1.bar * 4096) / 144384;
  check(dra && Math.abs(dra.width - expected) <= 1.5,
        `the DRA segment is ${dra?.width} px wide, ${expected.toFixed(1)} expected`);
  for (const n of map) {
    for (const g of n.gpus) {
      for (const s of g.segs) check(s.width > 0, `${n.node} ${g.head}: an empty segment`);
    }
  }
  console.log('ok   the map shows the right GPUs, the shares where the scheduler put them, and ' +
              'the DRA share with a bar of the right width');

  const why = await page.evaluate(`[...document.querySelectorAll('#pending tbody tr')]
      .find((tr) => tr.textContent.startsWith('default/big')).querySelector('td.why').textContent`);
  const big = inspect.pending.find((p) => p.pod === 'default/big');
  for (const r of big.filter.reasons) {
    check(why.includes(`${r.node}: ${r.reason}`), `the reason for ${r.node} is not shown: ${why}`);
  }
  check(/gpu-a: insufficient GPU memory/.test(why), `gpu-a's reason: ${why}`);
  console.log(`ok   the pending pod shows its reasons: ${big.filter.reasons.map((r) => r.node)}`);

  // Every control has a label; the keyboard starts at the skip link, and the form's button is
  // reachable with Tab.
  const unlabelled = await page.evaluate(`[...document.querySelectorAll('input, select, textarea')]
      .filter((e) => e.labels.length === 0).map((e) => e.id)`);
  check(unlabelled.length === 0, `controls without a label: ${unlabelled}`);
  await page.press('Tab');
  check(await page.evaluate('document.activeElement.className') === 'skip',
        'the first Tab does not reach the skip link');
  let reached = false;
  for (let i = 0; i < 60 && !reached; i++) {
    await page.press('Tab');
    reached = await page.evaluate(`document.activeElement.id === 'fit-submit'`);
  }
  check(reached, 'Tab never reaches the form\'s Check button');
  console.log('ok   every control has a label; Tab goes from the skip link to the form');

  await screenshotOf(page, 'pending-heading', 'fit-heading', 'ui-pending.png');

  // The form, as a user fills it: the answer is the scheduler's own.
  const request = { containers: [{ name: 'main', resources: { 'nvidia.com/gpu': '1',
                                                              'nvidia.com/gpumem': '30000' } }] };
  const direct = await cluster.fit(request);
  await page.evaluate(`(() => {
    document.getElementById('fit-resources').value = 'nvidia.com/gpu: 1\\nnvidia.com/gpumem: 30000';
    document.getElementById('fit-submit').focus();
  })()`);
  await page.press('Enter');
  const answer = await page.waitFor(`(() => { const t = document.getElementById('fit-answer')
      .textContent; return /^(Fits now|Does not fit)/.test(t) && t; })()`);
  check(direct.fits === true && answer.startsWith(`Fits now on ${direct.node}`),
        `the form says "${answer}", /fit says ${JSON.stringify(direct)}`);
  for (const r of direct.nodes) {
    check(answer.includes(`${r.node}: ${r.reason}`), `the form leaves out ${r.node}: ${answer}`);
  }
  console.log(`ok   the form's answer is the scheduler's: ${answer.slice(0, 100)}...`);
  await screenshotOf(page, 'fit-heading', null, 'ui-fit.png');

  const claim = await page.evaluate(`(async () => {
    document.getElementById('fit-kind-claim').click();
    document.getElementById('fit-memory').value = '200Gi';
    document.getElementById('fit-submit').click();
    return true;
  })()`);
  check(claim, 'the claim form');
  const claimAnswer = await page.waitFor(`(() => { const t = document.getElementById('fit-answer')
      .textContent; return t.startsWith('Does not fit') && t; })()`);
  const directClaim = await cluster.fit({ claim: { count: 1, memory: '200Gi' } });
  check(directClaim.fits === false, `a 200Gi claim fits? ${JSON.stringify(directClaim)}`);
  for (const r of directClaim.nodes) {
    check(claimAnswer.includes(`${r.node}: ${r.reason}`), `claim answer: ${claimAnswer}`);
  }
  console.log('ok   a DRA claim that fits nowhere is answered with each node\'s reason');

  await page.evaluate(`location.hash = '#pod=' + encodeURIComponent('default/web')`);
  const pod = await page.waitFor(`!document.getElementById('pod-view').hidden &&
      document.getElementById('pod-body').textContent`);
  const web = placementsOf(inspect).find((p) => p.pod === 'default/web');
  check(pod.startsWith(`Placed on node ${web.node}.`), `the pod's page: ${pod}`);
  check(pod.includes(`GPU ${web.index} (`) && pod.includes('4 GiB, 30% cores'), `devices: ${pod}`);
  check(pod.includes('Usage') && pod.includes('Not shown'), 'the page says what it cannot show');
  check(await page.evaluate(`document.activeElement.id`) === 'pod-heading', 'focus on the pod');
  await screenshotOf(page, 'pod-back', null, 'ui-pod.png', 0);
  console.log('ok   the pod\'s page shows its decision and limits');
  check(page.errors.length === 0, `the page logged errors: ${page.errors.join('; ')}`);
}

// The page from the element `fromId` (less `margin` pixels) to `toId` (or the end), at most 900
// pixels high.
async function screenshotOf(page, fromId, toId, name, margin = 8) {
  const box = await page.evaluate(`(() => {
    const top = document.getElementById('${fromId}').getBoundingClientRect().top + scrollY -
                ${margin};
    const end = ${toId ? `document.getElementById('${toId}').getBoundingClientRect().top + scrollY`
                       : `document.body.scrollHeight`};
    return { x: 0, y: Math.max(0, top), width: document.documentElement.clientWidth,
             height: Math.min(900, end - top) };
  })()`);
  save(name, await page.screenshot(box));
}

function save(name, png) {
  writeFileSync(join(outDir, name), png);
  console.log(`saved ${join(outDir, name)} (${(png.length / 1024).toFixed(0)} KiB)`);
  const docs = process.env.TESSERA_UI_DOCS_IMAGES;
  if (docs) copyFileSync(join(outDir, name), join(docs, name));
}

// N nodes as bench/cluster_scale.cc makes them (bench-n-<i>, 8 x NVIDIA H200 of 144384 MiB,
// NUMA g/4) and one pod placed on each GPU, written bound with its decision (as a scheduler
// restarting finds them): the scheduler rebuilds its state from them.
async function largeCluster(cluster, n) {
  const started = Date.now();
  const nodes = [];
  const pods = [];
  for (let i = 0; i < n; i++) {
    const name = `bench-n-${i}`;
    const gpus = Array.from({ length: 8 }, (_, g) => ({
      uuid: `GPU-bench-${i}-${g}`, model: 'NVIDIA H200', memoryMiB: 144384, sms: 132,
      numa: Math.floor(g / 4) }));
    nodes.push({ path: '/api/v1/nodes', object: nodeObject(name, gpus) });
    for (let g = 0; g < 8; g++) {
      const pod = podObject('default', `p-${i}-${g}`, { 'nvidia.com/gpu': '1',
                                                        'nvidia.com/gpumem': '16384' });
      pod.spec.nodeName = name;
      pod.metadata.annotations = { 'tessera.io/allocation': JSON.stringify({
        version: 1, node: name, containers: [{ name: 'main', mode: 'hard', slot: true,
          devices: [{ uuid: `GPU-bench-${i}-${g}`, memoryMiB: 16384, cores: 0 }] }] }) };
      pod.status = { phase: 'Running' };
      pods.push({ path: '/api/v1/namespaces/default/pods', object: pod });
    }
  }
  await cluster.createAll(nodes);
  await cluster.createAll(pods);
  const inspect = await cluster.inspectWhen(
      (d) => d.nodes.length === n && d.allocations.length === 8 * n, `${n} nodes and their pods`,
      300000);
  console.log(`ok   ${n} nodes, ${8 * n} GPUs and ${8 * n} pods in the scheduler's state ` +
              `(${((Date.now() - started) / 1000).toFixed(0)} s to create)`);
  return inspect;
}

async function main() {
  if (typeof WebSocket === 'undefined') {
    console.log(`SKIP node ${process.version} has no WebSocket for the DevTools protocol (node ` +
                '20.10 and later with --experimental-websocket, 22 and later without)');
    return SKIP;
  }
  const chromium = findChromium();
  if (!chromium) {
    console.log('SKIP no Chromium: install Debian\'s chromium package (scripts/setup does), or ' +
                'set TESSERA_CHROMIUM');
    return SKIP;
  }
  mkdirSync(outDir, { recursive: true });
  const cluster = await TestCluster.start(binDir);
  let browser;
  try {
    const inspect = nodesArg > 0 ? await largeCluster(cluster, nodesArg) : await smallCluster(cluster);
    browser = await Browser.launch(chromium);
    const page = await browser.newPage({ width: 1280, height: 900 });
    const url = `${cluster.scheduler}/ui/`;
    if (nodesArg > 0) {
      const timing = await openAndTime(page, url);
      printTiming(`${nodesArg} nodes (${8 * nodesArg} GPUs, ${inspect.allocations.length} pods)`,
                  timing);
      check(timing.articles === 50, `${timing.articles} node articles drawn, 50 expected`);
      const summary = await page.evaluate(`document.getElementById('map-summary').textContent`);
      check(summary === `Nodes 1 to 50 of ${nodesArg.toLocaleString('en')}.`, summary);
      // A second read, warm: what a reload costs.
      const again = await openAndTime(page, url);
      printTiming(`${nodesArg} nodes, reloaded`, again);
      check(page.errors.length === 0, `the page logged errors: ${page.errors.join('; ')}`);
    } else {
      await checkSmallCluster(page, cluster, inspect, url);
    }
    return 0;
  } finally {
    if (browser) await browser.close();
    cluster.stop();
  }
}

main().then((code) => process.exit(code), (e) => {
  console.log(`FAIL ${e.message}`);
  process.exit(1);
});
