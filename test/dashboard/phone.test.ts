import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { API, deleteItem, launchBrowser, ok, openDashboard, overflowsHorizontally, PHONE, putItem, shot, type Browser, type Watched } from './support.js';

describe('Dashboard in Chromium at phone size, 390×844', function () {
  this.timeout(60_000);

  let server: TestServer;
  let browser: Browser;
  let w: Watched;
  let page: Page;

  /** Every main screen: a screenshot, and no sideways scrolling. */
  async function check(name: string): Promise<void> {
    await shot(page, `phone-${name}`);
    expect(await overflowsHorizontally(page), `${name} is wider than the phone`).to.equal(false);
  }

  before(async () => {
    server = await startTestServer();
    browser = await launchBrowser();
    const k = server.adminKey;
    await putItem(server, k, 'docs/guide.md', '# Guide\n\nFirst draft.\n', 'First draft');
    await putItem(
      server,
      k,
      'docs/guide.md',
      '# Guide\n\nSecond draft with a very long line that goes on and on to see that it wraps instead of widening the page at all.\n\n```\nconst aVeryLongIdentifierInsideACodeBlock = someFunctionCall(withArguments, andMoreArguments, andEvenMore);\n```\n',
      'Second draft with a fairly long commit message that has to wrap on a phone',
    );
    await putItem(server, k, 'projects/a-rather-long-folder-name/with-a-nested-folder/and-a-long-item-name.md', '# Deep\n');
    await putItem(server, k, 'old/gone.md', 'gone\n');
    await deleteItem(server, k, 'old/gone.md');
    await ok(api(`${server.url}${API}/folders/projects`, { method: 'PUT', key: k, body: { requiredWritePermission: 'knowledge:admin' } }));
    w = await openDashboard(browser, server, PHONE);
    page = w.page;
  });
  afterEach(() => w.check());
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('sign in', async () => {
    await page.getByLabel('Admin API key').waitFor();
    await check('01-sign-in');
    await page.getByLabel('Admin API key').fill(server.adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Items', level: 1 }).waitFor();
  });

  it('items: the tree alone, then the item alone with a way back', async () => {
    await page.locator('.tree a[data-path="docs/guide.md"]').waitFor();
    expect(await page.locator('.detail-pane').isVisible(), 'no empty detail pane under the tree').to.equal(false);
    await check('02-items-tree');
    await page.locator('.tree a[data-path="docs/guide.md"]').click();
    await page.locator('.markdown h1', { hasText: 'Guide' }).waitFor();
    expect(await page.locator('.tree-pane').isVisible(), 'the tree is out of the way').to.equal(false);
    await check('03-item-rendered');
    await page.getByRole('tab', { name: 'Details' }).click();
    await check('04-item-details');
    await page.getByRole('link', { name: '← All items' }).click();
    await page.locator('.tree a[data-path="docs/guide.md"]').waitFor();
    await page.locator('.tree a[data-path$="and-a-long-item-name.md"]').click();
    await page.getByRole('tab', { name: 'Details' }).click();
    await page.locator('dl.meta').waitFor();
    // The write requirement comes from the rule of projects/: its link goes there, not to the item's own folder.
    expect(await page.locator('dl.meta dd').nth(7).textContent()).to.include('knowledge:admin (folder rule of projects/)');
    expect(await page.locator('dl.meta dd').nth(7).getByRole('link').getAttribute('href')).to.equal('#/folders/projects');
    expect(await page.locator('dl.meta dd').nth(6).getByRole('link').getAttribute('href')).to.equal(
      '#/folders/projects/a-rather-long-folder-name/with-a-nested-folder',
    );
    await check('05-deep-item-details');
  });

  it('history and diff', async () => {
    await page.getByRole('link', { name: '← All items' }).click();
    await page.locator('.tree a[data-path="docs/guide.md"]').click();
    await page.getByRole('tab', { name: 'History' }).click();
    await page.locator('.diff-output table.diff').waitFor();
    await check('06-history-unified');
    await page.getByLabel('Side by side').check();
    await page.locator('.diff-output table.diff.split').waitFor();
    await check('07-history-side-by-side');
    await page.getByRole('button', { name: 'Roll back to v1' }).click();
    await page.getByRole('dialog').waitFor();
    await shot(page, 'phone-08-rollback-confirm', { fullPage: false });
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  });

  it('trash, keys, folder rules', async () => {
    await page.getByRole('link', { name: 'Trash' }).click();
    await page.locator('table.trash tbody tr', { hasText: 'old/gone.md' }).waitFor();
    await check('09-trash');
    await page.locator('table.trash tbody tr').getByRole('button', { name: 'Purge…' }).click();
    await page.getByRole('dialog').waitFor();
    await shot(page, 'phone-10-purge-confirm', { fullPage: false });
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

    await page.getByRole('link', { name: 'Keys' }).click();
    await page.locator('table.keys tbody tr').first().waitFor();
    await page.getByLabel('Name', { exact: true }).fill('phone-made');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Secret', { exact: true }).waitFor();
    await check('11-keys-created');

    await page.getByRole('link', { name: 'Folder rules' }).click();
    await page.locator('table.rules tbody tr').first().waitFor();
    await check('12-folder-rules');
  });
});
