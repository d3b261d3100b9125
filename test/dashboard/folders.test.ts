import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { api, type TestServer } from '../support/server.js';
import { API, getItem, ok, putItem, shot, signedInDashboard } from './support.js';

describe('Dashboard in Chromium: folder rules', function () {
  this.timeout(60_000);

  let server: TestServer;
  let page: Page;
  let reader: string;

  const session = signedInDashboard(async (server) => {
    reader = await server.key('reader');
    await putItem(server, server.adminKey, 'board/minutes.md', '# Minutes\n');
    await putItem(server, server.adminKey, 'docs/guide.md', '# Guide\n');
  });
  before(() => ({ server, page } = session));

  it('says when no folder has a rule', async () => {
    await page.getByRole('link', { name: 'Folder rules' }).click();
    await page.getByText('No folder has a rule').waitFor();
    await shot(page, 'desktop-40-folders-empty');
  });

  it('sets a folder\'s read requirement, in effect at once for other keys', async () => {
    expect((await getItem(server, reader, 'board/minutes.md')).status).to.equal(200);
    await page.getByLabel('Folder', { exact: true }).fill('board');
    await page.getByLabel('Read requirement', { exact: true }).selectOption('knowledge:admin');
    await page.getByRole('button', { name: 'Save rule' }).click();
    await page.getByText('Saved the rule of board/.').waitFor();
    const row = page.locator('table.rules tbody tr', { hasText: 'board/' });
    await row.waitFor();
    expect(await row.textContent()).to.include('knowledge:admin').and.include('inherit');
    await shot(page, 'desktop-41-folder-rule-saved');

    const rule = await ok(api(`${server.url}${API}/folders/board`, { key: server.adminKey }));
    expect(rule.body?.data?.folder).to.include({ folder: 'board', requiredReadPermission: 'knowledge:admin', requiredWritePermission: 'inherit' });
    expect((await getItem(server, reader, 'board/minutes.md')).status, 'hidden from a reader now').to.equal(404);
  });

  it('opens a folder\'s rule from an item\'s details, edits it, and removes it with inherit', async () => {
    await page.getByRole('link', { name: 'Items' }).click();
    await page.locator('.tree a[data-path="board/minutes.md"]').click();
    await page.getByRole('tab', { name: 'Details' }).click();
    expect(await page.locator('dl.meta dd').nth(6).textContent()).to.include('knowledge:admin (folder rule of board/)');
    await page.locator('dl.meta').getByRole('link', { name: 'Edit the rule of board/' }).first().click();
    await page.getByRole('heading', { name: 'Folder rules', level: 1 }).waitFor();
    await page.locator('table.rules tbody tr').first().waitFor();
    expect(await page.getByLabel('Folder', { exact: true }).inputValue()).to.equal('board');
    expect(await page.getByLabel('Read requirement', { exact: true }).inputValue()).to.equal('knowledge:admin');

    await page.getByLabel('Write requirement', { exact: true }).selectOption('knowledge:admin');
    await page.getByRole('button', { name: 'Save rule' }).click();
    await page.locator('table.rules tbody tr', { hasText: 'board/' }).getByText('knowledge:admin').nth(1).waitFor();

    await page.getByLabel('Read requirement', { exact: true }).selectOption('inherit');
    await page.getByLabel('Write requirement', { exact: true }).selectOption('inherit');
    await page.getByRole('button', { name: 'Save rule' }).click();
    await page.getByText('Removed the rule of board/').waitFor();
    await page.getByText('No folder has a rule').waitFor();
    expect((await getItem(server, reader, 'board/minutes.md')).status).to.equal(200);
  });

  it('shows a bad folder name\'s 400 in words', async () => {
    await page.getByLabel('Folder', { exact: true }).fill('Bad Folder');
    await page.getByRole('button', { name: 'Save rule' }).click();
    await page.getByText(/Refused \(400\): Invalid path/).waitFor();
  });
});
