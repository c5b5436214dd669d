// A pod's page: what the scheduler knows of one pod, from buildCluster's answer (model.mjs): its
// decision (node, containers, devices with their memory and compute limits), or its request and
// the last filter's reasons while it waits, and the DRA claims it holds. Pure functions.
import { formatMiB } from './model.mjs';

// The pod named by the address's fragment ("#pod=team-a%2Fweb"), or "" for the map.
export function podFromHash(hash) {
  const m = /^#pod=(.+)$/.exec(hash ?? '');
  if (!m) return '';
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return '';
  }
}

export function podHash(pod) {
  return `#pod=${encodeURIComponent(pod)}`;
}

// {pod, state: 'placed' | 'pending' | 'dra' | 'unknown', node, reserved, containers, pending,
//  claims}: containers as the decision gives them, each device with its GPU's index and model.
export function podDetails(cluster, pod) {
  const out = { pod, state: 'unknown', node: '', reserved: false, containers: [], pending: null,
                claims: [] };
  const a = cluster.allocations.get(pod);
  if (a) {
    out.state = 'placed';
    out.node = a.node || a.allocation?.node || '';
    out.reserved = a.reserved === true;
    out.containers = (a.allocation?.containers ?? []).map((c) => ({
      name: c.name ?? '', init: c.init === true, mode: c.mode ?? 'hard', slot: c.slot === true,
      devices: (c.devices ?? []).map((d) => {
        const g = cluster.gpus.get(d.uuid);
        return { uuid: d.uuid ?? '', index: g && !g.unknown ? g.index : null,
                 model: g?.model ?? '', memoryMiB: d.memoryMiB ?? 0, cores: d.cores ?? 0,
                 coresLimit: d.coresLimit ?? 0, exclusive: d.exclusive === true };
      }),
    }));
  }
  const waiting = cluster.pending.find((p) => p.pod === pod);
  if (waiting) {
    out.state = 'pending';
    out.pending = waiting;
  }
  for (const d of cluster.draShares) {
    if (!(d.pods ?? []).includes(pod)) continue;
    out.claims.push({ claim: d.claim ?? '', node: d.node ?? '', device: d.device ?? '',
                      index: d.gpuIndex ?? null, uuid: d.gpuUuid ?? '',
                      memoryMiB: d.memoryMiB ?? 0, wholeMemory: d.wholeMemory === true,
                      cores: d.cores ?? 0 });
  }
  if (out.state === 'unknown' && out.claims.length > 0) out.state = 'dra';
  return out;
}

// "GPU 0 (SimGPU-24G, GPU-a): 8 GiB, 30% cores": what one container may use of one GPU.
export function describeDevice(d) {
  const gpu = d.index === null ? 'GPU ?' : `GPU ${d.index}`;
  const what = [d.model, d.uuid].filter(Boolean).join(', ');
  let compute = d.cores > 0 ? `${d.cores}% cores` : 'no compute limit';
  if (d.coresLimit > 0) compute += `, bursts to ${d.coresLimit}%`;
  if (d.exclusive) compute = 'exclusive';
  return `${gpu} (${what}): ${formatMiB(d.memoryMiB)}, ${compute}`;
}

// "claim team-a/shared: gpu-0 on gpu-a (GPU 0), 2 GiB, no compute limit".
export function describeClaim(c) {
  const memory = c.wholeMemory ? `all memory (${formatMiB(c.memoryMiB)})` : formatMiB(c.memoryMiB);
  const gpu = c.index === null ? '' : ` (GPU ${c.index})`;
  const compute = c.cores > 0 ? `${c.cores}% cores` : 'no compute limit';
  return `claim ${c.claim}: ${c.device} on ${c.node}${gpu}, ${memory}, ${compute}`;
}
