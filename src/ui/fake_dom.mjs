// A small stand-in for the browser's DOM, enough for the page's modules (view.mjs, app.mjs) to
// run under node in page_test.mjs: elements with children, text, attributes, style, events;
// selects with options and a value; a document with getElementById and visibility. It models
// only what the page uses; it is not part of the page.

export class FakeElement {
  constructor(tag) {
    this.tagName = tag.toUpperCase();
    this.children = [];
    this.attributes = {};
    this.style = {};
    this.listeners = {};
    this.className = '';
    this.id = '';
    this.title = '';
    this.hidden = false;
    this.disabled = false;
    this.ownText = '';
    this.selected = '';  // a select's value
  }

  get textContent() {
    return this.ownText + this.children.map((c) => c.textContent).join('');
  }
  set textContent(text) {
    this.children = [];
    this.ownText = String(text);
  }
  get firstChild() {
    return this.children[0] ?? null;
  }
  append(...nodes) {
    this.children.push(...nodes);
  }
  replaceChildren(...nodes) {
    this.children = [...nodes];
    this.ownText = '';
  }
  setAttribute(name, value) {
    this.attributes[name] = String(value);
  }
  getAttribute(name) {
    return this.attributes[name] ?? null;
  }
  addEventListener(type, fn) {
    (this.listeners[type] ??= []).push(fn);
  }
  dispatch(type, event = {}) {
    for (const fn of this.listeners[type] ?? []) fn({ preventDefault() {}, ...event });
  }
  focus() {
    globalThis.document.activeElement = this;
  }
  // The elements below this one (depth first) that `pred` accepts.
  findAll(pred) {
    const out = [];
    for (const c of this.children) {
      if (pred(c)) out.push(c);
      out.push(...c.findAll(pred));
    }
    return out;
  }

  // <select>: options are its children; value is the selected option's (the first by default).
  get options() {
    return this.children;
  }
  get value() {
    if (this.tagName !== 'SELECT') return this.selected;
    const values = this.children.map((o) => o.value);
    return values.includes(this.selected) ? this.selected : (values[0] ?? '');
  }
  set value(v) {
    this.selected = String(v);
  }

  // <table>: its body.
  get tBodies() {
    return this.children.filter((c) => c.tagName === 'TBODY');
  }
}

// A document with one element per id (as index.html has them), `hidden` for the tab's
// visibility, and document-level listeners.
export class FakeDocument {
  constructor() {
    this.byId = new Map();
    this.listeners = {};
    this.hidden = false;
    this.activeElement = null;
  }
  createElement(tag) {
    return new FakeElement(tag);
  }
  add(tag, id, setup) {
    const e = new FakeElement(tag);
    e.id = id;
    if (setup) setup(e);
    this.byId.set(id, e);
    return e;
  }
  getElementById(id) {
    return this.byId.get(id) ?? null;
  }
  addEventListener(type, fn) {
    (this.listeners[type] ??= []).push(fn);
  }
  dispatch(type) {
    for (const fn of this.listeners[type] ?? []) fn({});
  }
}

export function option(value, text) {
  const o = new FakeElement('option');
  o.value = value;
  o.textContent = text;
  return o;
}
