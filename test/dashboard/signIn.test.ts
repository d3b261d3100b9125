import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/server.js';
import { createKey } from '../../src/domain/keys.js';
import { keyStoreOf } from '../http/helpers.js';
import { inPage, launchBrowser, openDashboard, putItem, shot, signIn, type Browser } from './support.js';

describe('Dashboard in Chromium: sign in, sign out, keyboard, server down', function () {
  this.timeout(60_000);

  let server: TestServer;
  let browser: Browser;

  before(async () => {
    server = await startTestServer();
    browser = await launchBrowser();
    await putItem(server, server.adminKey, 'docs/guide.md', '# Guide\n\nHello.\n');
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('serves the page with a strict CSP and nosniff, and asks for an admin key in a labelled field', async () => {
    const w = await openDashboard(browser, server);
    const res = await w.page.reload();
    const headers = res?.headers() ?? {};
    expect(headers['content-security-policy']).to.include("script-src 'self'").and.include("frame-ancestors 'none'");
    expect(headers['content-security-policy']).to.not.include('unsafe-inline');
    expect(headers['x-content-type-options']).to.equal('nosniff');
    expect(headers['x-frame-options']).to.equal('DENY');
    const field = w.page.getByLabel('Admin API key');
    await field.waitFor();
    expect(await field.getAttribute('type')).to.equal('password');
    expect(await w.page.title()).to.match(/Sign in/);
    await shot(w.page, 'desktop-01-sign-in');
    w.check();
    await w.page.close();
  });

  it('refuses a reader key, a writer key, a scoped admin key and an unknown key with a clear message, keeping none of them', async () => {
    const w = await openDashboard(browser, server);
    const cases = [
      { key: await server.key('reader'), says: /not an admin key/ },
      { key: await server.key('writer'), says: /not an admin key/ },
      { key: (await createKey({ keys: keyStoreOf(server), orgId: 'default', role: 'admin', name: 'scoped', scopes: ['docs/'] })).secret, says: /scoped to some folders/ },
      { key: `ks_${'A'.repeat(43)}`, says: /unknown or has been revoked/ },
      { key: 'not-a-key', says: /unknown or has been revoked/ },
    ];
    for (const { key, says } of cases) {
      await w.page.getByLabel('Admin API key').fill(key);
      await w.page.getByRole('button', { name: 'Sign in' }).click();
      await w.page.getByRole('alert').getByText(says).waitFor();
      expect(await inPage(w.page, 'sessionStorage.length'), key).to.equal(0);
      expect(await w.page.getByRole('heading', { name: 'Items' }).count()).to.equal(0);
    }
    await w.page.getByLabel('Admin API key').fill(cases[0]?.key ?? '');
    await w.page.getByRole('button', { name: 'Sign in' }).click();
    await w.page.getByText(/not an admin key/).waitFor();
    await shot(w.page, 'desktop-02-sign-in-reader-refused');
    w.check();
    await w.page.close();
  });

  it('signs in with the admin key, keeps it in sessionStorage only, and a sign-out clears it', async () => {
    const w = await openDashboard(browser, server);
    await signIn(w.page, server.adminKey);
    expect(await inPage(w.page, 'Object.values(sessionStorage)')).to.deep.equal([server.adminKey]);
    expect(await inPage(w.page, 'localStorage.length')).to.equal(0);
    expect(await browser.context.cookies()).to.deep.equal([]);
    await w.page.getByText('organization default').waitFor();

    // A reload of the same tab keeps the session; a new tab has its own (empty) sessionStorage.
    await w.page.reload();
    await w.page.getByRole('heading', { name: 'Items', level: 1 }).waitFor();
    const other = await openDashboard(browser, server);
    await other.page.getByLabel('Admin API key').waitFor();
    await other.page.close();

    await w.page.getByRole('button', { name: 'Sign out' }).click();
    await w.page.getByText('Signed out. The key was removed from this tab.').waitFor();
    expect(await inPage(w.page, 'sessionStorage.length')).to.equal(0);
    await w.page.reload();
    await w.page.getByLabel('Admin API key').waitFor();
    w.check();
    await w.page.close();
  });

  it('can be used with the keyboard alone: sign in, then open the trash', async () => {
    const w = await openDashboard(browser, server);
    const { page } = w;
    // The key field has the focus on arrival.
    await page.getByLabel('Admin API key').waitFor();
    expect(await inPage(page, 'document.activeElement?.id')).to.equal('api-key');
    await page.keyboard.type(server.adminKey);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Items', level: 1 }).waitFor();
    let reached = false;
    for (let i = 0; i < 15 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await inPage(page, "document.activeElement?.textContent === 'Trash'");
    }
    expect(reached, 'Tab reaches the Trash link').to.equal(true);
    const outline = await inPage(page, 'getComputedStyle(document.activeElement).outlineStyle');
    expect(outline, 'the focused link shows a focus ring').to.not.equal('none');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Trash', level: 1 }).waitFor();
    await page.getByText('The trash is empty.').waitFor();
    await shot(page, 'desktop-03-keyboard-trash-focus');
    w.check();
    await page.close();
  });

  it('says so in words when the server is down, instead of a blank page', async () => {
    const down = await startTestServer();
    const w = await openDashboard(browser, down);
    await signIn(w.page, down.adminKey);
    await w.page.getByText('No items yet.').waitFor();
    await down.close();
    await w.page.getByRole('button', { name: 'Refresh' }).click();
    await w.page.getByRole('alert').getByText(/Cannot reach the server/).waitFor();
    await w.page.getByRole('button', { name: 'Try again' }).waitFor();
    await shot(w.page, 'desktop-04-server-down');
    expect(w.problems).to.deep.equal([]);
    await w.page.close();
  });
});
