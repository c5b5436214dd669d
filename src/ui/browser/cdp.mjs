// A small client of the Chrome DevTools Protocol for the browser tests, with node's own
// WebSocket (node 22, or node 20 with --experimental-websocket) and no npm package: starts a
// headless Chromium, opens pages, evaluates expressions in them, waits for conditions, presses
// keys and takes screenshots. Not part of the page.
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// $TESSERA_CHROMIUM, or the first of Chromium's names on PATH; '' when there is none.
export function findChromium(env = process.env) {
  if (env.TESSERA_CHROMIUM) return env.TESSERA_CHROMIUM;
  const dirs = (env.PATH ?? '').split(':').filter(Boolean);
  for (const name of ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']) {
    for (const dir of dirs) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {
        // not in this folder
      }
    }
  }
  return '';
}

export class Browser {
  // Starts `chromium` headless with an empty profile; resolves once its DevTools socket answers.
  static async launch(chromium, { timeoutMs = 30000 } = {}) {
    const profile = mkdtempSync(join(tmpdir(), 'tessera-chromium-'));
    const child = spawn(chromium, [
      '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
      '--no-first-run', '--no-default-browser-check', '--disable-extensions',
      '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank',
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Chromium did not start in ${timeoutMs} ms: ${log}`)),
                               timeoutMs);
      child.stderr.on('data', (d) => {
        log += d;
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(log);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on('exit', (code) => reject(new Error(`Chromium exited with ${code}: ${log}`)));
    });
    const browser = new Browser(child, profile, new WebSocket(url));
    await new Promise((resolve, reject) => {
      browser.ws.addEventListener('open', resolve, { once: true });
      browser.ws.addEventListener('error', () => reject(new Error(`cannot connect to ${url}`)),
                                  { once: true });
    });
    return browser;
  }

  constructor(child, profile, ws) {
    this.child = child;
    this.profile = profile;
    this.ws = ws;
    this.nextId = 1;
    this.calls = new Map();     // id -> {resolve, reject, method}
    this.listeners = new Set(); // (message) => void
    ws.addEventListener('message', (e) => {
      const msg = JSON.parse(e.data);
      if (msg.id && this.calls.has(msg.id)) {
        const call = this.calls.get(msg.id);
        this.calls.delete(msg.id);
        if (msg.error) call.reject(new Error(`${call.method}: ${msg.error.message}`));
        else call.resolve(msg.result);
        return;
      }
      for (const fn of this.listeners) fn(msg);
    });
  }

  send(method, params = {}, sessionId = undefined) {
    const id = this.nextId++;
    const message = { id, method, params };
    if (sessionId) message.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject, method });
      this.ws.send(JSON.stringify(message));
    });
  }

  // A new tab of `width` x `height` CSS pixels.
  async newPage({ width = 1280, height = 900 } = {}) {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this, sessionId);
    await page.send('Page.enable');
    await page.send('Runtime.enable');
    await page.send('Emulation.setDeviceMetricsOverride',
                    { width, height, deviceScaleFactor: 1, mobile: false });
    return page;
  }

  // Closes the browser, waits for its process to end, and removes its profile.
  async close() {
    const exited = this.child.exitCode !== null ? Promise.resolve()
        : new Promise((r) => this.child.once('exit', r));
    const wait = (ms) => new Promise((r) => setTimeout(r, ms));
    this.send('Browser.close').catch(() => {});  // the socket may close before it answers
    if (await Promise.race([exited.then(() => true), wait(5000).then(() => false)]) === false) {
      this.child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.profile, { recursive: true, force: true, maxRetries: 5 });
  }
}

export class Page {
  constructor(browser, sessionId) {
    this.browser = browser;
    this.sessionId = sessionId;
    this.errors = [];  // uncaught exceptions and console errors of the page
    browser.listeners.add((msg) => {
      if (msg.sessionId !== sessionId) return;
      if (msg.method === 'Runtime.exceptionThrown') {
        this.errors.push(msg.params.exceptionDetails?.exception?.description ??
                         msg.params.exceptionDetails?.text);
      }
      if (msg.method === 'Runtime.consoleAPICalled' && msg.params.type === 'error') {
        this.errors.push(msg.params.args.map((a) => a.value ?? a.description).join(' '));
      }
      if (msg.method === 'Log.entryAdded' && msg.params.entry.level === 'error') {
        this.errors.push(msg.params.entry.text);
      }
    });
  }

  send(method, params = {}) {
    return this.browser.send(method, params, this.sessionId);
  }

  async navigate(url) {
    const loaded = this.once('Page.loadEventFired');
    const { errorText } = await this.send('Page.navigate', { url });
    if (errorText) throw new Error(`cannot open ${url}: ${errorText}`);
    await loaded;
  }

  once(method, timeoutMs = 30000) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.browser.listeners.delete(listener);
        reject(new Error(`no ${method} in ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (msg) => {
        if (msg.sessionId !== this.sessionId || msg.method !== method) return;
        clearTimeout(timer);
        this.browser.listeners.delete(listener);
        resolve(msg.params);
      };
      this.browser.listeners.add(listener);
    });
  }

  // The value of `expression` (awaited when it is a promise), as JSON.
  async evaluate(expression) {
    const { result, exceptionDetails } = await this.send('Runtime.evaluate',
        { expression, returnByValue: true, awaitPromise: true });
    if (exceptionDetails) {
      throw new Error(`${expression.slice(0, 80)}: ${exceptionDetails.exception?.description ??
                                                     exceptionDetails.text}`);
    }
    return result.value;
  }

  // Polls `expression` every `everyMs` until it is truthy; its value, or an Error naming it.
  async waitFor(expression, { timeoutMs = 20000, everyMs = 10 } = {}) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const value = await this.evaluate(expression);
      if (value) return value;
      if (Date.now() > until) throw new Error(`timed out waiting for ${expression}`);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }

  // Presses a key (as a keyboard user would: "Tab", "Enter").
  async press(key, { shift = false } = {}) {
    const codes = { Tab: 9, Enter: 13 };
    const base = { key, code: key, windowsVirtualKeyCode: codes[key], modifiers: shift ? 8 : 0 };
    await this.send('Input.dispatchKeyEvent', { type: 'rawKeyDown', ...base });
    if (key === 'Enter') await this.send('Input.dispatchKeyEvent', { type: 'char', text: '\r', ...base });
    await this.send('Input.dispatchKeyEvent', { type: 'keyUp', ...base });
  }

  // A PNG of the viewport, or of `clip` ({x, y, width, height} in page pixels).
  async screenshot(clip) {
    const params = { format: 'png', captureBeyondViewport: Boolean(clip) };
    if (clip) params.clip = { ...clip, scale: 1 };
    const { data } = await this.send('Page.captureScreenshot', params);
    return Buffer.from(data, 'base64');
  }
}
