// The "would it fit" form: from what the user typed to the body of the scheduler's POST /fit,
// and from its answer to what the page says. Pure functions; errors are thrown as Error with
// a message that says what was wrong and what is allowed.

// "name: value" (or "name=value") lines to an object; blank lines and lines starting with '#'
// are skipped. `what` names the field in errors.
export function parseLines(text, what) {
  const out = {};
  (text ?? '').split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const m = /^([^:=\s]+)\s*[:=]\s*(.+)$/.exec(line);
    if (!m) {
      throw new Error(`${what}, line ${i + 1}: "${line}" is not "name: value" ` +
                      '(for example nvidia.com/gpu: 1)');
    }
    if (m[1] in out) throw new Error(`${what}, line ${i + 1}: ${m[1]} is given twice`);
    out[m[1]] = m[2].trim();
  });
  return out;
}

function wholeNumber(text, what, min, max) {
  const t = String(text ?? '').trim();
  if (!/^\d+$/.test(t) || Number(t) < min || Number(t) > max) {
    throw new Error(`${what}: "${t}" is not a whole number from ${min} to ${max}`);
  }
  return Number(t);
}

// form: {kind: 'dialect' | 'claim', resources, annotations (text of lines), count, memory,
// cores (text)}. The dialect form is one container "main" with those limits.
export function fitRequest(form) {
  if (form.kind === 'claim') {
    const claim = { count: wholeNumber(form.count, 'GPUs', 1, 64) };
    const memory = String(form.memory ?? '').trim();
    if (memory !== '') claim.memory = memory;
    const cores = String(form.cores ?? '').trim();
    if (cores !== '') claim.cores = wholeNumber(cores, 'Compute (% of a GPU)', 0, 100);
    return { claim };
  }
  if (form.kind !== 'dialect') throw new Error(`unknown request kind "${form.kind}"`);
  const resources = parseLines(form.resources, 'Resource limits');
  if (Object.keys(resources).length === 0) {
    throw new Error('Resource limits: give at least one, for example nvidia.com/gpu: 1 ' +
                    '(any dialect: nvidia.com/gpumem, tencent.com/vcuda-core, ' +
                    'aliyun.com/gpu-mem, ...)');
  }
  const body = { containers: [{ name: 'main', resources }] };
  const annotations = parseLines(form.annotations, 'Pod annotations');
  if (Object.keys(annotations).length > 0) body.annotations = annotations;
  return body;
}

// The answer of POST /fit in words: {fits, headline, request, gpus, fitting, refusals, note}.
export function fitSummary(answer) {
  const fits = answer.fits === true;
  const score = typeof answer.score === 'number' ? ` (node score ${answer.score} of 10)` : '';
  const headline = fits ? `Fits now on ${answer.node}${score}.`
                        : 'Does not fit on any node now.';
  const request = (answer.request ?? []).map(
      (c) => `${c.name}${c.init ? ' (init)' : ''}: ${c.request}`);
  // A GPU the inventory no longer lists comes without index and model.
  const gpus = (answer.gpus ?? []).map((g) => {
    let compute = g.cores > 0 ? `${g.cores}% cores` : 'no compute limit';
    if (g.exclusive) compute = 'exclusive';
    return `${g.container}: GPU ${g.index ?? '?'} (${[g.model, g.uuid].filter(Boolean).join(', ')}), ` +
           `${g.memoryMiB} MiB, ${compute}`;
  });
  const fitting = answer.fitting ?? [];
  const refusals = (answer.nodes ?? []).map((r) => ({ node: r.node ?? '', reason: r.reason ?? '',
                                                      unresolvable: r.unresolvable === true }));
  return { fits, headline, request, gpus, fitting, refusals, note: answer.note ?? '' };
}
