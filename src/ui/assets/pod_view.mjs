// DOM building for a pod's page (pod.mjs has the facts): its state, its decision per container
// with each GPU's memory and compute limits, its request and the filter's reasons while it waits,
// the DRA claims it holds, and what the page cannot show.
import { describeClaim, describeDevice, podDetails } from './pod.mjs';
import { el, reasonsBlock } from './view.mjs';

function section(title, ...children) {
  const s = el('section', 'pod-part');
  s.append(el('h3', '', title), ...children);
  return s;
}

function list(lines) {
  const ul = el('ul');
  for (const line of lines) ul.append(el('li', '', line));
  return ul;
}

const STATES = {
  placed: (d) => `Placed on node ${d.node}` +
                 (d.reserved ? ', reserved: the scheduler has not yet seen the bind' : '') + '.',
  pending: () => 'Waiting for a GPU.',
  dra: (d) => `Holds ${d.claims.length === 1 ? 'a GPU' : 'GPUs'} through DRA claims ` +
              '(kube-scheduler placed it; Tessera enforces the claim\'s limits).',
  unknown: () => 'The scheduler knows no GPU decision, request or claim of this pod: it holds ' +
                 'no GPU through Tessera, or it is gone.',
};

// Fills `body` with pod `pod`'s page from `cluster` (buildCluster's answer).
export function renderPod(heading, body, cluster, pod) {
  const d = podDetails(cluster, pod);
  heading.textContent = `Pod ${pod}`;
  const parts = [el('p', 'pod-state', STATES[d.state](d))];
  if (d.state === 'placed') {
    const rows = d.containers.map((c) => {
      const item = el('li');
      const how = [c.init ? 'init container' : '', `compute mode ${c.mode}`,
                   c.slot ? 'takes a vGPU slot' : ''].filter(Boolean).join(', ');
      item.append(el('p', 'container-name', `${c.name} (${how})`), list(c.devices.map(describeDevice)));
      return item;
    });
    const ul = el('ul', 'containers');
    ul.append(...rows);
    parts.push(section('Decision and limits', el('p', 'note', 'Each container may use this much ' +
        'of each GPU: the in-container library enforces the memory, and the compute share unless ' +
        'there is no compute limit.'), ul));
  }
  if (d.pending) {
    parts.push(section('Request', list(d.pending.containers.map(
        (c) => `${c.name}${c.init ? ' (init)' : ''}: ${c.request}`))));
    parts.push(section('Why it waits', reasonsBlock(d.pending.filter)));
  }
  if (d.claims.length > 0) parts.push(section('DRA claims', list(d.claims.map(describeClaim))));
  parts.push(section('Usage', el('p', 'note', 'Not shown: the scheduler\'s /inspect carries ' +
      'what is allocated, not what is used. Memory used and the achieved compute share per ' +
      'container are in the node agents\' metrics (docs/ui.md, "Planned").')));
  body.replaceChildren(...parts);
}
