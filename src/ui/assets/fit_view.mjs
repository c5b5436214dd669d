// DOM building for the answer of the "would it fit" form (fit.mjs has the words).
import { fitSummary } from './fit.mjs';
import { el } from './view.mjs';
import { describeReason } from './model.mjs';

export function renderFitAnswer(box, answer) {
  const s = fitSummary(answer);
  const parts = [el('p', s.fits ? 'fit-yes' : 'fit-no', s.headline)];
  if (s.request.length > 0) parts.push(el('p', '', `Request as parsed: ${s.request.join('; ')}.`));
  if (s.gpus.length > 0) {
    const ul = el('ul', 'fit-gpus');
    ul.setAttribute('aria-label', 'GPUs it would get');
    for (const g of s.gpus) ul.append(el('li', '', g));
    parts.push(ul);
  }
  if (s.fitting.length > 0) parts.push(el('p', '', `Fits on: ${s.fitting.join(', ')}.`));
  if (s.refusals.length > 0) {
    parts.push(el('p', '', 'Where it does not fit, and why:'));
    const ul = el('ul', 'reason-list');
    for (const r of s.refusals) ul.append(el('li', '', describeReason(r)));
    parts.push(ul);
  }
  if (s.note) parts.push(el('p', 'note', s.note));
  box.replaceChildren(...parts);
}

export function renderFitError(box, message) {
  const p = el('p', 'fit-error', message);
  box.replaceChildren(p);
}
