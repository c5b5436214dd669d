// DOM building for the page: the nodes of one page, the per-model table, the pending pods.
// Text goes in through textContent only (names come from the cluster), widths through the
// CSSOM, which the Content-Security-Policy allows where it forbids style attributes.
import { describeShare, formatCount, formatMiB, percent } from './model.mjs';

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A bar of `total`: one segment per part ({value, label}), alternating colours; `marker`, when
// given, draws a line at that value (the physical memory of a scaled GPU). Screen readers get
// `summary` instead of the segments.
function bar(kind, total, parts, summary, marker) {
  const b = el('div', `bar bar-${kind}`);
  b.setAttribute('role', 'img');
  b.setAttribute('aria-label', summary);
  parts.forEach((p, i) => {
    if (p.value <= 0 || total <= 0) return;
    const s = el('span', `seg seg-${i % 2}`);
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
  let memText = `memory ${formatMiB(g.usedMiB)} of ${formatMiB(g.virtualMemoryMiB)} ` +
                `(${percent(g.usedMiB, g.virtualMemoryMiB)}%)`;
  if (scaled) {
    memText += `, virtual: ${formatMiB(g.memoryMiB)} physical x ${g.memoryScaling}`;
  }
  li.append(el('p', 'gpu-line', memText));
  const memParts = g.shares.map((s) => ({ value: s.memoryMiB, label: describeShare(s) }));
  li.append(bar('memory', g.virtualMemoryMiB, memParts, memText,
                scaled ? g.memoryMiB : undefined));

  const coreText = `cores ${g.usedCores}% of 100%` +
                   (g.slots > 0 ? `, vGPU slots ${g.usedSlots} of ${g.slots}` : '');
  li.append(el('p', 'gpu-line', coreText));
  const coreParts = g.shares.map((s) => ({ value: s.cores, label: describeShare(s) }));
  li.append(bar('cores', 100, coreParts, coreText));

  if (g.shares.length > 0) {
    const list = el('ul', 'shares');
    list.setAttribute('aria-label', `shares on ${g.unknown ? 'GPU ?' : `GPU ${g.index}`}`);
    for (const s of g.shares) list.append(el('li', '', describeShare(s)));
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

export function renderPending(tbody, pending) {
  const rows = [];
  for (const p of pending) {
    const containers = p.containers.length > 0 ? p.containers : [{ name: '', request: '' }];
    containers.forEach((c, i) => {
      const tr = el('tr');
      const pod = el(i === 0 ? 'th' : 'td', '', i === 0 ? p.pod : '');
      if (i === 0) pod.setAttribute('scope', 'row');
      tr.append(pod, el('td', '', c.init ? `${c.name} (init)` : c.name),
                el('td', '', c.request));
      rows.push(tr);
    });
  }
  tbody.replaceChildren(...rows);
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
