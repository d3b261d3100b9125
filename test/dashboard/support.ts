import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { buildDashboard } from '../../src/dashboard/build.js';
import { checkResponse } from '../support/openapiCheck.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';

/**
 * End-to-end support for the dashboard: Debian's Chromium driven by
 * playwright-core against a real server on a free port. Nothing here skips: a
 * missing browser is a failing test that says how to install it.
 */

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SCREENSHOT_DIR = join(ROOT, '.tmp', 'screenshots');

let built: Promise<string> | undefined;
/** The tests drive what the sources say now: the bundle is rebuilt once per run (esbuild: well under a second). */
export function ensureBuilt(): Promise<string> {
  built ??= buildDashboard();
  return built;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** One Chromium with a fresh profile (--user-data-dir in a temp dir, as playwright's persistent context takes it). */
export async function launchBrowser(): Promise<Browser> {
  expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH)`).to.equal(true);
  await ensureBuilt();
  const profile = await tmpDir('ks-chromium');
  const context = await chromium.launchPersistentContext(profile.dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: DESKTOP,
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  return {
    context,
    close: async () => {
      await context.close();
      await profile.cleanup();
    },
  };
}

export interface Watched {
  page: Page;
  /** Every URL the page requested. */
  requests: string[];
  /** Uncaught exceptions, CSP violations and JavaScript dialogs (alert from an XSS): each a test failure. */
  problems: string[];
  /** Asserts that no request left the server's origin and that nothing above happened. */
  check(): void;
}

/** A new tab (its own sessionStorage) on the dashboard, watched for stray requests and errors. */
export async function openDashboard(browser: Browser, server: TestServer, viewport = DESKTOP, hash = ''): Promise<Watched> {
  const page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  await page.setViewportSize(viewport);
  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  // What the page gets from the API is held against the API description too (support/openapiCheck.ts).
  page.on('response', (r) => {
    const url = new URL(r.url());
    if (!url.pathname.startsWith('/api/')) return;
    console.log('RESP', url.pathname);
    void r.text().then(
      (text) => {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        const headers = r.headers();
        checkResponse({ method: r.request().method(), url: `${url.pathname}${url.search}`, status: r.status(), contentType: headers['content-type'] ?? '', body, text, header: (n) => headers[n.toLowerCase()] });
      },
      () => undefined, // the page moved on before the body arrived
    );
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) problems.push(`CSP violation: ${m.text()}`);
  });
  page.on('dialog', (d) => {
    problems.push(`JavaScript dialog (${d.type()}): ${d.message()}`);
    void d.dismiss();
  });
  const origin = new URL(server.url).origin;
  await page.goto(`${server.url}/dashboard/${hash}`);
  return {
    page,
    requests,
    problems,
    check() {
      const elsewhere = requests.filter((u) => !u.startsWith('data:') && new URL(u).origin !== origin);
      expect(elsewhere, 'requests to another origin').to.deep.equal([]);
      for (const u of requests.filter((x) => !x.startsWith('data:'))) expect(['localhost', '127.0.0.1', '[::1]']).to.include(new URL(u).hostname);
      expect(problems, 'page problems').to.deep.equal([]);
    },
  };
}

/** Signs in through the form and waits for the items screen. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('Admin API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Items', level: 1 }).waitFor();
}

let announced = false;
/** A screenshot in .tmp/screenshots/<name>.png, full page unless told (a modal's backdrop covers only the window). */
export async function shot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  if (!announced) {
    announced = true;
    console.log(`      screenshots: ${SCREENSHOT_DIR}`);
  }
  const file = join(SCREENSHOT_DIR, `${name}.png`);
  // Let loading states settle: the picture should show what a person sees. Polled from here, not with
  // waitForFunction, whose in-page polling needs eval, which the dashboard's CSP rightly refuses.
  const deadline = Date.now() + 10_000;
  while ((await page.locator('.state.loading').count()) > 0) {
    expect(Date.now(), `${name}: still loading after 10 s`).to.be.below(deadline);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await page.screenshot({ path: file, fullPage: options.fullPage ?? true });
  return file;
}

/**
 * Evaluates a JavaScript expression in the page. A string, not a function: the
 * server's tsconfig has no DOM types (on purpose), and this code runs in the browser.
 */
export function inPage<T = unknown>(page: Page, expression: string): Promise<T> {
  return page.evaluate<T>(expression);
}

/** True when the page is wider than the window (a horizontal scrollbar on a phone). */
export function overflowsHorizontally(page: Page): Promise<boolean> {
  return inPage<boolean>(page, 'document.documentElement.scrollWidth > window.innerWidth || document.body.scrollWidth > window.innerWidth');
}

export const API = '/api/v1/knowledge';

export async function ok(res: Promise<ApiResponse>): Promise<ApiResponse> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  return r;
}

/** PUT an item through the API (content, optional message); returns the item. */
export async function putItem(server: TestServer, key: string, path: string, content: string, message?: string): Promise<{ id: string; path: string }> {
  const res = await ok(api(`${server.url}${API}/items/${path}`, { method: 'PUT', key, body: message ? { content, message } : { content } }));
  return res.body?.data?.item as { id: string; path: string };
}

export function deleteItem(server: TestServer, key: string, path: string): Promise<ApiResponse> {
  return ok(api(`${server.url}${API}/items/${path}`, { method: 'DELETE', key }));
}

export function getItem(server: TestServer, key: string, path: string): Promise<ApiResponse> {
  return api(`${server.url}${API}/items/${path}`, { key });
}

/** What a signed-in dashboard suite works with (filled in by its `before` hook). */
export interface DashboardSession {
  server: TestServer;
  browser: Browser;
  w: Watched;
  page: Page;
}

/**
 * The hooks a dashboard suite starts with: a test server, seeded by `seed` before the page opens, Chromium,
 * one tab on the dashboard signed in with the admin key, and every test's stray requests and page errors
 * checked after it (Watched.check). Returns the session, whose fields are there once the hooks have run.
 */
export function signedInDashboard(seed: (server: TestServer) => Promise<void> = async () => undefined): DashboardSession {
  const session = {} as DashboardSession;
  before(async () => {
    session.server = await startTestServer();
    session.browser = await launchBrowser();
    await seed(session.server);
    session.w = await openDashboard(session.browser, session.server);
    session.page = session.w.page;
    await signIn(session.page, session.server.adminKey);
  });
  afterEach(() => session.w.check());
  after(async () => {
    await session.browser?.close();
    await session.server?.close();
  });
  return session;
}
