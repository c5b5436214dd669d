// The cluster behind the browser tests: the tessera-fake-apiserver program holding nodes, pods
// and ResourceClaims, and a real `tessera scheduler` watching it with the page turned on
// (scheduler.ui.enabled, scheduler.read-access=open, plain HTTP on loopback). Pods are placed the
// way kube-scheduler places them, through the scheduler's /filter and /bind; a pod that does not
// fit is filtered once, so that /inspect has its reasons. Not part of the page.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The test's environment without TESSERA_* variables: the scheduler reads those as its
// configuration (and refuses unknown ones), and the test's own settings are not for it.
function childEnv() {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TESSERA_')));
}

// Starts `argv` and resolves with the first match of `pattern` in its output.
function start(argv, pattern, what, timeoutMs = 30000) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
  let log = '';
  const matched = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start: ${log}`)), timeoutMs);
    const onData = (d) => {
      log += d;
      const m = pattern.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${what} exited with ${code}: ${log}`)));
  });
  return { child, matched, log: () => log };
}

async function call(method, url, body) {
  const res = await fetch(url, { method, headers: { 'Content-Type': 'application/json' },
                                 body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

// A node's inventory annotation as the node agent writes it (src/annotations/inventory.cc).
export function inventory(gpus) {
  return JSON.stringify({ version: 1, serving: true, gpus: gpus.map((g, index) => ({
    uuid: g.uuid, index, model: g.model, memoryMiB: g.memoryMiB, sms: g.sms ?? 0,
    numa: g.numa ?? 0, healthy: true, slots: 10, coresScaling: 1,
    memoryScaling: g.memoryScaling ?? 1 })) });
}

export function nodeObject(name, gpus) {
  const metadata = { name, labels: { 'kubernetes.io/hostname': name } };
  if (gpus) metadata.annotations = { 'tessera.io/gpus': inventory(gpus) };
  return { apiVersion: 'v1', kind: 'Node', metadata };
}

export function podObject(ns, name, limits, { init = null } = {}) {
  const spec = { schedulerName: 'tessera', containers: [
    { name: 'main', image: 'busybox', resources: { limits } }] };
  if (init) spec.initContainers = [{ name: 'init', image: 'busybox', resources: { limits: init } }];
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns }, spec };
}

export class TestCluster {
  // binDir: where tessera and tessera-fake-apiserver are.
  static async start(binDir) {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-ui-browser-'));
    const api = start([join(binDir, 'tessera-fake-apiserver'), '--listen', '127.0.0.1:0'],
                      /listening on (http:\/\/\S+)/, 'the fake API server');
    const c = new TestCluster(dir, [api.child]);
    try {
      c.api = (await api.matched)[1];
      writeFileSync(join(dir, 'kubeconfig'), [
        'apiVersion: v1', 'kind: Config', 'current-context: fake',
        `clusters: [{name: fake, cluster: {server: "${c.api}"}}]`,
        'contexts: [{name: fake, context: {cluster: fake, user: u}}]', 'users: [{name: u, user: {}}]',
        ''].join('\n'));
      const sched = start([join(binDir, 'tessera'), 'scheduler', '--kubeconfig', join(dir, 'kubeconfig'),
                           '--listen', '127.0.0.1:0', '--scheduler.ui.enabled=true',
                           '--scheduler.read-access=open'],
                          /tessera scheduler serving.* port=(\d+)/, 'the Tessera scheduler');
      c.children.push(sched.child);
      c.scheduler = `http://127.0.0.1:${(await sched.matched)[1]}`;
      c.schedulerLog = sched.log;
      for (let i = 0; ; i++) {
        const ready = await fetch(`${c.scheduler}/readyz`).then((r) => r.ok, () => false);
        if (ready) break;
        if (i > 200) throw new Error(`the scheduler never became ready: ${sched.log()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } catch (e) {
      c.stop();
      throw e;
    }
    return c;
  }

  constructor(dir, children) {
    this.dir = dir;
    this.children = children;
  }

  stop() {
    for (const child of this.children) child.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  create(path, object) {
    return call('POST', `${this.api}${path}`, object);
  }

  async namespace(name) {
    await this.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace',
                                              metadata: { name } });
  }

  // Creates `objects` (each {path, object}) `parallel` at a time.
  async createAll(objects, parallel = 16) {
    let next = 0;
    const worker = async () => {
      while (next < objects.length) {
        const { path, object } = objects[next++];
        await this.create(path, object);
      }
    };
    await Promise.all(Array.from({ length: parallel }, worker));
  }

  // Waits until the scheduler's /inspect satisfies `ok`; resolves with it.
  async inspectWhen(ok, what, timeoutMs = 60000) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const doc = await call('GET', `${this.scheduler}/inspect`);
      if (ok(doc)) return doc;
      if (Date.now() > until) throw new Error(`/inspect never had ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  // What kube-scheduler does for one pod: /filter over `nodes`, then /bind to the first that
  // fits. Resolves with the node, or null when none fits (the filter's reasons stay in /inspect).
  async schedule(pod, nodes) {
    const created = await call('GET',
        `${this.api}/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`);
    const filter = await call('POST', `${this.scheduler}/filter`, { Pod: created, NodeNames: nodes });
    const fits = filter.NodeNames ?? [];
    if (fits.length === 0) return null;
    const bound = await call('POST', `${this.scheduler}/bind`, {
      PodName: pod.metadata.name, PodNamespace: pod.metadata.namespace,
      PodUID: created.metadata.uid, Node: fits[0] });
    if (bound?.Error) throw new Error(`bind ${pod.metadata.name}: ${bound.Error}`);
    return fits[0];
  }

  fit(body) {
    return call('POST', `${this.scheduler}/fit`, body);
  }
}
