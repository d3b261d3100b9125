import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { keyWithId } from '../http/adminApi.js';
import { api, type TestServer } from '../support/server.js';
import { API, DESKTOP, getItem, ok, openDashboard, overflowsHorizontally, PHONE, putItem, shot, signedInDashboard, signIn, type Browser } from './support.js';

/** Editing in the dashboard: create, edit (two admins never overwrite each other silently), move, revert, undo a key. */

async function content(server: TestServer, path: string): Promise<string | null> {
  const r = await getItem(server, server.adminKey, path);
  return r.status === 404 ? null : ((r.body?.data?.item as { content: string }).content);
}

/** Opens the item afresh (by way of the list, so that an item already open is loaded again). */
async function open(page: Page, path: string): Promise<void> {
  const origin = new URL(page.url()).origin;
  await page.goto(`${origin}/dashboard/#/items`);
  await page.goto(`${origin}/dashboard/#/items/${path}`);
  await page.locator('.item-path', { hasText: path }).waitFor();
}

async function editorText(page: Page): Promise<string> {
  return page.getByLabel('Content (markdown)').inputValue();
}

describe('Dashboard in Chromium: create, edit, move, revert', function () {
  this.timeout(90_000);

  let server: TestServer;
  let browser: Browser;
  let page: Page;

  const session = signedInDashboard(async (server) => {
    await putItem(server, server.adminKey, 'docs/guide.md', '# Guide\n\nFirst draft.\n');
  });
  before(() => ({ server, browser, page } = session));

  it('creates an item with a markdown editor and a live preview that renders no raw HTML', async () => {
    await page.getByRole('button', { name: 'New item' }).click();
    await page.getByLabel('Path', { exact: true }).fill('notes/hello.md');
    const text = '# Hello\n\nSome **bold** words.\n\n<img src=x onerror=alert(1)><script>alert(2)</script>\n';
    await page.getByLabel('Content (markdown)').fill(text);
    const preview = page.locator('#editor-preview');
    await preview.locator('h1', { hasText: 'Hello' }).waitFor();
    expect(await preview.locator('strong').textContent()).to.equal('bold');
    expect(await preview.locator('img, script').count(), 'raw HTML in the preview').to.equal(0);
    expect(await preview.textContent()).to.include('<img src=x onerror=alert(1)>');
    await shot(page, 'desktop-60-editor-new');
    await page.getByLabel('Message').fill('First note');
    await page.getByRole('button', { name: 'Create item' }).click();
    await page.locator('.item-path', { hasText: 'notes/hello.md' }).waitFor();
    await page.getByText('Created notes/hello.md.').waitFor();
    expect(await content(server, 'notes/hello.md')).to.equal(text);
    const history = (await ok(api(`${server.url}${API}/history/notes/hello.md`, { key: server.adminKey }))).body?.data?.versions as Array<{ message: string }>;
    expect(history[0]?.message).to.equal('First note');
  });

  it('a new item whose path was taken meanwhile is not overwritten (If-None-Match: *)', async () => {
    await page.getByRole('button', { name: 'New item' }).click();
    await page.getByLabel('Path', { exact: true }).fill('notes/race.md');
    await page.getByLabel('Content (markdown)').fill('mine\n');
    await putItem(server, server.adminKey, 'notes/race.md', 'theirs\n');
    await page.getByRole('button', { name: 'Create item' }).click();
    await page.getByText(/Not saved: An item was created at notes\/race\.md after you started \(412\)/).waitFor();
    expect(await editorText(page)).to.equal('mine\n');
    expect(await content(server, 'notes/race.md')).to.equal('theirs\n');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Discard' }).click();
  });

  it('edits an item: the editor opens with its content and saves it', async () => {
    await open(page, 'docs/guide.md');
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    expect(await editorText(page)).to.equal('# Guide\n\nFirst draft.\n');
    await page.getByLabel('Content (markdown)').fill('# Guide\n\nSecond draft.\n');
    await page.locator('#editor-preview').getByText('Second draft.').waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved docs/guide.md.').waitFor();
    await page.locator('.markdown').getByText('Second draft.').waitFor();
    expect(await content(server, 'docs/guide.md')).to.equal('# Guide\n\nSecond draft.\n');
  });

  it('two admins edit the same item: the second save is refused (412), keeps its text, shows theirs, overwrites only on purpose', async () => {
    const other = await openDashboard(browser, server);
    try {
      await signIn(other.page, server.adminKey);
      await page.bringToFront();
      await open(page, 'docs/guide.md');
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await page.getByLabel('Content (markdown)').fill('Admin A wrote this.\n');
      await other.page.bringToFront();
      await open(other.page, 'docs/guide.md');
      await other.page.getByRole('button', { name: 'Edit', exact: true }).click();
      await other.page.getByLabel('Content (markdown)').fill('Admin B wrote this.\n');
      await other.page.getByRole('button', { name: 'Save', exact: true }).click();
      await other.page.getByText('Saved docs/guide.md.').waitFor();

      // The first admin's tab in front again (a background tab's timers are throttled: slow, not wrong).
      await page.bringToFront();
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText(/Not saved: Someone else changed docs\/guide\.md after you opened it \(412\)/).waitFor();
      expect(await editorText(page)).to.equal('Admin A wrote this.\n');
      expect(await content(server, 'docs/guide.md')).to.equal('Admin B wrote this.\n');
      // Saving again blindly is refused again: the condition is still the version A opened.
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText(/\(412\)/).waitFor();
      expect(await content(server, 'docs/guide.md')).to.equal('Admin B wrote this.\n');

      await page.getByRole('button', { name: 'Show their version' }).click();
      expect(await page.locator('#their-content').textContent()).to.equal('Admin B wrote this.\n');
      await shot(page, 'desktop-61-editor-conflict');
      await page.getByRole('button', { name: 'Save my text over theirs' }).click();
      await page.getByText('Saved docs/guide.md.').waitFor();
      expect(await content(server, 'docs/guide.md')).to.equal('Admin A wrote this.\n');
      other.check();
    } finally {
      await other.page.close();
    }
  });

  it('moves an item: same id, new path, old one gone', async () => {
    const before = (await getItem(server, server.adminKey, 'notes/hello.md')).body?.data?.item as { id: string };
    await open(page, 'notes/hello.md');
    await page.getByRole('button', { name: 'Move…' }).click();
    await page.getByRole('dialog').getByLabel('New path').fill('archive/hello.md');
    await page.getByRole('dialog').getByRole('button', { name: 'Move', exact: true }).click();
    await page.getByText('Moved notes/hello.md to archive/hello.md.').waitFor();
    await page.locator('.item-path', { hasText: 'archive/hello.md' }).waitFor();
    expect(await content(server, 'notes/hello.md')).to.equal(null);
    const after = (await getItem(server, server.adminKey, 'archive/hello.md')).body?.data?.item as { id: string };
    expect(after.id).to.equal(before.id);
  });

  it('a move onto a taken path is refused in words, nothing moved', async () => {
    await open(page, 'archive/hello.md');
    await page.getByRole('button', { name: 'Move…' }).click();
    await page.getByRole('dialog').getByLabel('New path').fill('docs/guide.md');
    await page.getByRole('dialog').getByRole('button', { name: 'Move', exact: true }).click();
    await page.getByText('Move failed. Conflict (409): Path conflict: "docs/guide.md" is taken.').waitFor();
    expect(await content(server, 'archive/hello.md')).not.to.equal(null);
  });

  it('history → revert this change; a change made after it by someone else is listed, then undone only on request', async () => {
    await putItem(server, server.adminKey, 'docs/plan.md', 'plan v1\n');
    await putItem(server, server.adminKey, 'docs/plan.md', 'plan v2\n');
    await open(page, 'docs/plan.md');
    await page.getByRole('tab', { name: 'History' }).click();
    await page.locator('table.versions tbody tr', { hasText: 'v2' }).getByRole('button', { name: 'Revert this change' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revert this change' }).click();
    await page.getByText(/Reverted the change of version 2/).waitFor();
    expect(await content(server, 'docs/plan.md')).to.equal('plan v1\n');

    // Someone else writes v4 after the revert (v3): reverting v3 would drop theirs.
    const otherAdmin = await keyWithId(server, 'admin', 'Olga Other');
    await putItem(server, otherAdmin.secret, 'docs/plan.md', 'plan by Olga\n');
    await open(page, 'docs/plan.md');
    await page.getByRole('tab', { name: 'History' }).click();
    await page.locator('table.versions tbody tr', { hasText: 'v3' }).getByRole('button', { name: 'Revert this change' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revert this change' }).click();
    const outcome = page.locator('.revert-outcome');
    await outcome.getByText('1 item was left alone: changed by someone else since.').waitFor();
    expect(await outcome.locator('table.conflicts').textContent()).to.include('docs/plan.md').and.include('Olga Other').and.include('v4');
    expect(await content(server, 'docs/plan.md')).to.equal('plan by Olga\n');
    await shot(page, 'desktop-62-revert-conflict');
    await outcome.getByRole('button', { name: 'Undo these too, overwriting their changes' }).click();
    await page.getByText(/Reverted the change of version 3/).waitFor();
    expect(await content(server, 'docs/plan.md')).to.equal('plan v2\n');
  });

  it('history → revert of a move follows the item back to its old path; revert of a create says where it went', async () => {
    await putItem(server, server.adminKey, 'drafts/wander.md', 'wandering\n');
    await ok(api(`${server.url}${API}/move`, { method: 'POST', key: server.adminKey, body: { from: 'drafts/wander.md', to: 'final/wander.md' } }));
    await open(page, 'final/wander.md');
    await page.getByRole('tab', { name: 'History' }).click();
    await page.locator('table.versions tbody tr', { hasText: 'v2' }).getByRole('button', { name: 'Revert this change' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revert this change' }).click();
    await page.locator('.item-path', { hasText: 'drafts/wander.md' }).waitFor();
    await page.getByText('Reverted the change of version 2 (drafts/wander.md).').waitFor();
    expect(await content(server, 'final/wander.md')).to.equal(null);

    await putItem(server, server.adminKey, 'drafts/brief.md', 'brief\n');
    await open(page, 'drafts/brief.md');
    await page.getByRole('tab', { name: 'History' }).click();
    await page.locator('table.versions tbody tr', { hasText: 'v1' }).getByRole('button', { name: 'Revert this change' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revert this change' }).click();
    await page.getByText('There is no item at drafts/brief.md now: it may have been moved, or put in the trash.').waitFor();
    const trash = (await ok(api(`${server.url}${API}/trash`, { key: server.adminKey }))).body?.data?.items as Array<{ path: string }>;
    expect(trash.map((i) => i.path)).to.include('drafts/brief.md');
  });

  it("keys → undo this key's changes since…: the agent's changes undone in one commit, others' listed, then forced", async () => {
    const agent = await keyWithId(server, 'writer', 'rogue-agent');
    await putItem(server, agent.secret, 'agent/junk.md', 'junk\n');
    await putItem(server, agent.secret, 'docs/guide.md', 'agent vandalism\n');
    await putItem(server, server.adminKey, 'docs/faq.md', 'faq v1\n');
    await putItem(server, agent.secret, 'docs/faq.md', 'agent faq\n');
    const other = await keyWithId(server, 'admin', 'Human Fixer');
    await putItem(server, other.secret, 'docs/faq.md', 'faq fixed by a human\n');

    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.locator('table.keys tbody tr', { hasText: 'rogue-agent' }).getByRole('button', { name: 'Undo changes since…' }).click();
    const dialog = page.getByRole('dialog');
    // The default (an hour ago) covers everything the agent did.
    expect(await dialog.getByLabel('Since (your local time)').inputValue()).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/);
    await dialog.getByRole('button', { name: 'Undo changes' }).click();
    const outcome = page.locator('.undo-result');
    await outcome.getByText(/Undone in one new commit/).waitFor();
    expect(await outcome.locator('.reverted-paths').textContent()).to.include('agent/junk.md').and.include('docs/guide.md');
    expect(await outcome.locator('table.conflicts').textContent()).to.include('docs/faq.md').and.include('Human Fixer');
    await shot(page, 'desktop-63-undo-key');
    expect(await content(server, 'agent/junk.md')).to.equal(null);
    expect(await content(server, 'docs/guide.md')).to.equal('Admin A wrote this.\n');
    expect(await content(server, 'docs/faq.md')).to.equal('faq fixed by a human\n');

    await outcome.getByRole('button', { name: 'Undo these too, overwriting their changes' }).click();
    await outcome.locator('.reverted-paths', { hasText: 'docs/faq.md' }).waitFor();
    expect(await content(server, 'docs/faq.md')).to.equal('faq v1\n');
  });

  it('the editor fits a phone: one column, no sideways scrolling', async () => {
    await page.setViewportSize(PHONE);
    try {
      await open(page, 'docs/guide.md');
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await page.getByLabel('Content (markdown)').waitFor();
      expect(await overflowsHorizontally(page)).to.equal(false);
      const [text, preview] = await Promise.all([page.locator('#editor-content').boundingBox(), page.locator('#editor-preview').boundingBox()]);
      expect(preview?.y ?? 0, 'preview below the text, not beside it').to.be.greaterThan((text?.y ?? 0) + (text?.height ?? 0) - 1);
      await shot(page, 'phone-60-editor');
      await page.getByRole('button', { name: 'Cancel' }).click();
    } finally {
      await page.setViewportSize(DESKTOP);
    }
  });
});
