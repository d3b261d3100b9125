import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { api, type TestServer } from '../support/server.js';
import { API, deleteItem, getItem, inPage, ok, putItem, shot, signedInDashboard } from './support.js';

describe('Dashboard in Chromium: the trash, restore and purge', function () {
  this.timeout(60_000);

  let server: TestServer;
  let page: Page;
  const trashRow = (path: string) => page.locator('table.trash tbody tr', { hasText: path });

  const session = signedInDashboard(async (server) => {
    await putItem(server, server.adminKey, 'docs/keep.md', '# Keep\n');
  });
  before(() => ({ server, page } = session));

  it('says the trash is empty when it is', async () => {
    await page.getByRole('link', { name: 'Trash' }).click();
    await page.getByText('The trash is empty.').waitFor();
    await shot(page, 'desktop-20-trash-empty');
  });

  it('lists items deleted through the API with when and by whom, and restores one with its id and history', async () => {
    const deleter = await server.key('admin', 'default', 'cleanup-bot');
    const restored = await putItem(server, server.adminKey, 'docs/restore-me.md', '# Restore me\n', 'Write it');
    await putItem(server, server.adminKey, 'old/purge-me.md', 'old\n');
    await deleteItem(server, deleter, 'docs/restore-me.md');
    await deleteItem(server, deleter, 'old/purge-me.md');

    await page.getByRole('button', { name: 'Refresh' }).click();
    await trashRow('docs/restore-me.md').waitFor();
    expect(await page.locator('table.trash tbody tr').count()).to.equal(2);
    const row = await trashRow('docs/restore-me.md').textContent();
    expect(row).to.include('cleanup-bot').and.match(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}/);
    await shot(page, 'desktop-21-trash-list');

    await trashRow('docs/restore-me.md').getByRole('button', { name: 'Restore' }).click();
    await page.getByText('Restored docs/restore-me.md.').waitFor();
    await trashRow('old/purge-me.md').waitFor();
    expect(await trashRow('docs/restore-me.md').count()).to.equal(0);

    // Back in the tree, with the same id, and its history says it was restored.
    await page.getByRole('link', { name: 'Open it' }).click();
    await page.locator('.item-path', { hasText: 'docs/restore-me.md' }).waitFor();
    await page.locator('.tree a[data-path="docs/restore-me.md"]').waitFor();
    await page.getByRole('tab', { name: 'Details' }).click();
    expect(await page.locator('dl.meta').textContent()).to.include(restored.id);
    await page.getByRole('tab', { name: 'History' }).click();
    await page.locator('table.versions tbody tr').first().waitFor();
    const actions = await page.locator('table.versions .action').allTextContents();
    expect(actions).to.deep.equal(['restore', 'delete', 'create']);
    await shot(page, 'desktop-22-restored-in-tree');
    const res = await getItem(server, server.adminKey, 'docs/restore-me.md');
    expect((res.body?.data?.item as { id: string }).id).to.equal(restored.id);
  });

  it('purges only after a confirmation that says it cannot be undone from the dashboard', async () => {
    await page.getByRole('link', { name: 'Trash' }).click();
    await trashRow('old/purge-me.md').waitFor();
    await trashRow('old/purge-me.md').getByRole('button', { name: 'Purge…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Purge old/purge-me.md?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).to.include('This cannot be undone from the dashboard.');
    expect(await inPage(page, 'document.activeElement?.textContent'), 'Cancel has the focus').to.equal('Cancel');
    await shot(page, 'desktop-23-purge-confirm', { fullPage: false });

    // Escape cancels, like the Cancel button.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await trashRow('old/purge-me.md').count()).to.equal(1);
    let trash = await ok(api(`${server.url}${API}/trash`, { key: server.adminKey }));
    expect((trash.body?.data?.items as unknown[]).length).to.equal(1);

    await trashRow('old/purge-me.md').getByRole('button', { name: 'Purge…' }).click();
    await dialog.getByRole('button', { name: 'Purge permanently' }).click();
    await page.getByText('Purged old/purge-me.md. The path is free again.').waitFor();
    await page.getByText('The trash is empty.').waitFor();
    trash = await ok(api(`${server.url}${API}/trash`, { key: server.adminKey }));
    expect(trash.body?.data?.items).to.deep.equal([]);
    // The path is free: a new PUT makes a new item.
    expect((await putItem(server, server.adminKey, 'old/purge-me.md', 'new\n')).path).to.equal('old/purge-me.md');
  });

  it('shows a 404 in words when an item was already restored elsewhere', async () => {
    await putItem(server, server.adminKey, 'docs/twice.md', 'x\n');
    await deleteItem(server, server.adminKey, 'docs/twice.md');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await trashRow('docs/twice.md').waitFor();
    await ok(api(`${server.url}${API}/trash/restore`, { method: 'POST', key: server.adminKey, body: { path: 'docs/twice.md' } }));
    await trashRow('docs/twice.md').getByRole('button', { name: 'Restore' }).click();
    await page.locator('.notice.error').getByText('Restore failed. Not found (404): Knowledge item not found.').waitFor();
  });
});
