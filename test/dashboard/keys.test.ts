import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { API, inPage, launchBrowser, openDashboard, shot, signIn, type Browser, type Watched } from './support.js';

describe('Dashboard in Chromium: API keys', function () {
  this.timeout(60_000);

  let server: TestServer;
  let browser: Browser;
  let w: Watched;
  let page: Page;
  let secret = '';

  const keyRow = (name: string) => page.locator('table.keys tbody tr', { hasText: name });

  before(async () => {
    server = await startTestServer();
    browser = await launchBrowser();
    w = await openDashboard(browser, server);
    page = w.page;
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(server.url).origin });
    await signIn(page, server.adminKey);
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
  });
  afterEach(() => w.check());
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('lists the keys with name, role, created and last used', async () => {
    const row = keyRow('admin');
    await row.waitFor();
    const text = await row.textContent();
    expect(text).to.include('admin').and.include('active').and.match(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}/);
    expect(await page.locator('table.keys thead').textContent()).to.include('Name').and.include('Role').and.include('Created').and.include('Last used');
    await shot(page, 'desktop-30-keys');
  });

  it('refuses a key without a name, in words', async () => {
    await page.getByLabel('Name', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText('Give the key a name').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('bad <name>');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText(/Refused \(400\): Key name must not contain/).waitFor();
  });

  it('creates a key, shows its secret once with a copy button, and the key works through the API', async () => {
    await page.getByLabel('Name', { exact: true }).fill('ci-bot');
    await page.getByLabel('Role', { exact: true }).selectOption('writer');
    await page.getByRole('button', { name: 'Create key' }).click();
    const field = page.getByLabel('Secret', { exact: true });
    await field.waitFor();
    secret = await field.inputValue();
    expect(secret).to.match(/^ks_[a-z0-9-]+_[A-Za-z0-9_-]{43}$/);
    await page.getByText('Copy it now: it is shown only once.').waitFor();
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByText('Copied.').waitFor();
    expect(await inPage(page, 'navigator.clipboard.readText()')).to.equal(secret);
    await keyRow('ci-bot').waitFor();
    expect(await keyRow('ci-bot').textContent()).to.include('writer').and.include('never');
    await shot(page, 'desktop-31-key-created');

    // Done: the secret is gone from the page for good.
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.locator('#new-key-secret').count()).to.equal(0);
    expect(await page.content()).to.not.include(secret);

    // The key works through the API, as a writer...
    const put = await api(`${server.url}${API}/items/bot/note.md`, { method: 'PUT', key: secret, body: { content: 'from the bot' } });
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    expect((await api(`${server.url}${API}/keys`, { key: secret })).status).to.equal(403);
    // ...and its use shows as "last used".
    await page.getByRole('button', { name: 'Refresh' }).click();
    await keyRow('ci-bot').waitFor();
    expect(await keyRow('ci-bot').locator('td[data-label="Last used"]').textContent()).to.match(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}/);
  });

  it('creates a scoped key (folders separated by spaces or commas); the list shows its scopes and the key sees only them', async () => {
    await api(`${server.url}${API}/items/docs/in.md`, { method: 'PUT', key: server.adminKey, body: { content: 'in' } });
    await api(`${server.url}${API}/items/private/out.md`, { method: 'PUT', key: server.adminKey, body: { content: 'out' } });
    await page.getByLabel('Name', { exact: true }).fill('docs-agent');
    await page.getByLabel('Role', { exact: true }).selectOption('reader');
    await page.getByLabel('Scopes (optional)').fill('notes, docs');
    await page.getByRole('button', { name: 'Create key' }).click();
    const scoped = await page.getByLabel('Secret', { exact: true }).inputValue();
    await page.getByRole('button', { name: 'Done' }).click();
    await keyRow('docs-agent').waitFor();
    expect(await keyRow('docs-agent').locator('td[data-label="Scopes"]').textContent()).to.equal('docs/notes/');
    expect(await keyRow('ci-bot').locator('td[data-label="Scopes"]').textContent()).to.equal('all folders');
    await shot(page, 'desktop-34-scoped-key');
    const listed = await api(`${server.url}${API}`, { key: scoped });
    expect((listed.body?.data?.items as Array<{ path: string }>).map((i) => i.path)).to.deep.equal(['docs/in.md']);
    // A bad scope is refused in words, and no key is made.
    await page.getByLabel('Name', { exact: true }).fill('bad-scope');
    await page.getByLabel('Scopes (optional)').fill('docs docs/sub');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText(/Refused \(400\): scope "docs\/sub\/" is inside scope "docs\/"/).waitFor();
    expect(await keyRow('bad-scope').count()).to.equal(0);
  });

  it('revokes a key after a confirmation; the API refuses it from then on', async () => {
    await keyRow('ci-bot').getByRole('button', { name: 'Revoke…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke the key “ci-bot”?' });
    await dialog.waitFor();
    await shot(page, 'desktop-32-revoke-confirm', { fullPage: false });
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('Revoked the key “ci-bot”.').waitFor();
    await keyRow('ci-bot').locator('.status.revoked').waitFor();
    expect(await keyRow('ci-bot').getByRole('button', { name: 'Revoke…' }).count()).to.equal(0);
    const res = await api(`${server.url}${API}/items/bot/note.md`, { key: secret });
    expect(res.status).to.equal(401);
    expect(res.body?.error).to.equal('Invalid API key');
    await shot(page, 'desktop-33-key-revoked');
  });

  it('signs the admin out with a message when the dashboard\'s own key is revoked meanwhile', async () => {
    const other = await openDashboard(browser, server);
    const ownKey = await server.key('admin', 'default', 'short-lived-admin');
    await signIn(other.page, ownKey);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await keyRow('short-lived-admin').getByRole('button', { name: 'Revoke…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await keyRow('short-lived-admin').locator('.status.revoked').waitFor();
    await other.page.getByRole('button', { name: 'Refresh' }).click();
    await other.page.getByText(/The server refused the key \(401 Invalid API key\)\. It may have been revoked\. Sign in again\./).waitFor();
    await other.page.getByLabel('Admin API key').waitFor();
    expect(await inPage(other.page, 'sessionStorage.length')).to.equal(0);
    other.check();
    await other.page.close();
  });
});
