// The page's data model: pure functions from the scheduler's GET /inspect JSON
// (src/scheduler/inspect.h) to what the page shows, and the filtering, sorting, paging and
// formatting it applies. No DOM, no network: model_test.mjs runs them under node.

// What a pod holds on each GPU its decision names: per GPU, the larger of its init containers'
// peak and the sum of its app containers, for memory and cores alike (the charge rule of
// src/annotations/charges.h, which the scheduler's usedMiB and usedCores add up).
export function chargesOf(allocation) {
  const byUuid = new Map();
  for (const c of allocation.containers ?? []) {
    for (const d of c.devices ?? []) {
      let acc = byUuid.get(d.uuid);
      if (!acc) {
        acc = { app: { memoryMiB: 0, cores: 0 }, init: { memoryMiB: 0, cores: 0 },
                exclusive: false, containers: [] };
        byUuid.set(d.uuid, acc);
      }
      const part = c.init ? acc.init : acc.app;
      if (c.init) {
        part.memoryMiB = Math.max(part.memoryMiB, d.memoryMiB ?? 0);
        part.cores = Math.max(part.cores, d.cores ?? 0);
      } else {
        part.memoryMiB += d.memoryMiB ?? 0;
        part.cores = Math.min(100, part.cores + (d.cores ?? 0));
      }
      acc.exclusive = acc.exclusive || d.exclusive === true;
      if (!acc.containers.includes(c.name)) acc.containers.push(c.name);
    }
  }
  const out = [];
  for (const [uuid, a] of byUuid) {
    out.push({ uuid, memoryMiB: Math.max(a.app.memoryMiB, a.init.memoryMiB),
               cores: Math.max(a.app.cores, a.init.cores), exclusive: a.exclusive,
               containers: a.containers });
  }
  return out;
}

function splitPod(key) {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key }
                   : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

function gpuView(g, unknown) {
  const memoryMiB = g.memoryMiB ?? 0;
  const scaling = g.memoryScaling ?? 1;  // schedulers before issue 33 give none: 1
  return {
    uuid: g.uuid, index: unknown ? null : g.index, model: g.model ?? '', numa: g.numa,
    healthy: g.healthy !== false, memoryMiB, memoryScaling: scaling,
    virtualMemoryMiB: g.virtualMemoryMiB ?? memoryMiB, usedMiB: g.usedMiB ?? 0,
    usedCores: g.usedCores ?? 0, slots: g.slots ?? 0, usedSlots: g.usedSlots ?? 0,
    podCount: g.pods ?? 0, exclusive: g.exclusive === true, unknown, shares: [],
    // Shares placed through ResourceClaims, which /inspect's usedMiB and usedCores leave out.
    draMiB: 0, draCores: 0, allocatedMiB: g.usedMiB ?? 0, allocatedCores: g.usedCores ?? 0,
  };
}

// A DRA share (one allocation result of a claim, /inspect's draShares) on its GPU: found by
// UUID, else by node and index. False when the GPU is not on the map.
function placeDraShare(d, byUuid, byNodeIndex) {
  const gpu = byUuid.get(d.gpuUuid) ?? byNodeIndex.get(`${d.node}\u0000${d.gpuIndex}`);
  if (!gpu) return false;
  const { namespace, name } = splitPod(d.claim ?? '');
  const memoryMiB = d.memoryMiB ?? 0;
  const cores = d.cores ?? 0;
  gpu.shares.push({ pod: d.claim, namespace, name, reserved: false, dra: true, uuid: gpu.uuid,
                    device: d.device ?? '', memoryMiB, cores, exclusive: false,
                    wholeMemory: d.wholeMemory === true, containers: [],
                    pods: d.pods ?? [] });
  gpu.draMiB += memoryMiB;
  gpu.draCores = Math.min(100, gpu.draCores + cores);
  gpu.allocatedMiB = gpu.usedMiB + gpu.draMiB;
  gpu.allocatedCores = Math.min(100, gpu.usedCores + gpu.draCores);
  return true;
}

// The scheduler's last filter of a pending pod (/inspect's pending[].filter), or null.
function filterView(f) {
  if (!f || typeof f !== 'object') return null;
  return { time: f.time ?? '', nodesChecked: f.nodesChecked ?? 0, fits: f.fits ?? [],
           fitsLeftOut: f.fitsLeftOut ?? 0, reasonsLeftOut: f.reasonsLeftOut ?? 0,
           reasons: (f.reasons ?? []).map((r) => ({ node: r.node ?? '', reason: r.reason ?? '',
                                                    unresolvable: r.unresolvable === true })) };
}

// The cluster as the page shows it: nodes (sorted by name) with their GPUs, and on each GPU the
// shares of the pods that hold it; the pending pods; the models and namespaces for the filters.
// Throws a TypeError naming what is missing when `inspect` is not /inspect's shape.
export function buildCluster(inspect) {
  if (!inspect || !Array.isArray(inspect.nodes)) {
    throw new TypeError('not the scheduler\'s /inspect answer: "nodes" is not a list');
  }
  const byUuid = new Map();
  const byNodeIndex = new Map();
  const nodes = inspect.nodes.map((n) => {
    const gpus = (n.gpus ?? []).map((g) => gpuView(g, false));
    for (const g of n.unknownGpus ?? []) gpus.push(gpuView(g, true));
    for (const g of gpus) {
      byUuid.set(g.uuid, g);
      if (!g.unknown) byNodeIndex.set(`${n.name}\u0000${g.index}`, g);
    }
    return { name: n.name, ready: n.ready !== false, serving: n.serving !== false,
             inventoryError: n.inventoryError ?? '', gpus };
  });
  nodes.sort((a, b) => compareText(a.name, b.name));
  const namespaces = new Set();
  const allocations = new Map();  // pod -> its /inspect allocation entry, for the pod's page
  for (const a of inspect.allocations ?? []) {
    const { namespace, name } = splitPod(a.pod);
    namespaces.add(namespace);
    allocations.set(a.pod, a);
    for (const c of chargesOf(a.allocation ?? {})) {
      const gpu = byUuid.get(c.uuid);
      if (!gpu) continue;  // a GPU no node lists: /inspect puts it under unknownGpus
      gpu.shares.push({ pod: a.pod, namespace, name, reserved: a.reserved === true, ...c });
    }
  }
  const warnings = [...(inspect.warnings ?? [])];
  const draShares = inspect.draShares ?? [];
  for (const d of draShares) {
    namespaces.add(splitPod(d.claim ?? '').namespace);
    if (!placeDraShare(d, byUuid, byNodeIndex)) {
      warnings.push(`claim ${d.claim}: device ${d.device} on node ${d.node} is not a GPU of ` +
                    'the map');
    }
  }
  for (const g of byUuid.values()) g.shares.sort((a, b) => compareText(a.pod, b.pod));
  const pending = (inspect.pending ?? []).map((p) => {
    const { namespace, name } = splitPod(p.pod);
    namespaces.add(namespace);
    return { pod: p.pod, namespace, name, containers: p.containers ?? [],
             filter: filterView(p.filter) };
  });
  pending.sort((a, b) => compareText(a.pod, b.pod));
  const models = new Set();
  for (const g of byUuid.values()) if (g.model) models.add(g.model);
  return { nodes, pending, models: [...models].sort(compareText),
           namespaces: [...namespaces].sort(compareText), allocations, draShares, warnings,
           gpus: byUuid };
}

function compareText(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

function contains(text, needle) {
  return text.toLowerCase().includes(needle.toLowerCase());
}

// filters: {node, model, namespace, pod}; empty strings match everything. node and pod are
// case-insensitive substrings (pod of the name or namespace/name), model and namespace exact.
// A DRA share matches a pod filter by its claim or any pod that holds the claim.
function shareMatches(share, f) {
  return (!f.namespace || share.namespace === f.namespace) &&
         (!f.pod || contains(share.pod, f.pod) || (share.pods ?? []).some((p) => contains(p, f.pod)));
}

// The nodes that pass `f`, each with only its GPUs that pass: a GPU passes when its model
// matches and, with a namespace or pod filter, it holds a matching share (only those shares are
// kept). Without GPU-level filters a node without GPUs (an inventory error) is kept.
export function filterNodes(nodes, f) {
  const gpuLevel = Boolean(f.model || f.namespace || f.pod);
  const byPod = Boolean(f.namespace || f.pod);
  const out = [];
  for (const n of nodes) {
    if (f.node && !contains(n.name, f.node)) continue;
    if (!gpuLevel) {
      out.push(n);
      continue;
    }
    const gpus = [];
    for (const g of n.gpus) {
      if (f.model && g.model !== f.model) continue;
      if (!byPod) {
        gpus.push(g);
        continue;
      }
      const shares = g.shares.filter((s) => shareMatches(s, f));
      if (shares.length > 0) gpus.push({ ...g, shares });
    }
    if (gpus.length > 0) out.push({ ...n, gpus });
  }
  return out;
}

export function filterPending(pending, f) {
  return pending.filter((p) => shareMatches(p, f));
}

function nodeMemory(n) {
  let total = 0;
  let used = 0;
  for (const g of n.gpus) {
    total += g.virtualMemoryMiB;
    used += g.allocatedMiB;
  }
  return { total, used, free: Math.max(0, total - used) };
}

// A sorted copy: "name", "free" (most free virtual memory first) or "used" (most allocated
// first); ties by name.
export function sortNodes(nodes, by) {
  const keyed = nodes.map((n) => ({ n, m: nodeMemory(n) }));
  keyed.sort((a, b) => {
    let d = 0;
    if (by === 'free') d = b.m.free - a.m.free;
    else if (by === 'used') d = b.m.used - a.m.used;
    return d !== 0 ? d : compareText(a.n.name, b.n.name);
  });
  return keyed.map((k) => k.n);
}

// Page `page` (from 0, clamped into range) of `size` items: {items, page, pages, first, last}
// with first/last counted from 1 (0 and 0 when there is nothing).
export function pageOf(items, page, size) {
  const pages = Math.max(1, Math.ceil(items.length / size));
  const p = Math.min(Math.max(0, Math.trunc(page) || 0), pages - 1);
  const start = p * size;
  const slice = items.slice(start, start + size);
  return { items: slice, page: p, pages, first: slice.length ? start + 1 : 0,
           last: start + slice.length };
}

// Per GPU model, over `nodes`: GPUs, physical and virtual memory, allocated memory and cores
// (device-plugin and DRA shares together), and the shares; sorted by model.
export function groupByModel(nodes) {
  const groups = new Map();
  for (const n of nodes) {
    for (const g of n.gpus) {
      const key = g.model || '(unknown model)';
      let m = groups.get(key);
      if (!m) {
        m = { model: key, gpus: 0, memoryMiB: 0, virtualMemoryMiB: 0, usedMiB: 0, cores: 0,
              usedCores: 0, shares: 0 };
        groups.set(key, m);
      }
      m.gpus += 1;
      m.memoryMiB += g.memoryMiB;
      m.virtualMemoryMiB += g.virtualMemoryMiB;
      m.usedMiB += g.allocatedMiB;
      m.cores += 100;
      m.usedCores += g.allocatedCores;
      m.shares += g.shares.length;
    }
  }
  return [...groups.values()].sort((a, b) => compareText(a.model, b.model));
}

// Memory in binary units, as kubectl tessera inspect's GiB view: MiB below 1 GiB, GiB below
// 1 TiB, else TiB; whole numbers without a fraction, others with one decimal.
export function formatMiB(mib) {
  if (!Number.isFinite(mib) || mib < 0) return '?';
  const units = [['TiB', 1024 * 1024], ['GiB', 1024]];
  for (const [unit, size] of units) {
    if (mib >= size) return `${oneDecimal(mib / size)} ${unit}`;
  }
  return `${Math.round(mib)} MiB`;
}

function oneDecimal(x) {
  const r = Math.round(x * 10) / 10;
  return Number.isInteger(r) ? String(r) : r.toFixed(1);
}

// Whole percent of part in whole; 0 when whole is 0.
export function percent(part, whole) {
  return whole > 0 ? Math.round((part * 100) / whole) : 0;
}

// Digits grouped by thousands, the same in every locale (the page states counts, not money).
export function formatCount(n) {
  return String(Math.trunc(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

// One share in words: "default/a (main, sidecar): 4 GiB, 30% cores"; a DRA share:
// "claim team-a/shared (DRA, pods team-a/r1): 2 GiB, no compute limit".
export function describeShare(s) {
  let compute = s.cores > 0 ? `${s.cores}% cores` : 'no compute limit';
  if (s.exclusive) compute = 'exclusive';
  if (s.dra) {
    const pods = s.pods.length > 0 ? `pods ${s.pods.join(', ')}` : 'no pod yet';
    const memory = s.wholeMemory ? `all memory (${formatMiB(s.memoryMiB)})` : formatMiB(s.memoryMiB);
    return `claim ${s.pod} (DRA, ${pods}): ${memory}, ${compute}`;
  }
  const reserved = s.reserved ? ', reserved (bind not yet seen)' : '';
  return `${s.pod} (${s.containers.join(', ')}): ${formatMiB(s.memoryMiB)}, ${compute}${reserved}`;
}

// The last filter of a pending pod in one line: "filtered at 05:01:02 UTC: 4 nodes checked,
// fits on none" / "..., fits on gpu-c"; null when the scheduler has not filtered it.
export function describeFilter(f) {
  if (!f) return null;
  const when = /T(\d\d:\d\d:\d\d)/.exec(f.time)?.[1];
  const fits = f.fits.length === 0 ? 'fits on none'
      : `fits on ${f.fits.join(', ')}` + (f.fitsLeftOut > 0 ? ` and ${f.fitsLeftOut} more` : '');
  return `${when ? `filtered at ${when} UTC` : 'filtered'}: ` +
         `${formatCount(f.nodesChecked)} node${f.nodesChecked === 1 ? '' : 's'} checked, ${fits}`;
}

// A refusing node's line: "gpu-a: insufficient GPU memory: ..." plus, when even an empty node
// would refuse it, "(not even when empty)".
export function describeReason(r) {
  return `${r.node}: ${r.reason}${r.unresolvable ? ' (not even when empty)' : ''}`;
}
