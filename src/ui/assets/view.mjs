// DOM building for the page: the nodes of one page, the per-model table, the pending pods and
// why they wait. Text goes in through textContent only (names come from the cluster), widths
// through the CSSOM, which the Content-Security-Policy allows where it forbids style attributes.
import {
  describeFilter, describeReason, describeShare, formatCount, formatMiB, percent,
} from './model.mjs';
import { podHash } from './pod.mjs';

export function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A link to a pod's page, its text `text`.
export function podLink(pod, text) {
  const a = el('a', 'pod-link', text);
  a.href = podHash(pod);
  return a;
}

// A bar of `total`: one segment per part ({value, label, dra}), alternating colours, DRA
// shares in a colour of their own; `marker`, when
// given, draws a line at that value (the physical memory of a scaled GPU). Screen readers get
// `summary` instead of the segments.
function bar(kind, total, parts, summary, marker) {
  const b = el('div', `bar bar-${kind}`);
  b.setAttribute('role', 'img');
  b.setAttribute('aria-label', summary);
  parts.forEach((p, i) => {
    if (p.value <= 0 || total <= 0) return;
    const s = el('span', p.dra ? 'seg seg-dra' : `seg seg-${i % 2}`);
    s.style.width = `${Math.min(100, (p.value * 100) / total)}%`;
    s.title = p.label;
    b.append(s);
  });
  if (marker !== undefined && total > 0) {
    const m = el('span', 'marker');
    m.style.left = `${(marker * 100) / total}%`;
    b.append(m);
  }
  return b;
}

function gpuItem(g) {
  const li = el('li', 'gpu');
  const head = el('p', 'gpu-head');
  head.append(el('span', 'gpu-index', g.unknown ? 'GPU ?' : `GPU ${g.index}`),
              el('span', 'gpu-model', g.model || '(no model)'));
  if (!g.healthy) head.append(el('span', 'badge badge-bad', 'unhealthy'));
  if (g.exclusive) head.append(el('span', 'badge', 'exclusive'));
  if (g.unknown) head.append(el('span', 'badge badge-bad', 'not in the inventory'));
  li.append(head);

  const scaled = g.memoryScaling > 1;
  let memText = `memory ${formatMiB(g.allocatedMiB)} of ${formatMiB(g.virtualMemoryMiB)} ` +
                `(${percent(g.allocatedMiB, g.virtualMemoryMiB)}%)`;
  if (g.draMiB > 0) memText += `, ${formatMiB(g.draMiB)} of it through DRA claims`;
  if (scaled) {
    memText += `, virtual: ${formatMiB(g.memoryMiB)} physical x ${g.memoryScaling}`;
  }
  li.append(el('p', 'gpu-line', memText));
  const memParts = g.shares.map((s) => ({ value: s.memoryMiB, label: describeShare(s),
                                          dra: s.dra === true }));
  li.append(bar('memory', g.virtualMemoryMiB, memParts, memText,
                scaled ? g.memoryMiB : undefined));

  const coreText = `cores ${g.allocatedCores}% of 100%` +
                   (g.draCores > 0 ? `, ${g.draCores}% through DRA claims` : '') +
                   (g.slots > 0 ? `, vGPU slots ${g.usedSlots} of ${g.slots}` : '');
  li.append(el('p', 'gpu-line', coreText));
  const coreParts = g.shares.map((s) => ({ value: s.cores, label: describeShare(s),
                                           dra: s.dra === true }));
  li.append(bar('cores', 100, coreParts, coreText));

  if (g.shares.length > 0) {
    const list = el('ul', 'shares');
    list.setAttribute('aria-label', `shares on ${g.unknown ? 'GPU ?' : `GPU ${g.index}`}`);
    for (const s of g.shares) {
      const item = el('li', s.dra ? 'share-dra' : '');
      // A DRA share links to its first pod; a claim no pod holds yet has no page.
      const pod = s.dra ? s.pods[0] : s.pod;
      item.append(pod ? podLink(pod, describeShare(s)) : el('span', '', describeShare(s)));
      list.append(item);
    }
    li.append(list);
  } else {
    li.append(el('p', 'gpu-line idle', 'no share placed'));
  }
  return li;
}

function nodeArticle(n, id) {
  const a = el('article', 'node');
  const h = el('h3', 'node-name', n.name);
  h.id = id;
  a.setAttribute('aria-labelledby', id);
  a.append(h);
  const flags = [];
  // /inspect's "ready": the node exists and carries a valid inventory.
  if (!n.ready && !n.inventoryError) flags.push('not placed on: the node is gone (deleted)');
  if (!n.serving) flags.push('device plugins not registered with kubelet: no pod is placed here');
  for (const f of flags) a.append(el('p', 'node-flag', f));
  if (n.inventoryError) a.append(el('p', 'node-flag', `inventory: ${n.inventoryError}`));
  if (n.gpus.length > 0) {
    const list = el('ul', 'gpus');
    for (const g of n.gpus) list.append(gpuItem(g));
    a.append(list);
  } else if (!n.inventoryError) {
    a.append(el('p', 'gpu-line idle', 'no GPU'));
  }
  return a;
}

export function renderNodes(container, nodes) {
  const articles = nodes.map((n, i) => nodeArticle(n, `node-${i}`));
  container.replaceChildren(...articles);
}

export function renderModels(tbody, groups) {
  const rows = groups.map((m) => {
    const tr = el('tr');
    const scaled = m.virtualMemoryMiB > m.memoryMiB;
    const mem = `${formatMiB(m.usedMiB)} of ${formatMiB(m.virtualMemoryMiB)} ` +
                `(${percent(m.usedMiB, m.virtualMemoryMiB)}%)` +
                (scaled ? `; ${formatMiB(m.memoryMiB)} physical` : '');
    tr.append(el('th', '', m.model), el('td', 'num', formatCount(m.gpus)), el('td', 'num', mem),
              el('td', 'num', `${m.usedCores}% of ${formatCount(m.cores)}% ` +
                              `(${percent(m.usedCores, m.cores)}%)`),
              el('td', 'num', formatCount(m.shares)));
    tr.firstChild.setAttribute('scope', 'row');
    return tr;
  });
  tbody.replaceChildren(...rows);
}

// Up to this many refusing nodes are listed in the table; the rest behind a disclosure.
const REASONS_SHOWN = 5;

// Why a pending pod waits: the last filter's summary and its reasons per node.
export function reasonsBlock(filter) {
  const box = el('div', 'reasons');
  const summary = describeFilter(filter);
  if (!summary) {
    box.append(el('p', 'idle', 'not filtered by this scheduler yet (kube-scheduler has not asked ' +
                               'it since it started)'));
    return box;
  }
  box.append(el('p', 'reason-summary', summary));
  const list = (reasons) => {
    const ul = el('ul', 'reason-list');
    for (const r of reasons) ul.append(el('li', '', describeReason(r)));
    return ul;
  };
  if (filter.reasons.length > 0) box.append(list(filter.reasons.slice(0, REASONS_SHOWN)));
  const rest = filter.reasons.slice(REASONS_SHOWN);
  if (rest.length > 0) {
    const more = el('details', 'reason-more');
    more.append(el('summary', '', `${formatCount(rest.length)} more nodes`), list(rest));
    box.append(more);
  }
  if (filter.reasonsLeftOut > 0) {
    box.append(el('p', 'idle', `and ${formatCount(filter.reasonsLeftOut)} more refusing nodes ` +
                               'not listed by the scheduler'));
  }
  return box;
}

export function renderPending(tbody, pending) {
  const rows = [];
  for (const p of pending) {
    const containers = p.containers.length > 0 ? p.containers : [{ name: '', request: '' }];
    containers.forEach((c, i) => {
      const tr = el('tr');
      const pod = el(i === 0 ? 'th' : 'td', '');
      if (i === 0) {
        pod.setAttribute('scope', 'row');
        pod.append(podLink(p.pod, p.pod));
      }
      tr.append(pod, el('td', '', c.init ? `${c.name} (init)` : c.name),
                el('td', '', c.request));
      if (i === 0) {
        const why = el('td', 'why');
        why.setAttribute('rowspan', String(containers.length));
        why.append(reasonsBlock(p.filter));
        tr.append(why);
      }
      rows.push(tr);
    });
  }
  tbody.replaceChildren(...rows);
}

// The warnings of /inspect (claims it could not read) and shares not placed on the map.
export function renderWarnings(list, warnings) {
  list.replaceChildren(...warnings.map((w) => el('li', '', w)));
  list.hidden = warnings.length === 0;
}

// Replaces the options after the first ("all ...") with `values`; the selected value stays, and
// stays listed, even when the cluster no longer has it (the filter then matches nothing).
export function fillSelect(select, values) {
  const keep = select.value;
  const first = select.options[0];
  const all = keep && !values.includes(keep) ? [...values, keep] : values;
  const options = all.map((v) => {
    const o = el('option', '', v || '(none)');
    o.value = v;
    return o;
  });
  select.replaceChildren(first, ...options);
  select.value = keep;
}
