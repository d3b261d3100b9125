import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { API, deleteItem, getItem, inPage, launchBrowser, ok, openDashboard, putItem, shot, signIn, type Browser, type Watched } from './support.js';

const GUIDE_V1 = '# Guide\n\nFirst draft.\n';
const GUIDE_V2 = '# Guide\n\nSecond draft, with **bold** words.\n\n- one\n- two\n';
const GUIDE_V3 = '# Guide\n\nThird draft, with **bold** words.\n\n- one\n- two\n- three\n\n| Key | Value |\n|:----|------:|\n| a | 1 |\n';

/** Untrusted content: none of it may run, load or navigate anywhere (see README, Dashboard). */
const XSS = {
  'xss/img.md': '<img src=x onerror=alert(1)>\n',
  'xss/script.md': '# Script\n\n<script>window.__xss = 1; alert(1)</script>\n\n<iframe src="https://example.com/"></iframe>\n',
  'xss/links.md':
    '[click me](javascript:alert(1))\n\n[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)\n\n![tracker](https://tracker.example.com/pixel.png)\n\n<a href="https://example.com" onclick="alert(1)">raw link</a>\n',
  'xss/raw.txt': '<img src=x onerror=alert(1)><script>alert(1)</script>\n',
};

async function open(page: Page, path: string): Promise<void> {
  await page.locator(`.tree a[data-path="${path}"]`).click();
  await page.locator('.item-path', { hasText: path }).waitFor();
}

async function tab(page: Page, name: string): Promise<void> {
  await page.getByRole('tab', { name }).click();
}

describe('Dashboard in Chromium: browse items, history, diff, roll back, untrusted content', function () {
  this.timeout(60_000);

  let server: TestServer;
  let browser: Browser;
  let w: Watched;
  let page: Page;
  let guideId: string;

  before(async () => {
    server = await startTestServer();
    browser = await launchBrowser();
    const k = server.adminKey;
    guideId = (await putItem(server, k, 'docs/guide.md', GUIDE_V1, 'First draft')).id;
    await putItem(server, k, 'docs/guide.md', GUIDE_V2, 'Second draft: <img src=x onerror=alert(1)> in a message');
    await putItem(server, k, 'docs/guide.md', GUIDE_V3, 'Third draft');
    await putItem(server, k, 'docs/api/reference.md', '# Reference\n\n`GET /items`\n');
    await putItem(server, k, 'notes/todo.txt', 'buy milk\n');
    await putItem(server, k, 'data/config.json', '{"a":1,"b":[1,2]}');
    await putItem(server, k, 'board/minutes.md', '# Minutes\n');
    await putItem(server, k, 'readme.md', '# Top level\n');
    await ok(api(`${server.url}${API}/folders/board`, { method: 'PUT', key: k, body: { requiredReadPermission: 'knowledge:admin' } }));
    for (const [path, content] of Object.entries(XSS)) await putItem(server, k, path, content);
    w = await openDashboard(browser, server);
    page = w.page;
    await signIn(page, k);
  });
  afterEach(() => w.check());
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows the folder tree, filters it by path, and says so when nothing matches', async () => {
    const tree = page.locator('.tree');
    await tree.locator('a[data-path="docs/guide.md"]').waitFor();
    const shown = await tree.locator('a[data-path]').evaluateAll((as) => as.map((a) => a.getAttribute('data-path')));
    expect(shown).to.include.members(['docs/guide.md', 'docs/api/reference.md', 'notes/todo.txt', 'data/config.json', 'readme.md']);
    expect(await page.locator('.tree .folder-name').allTextContents()).to.include.members(['docs/', 'api/', 'notes/', 'board/']);
    await page.getByText('10 items').waitFor();
    await shot(page, 'desktop-10-items-tree');

    await page.getByLabel('Filter by path').fill('api/');
    await page.getByText('1 of 10 items match').waitFor();
    expect(await tree.locator('a[data-path]').evaluateAll((as) => as.map((a) => a.getAttribute('data-path')))).to.deep.equal(['docs/api/reference.md']);
    await page.getByLabel('Filter by path').fill('nothing-like-this');
    await page.getByText('No item path contains “nothing-like-this”.').waitFor();
    await page.getByLabel('Filter by path').fill('');
    await tree.locator('a[data-path="readme.md"]').waitFor();
  });

  it('opens an item: markdown rendered, raw source, metadata and permission requirements', async () => {
    await open(page, 'docs/guide.md');
    expect(page.url()).to.match(/#\/items\/docs\/guide\.md$/);
    const rendered = page.locator('.markdown');
    await rendered.locator('h1', { hasText: 'Guide' }).waitFor();
    expect(await rendered.locator('strong').textContent()).to.equal('bold');
    expect(await rendered.locator('li').count()).to.equal(3);
    expect(await rendered.locator('td.align-right').textContent()).to.equal('1');
    await shot(page, 'desktop-11-item-rendered');

    await tab(page, 'Raw');
    expect(await page.locator('pre.raw:visible').textContent()).to.equal(GUIDE_V3);

    await tab(page, 'Details');
    const meta = page.locator('dl.meta');
    await meta.waitFor();
    expect(await meta.textContent()).to.include(guideId);
    expect(await meta.locator('dd').nth(6).textContent()).to.match(/inherit → knowledge:read \(organization default\)/);
    expect(await meta.locator('dd').nth(7).textContent()).to.match(/inherit → knowledge:write \(organization default\)/);
    await shot(page, 'desktop-12-item-details');

    // A folder rule shows as the source of an inherited requirement, with the way to edit it.
    await open(page, 'board/minutes.md');
    await tab(page, 'Details');
    expect(await page.locator('dl.meta dd').nth(6).textContent()).to.match(/inherit → knowledge:admin \(folder rule of board\/\)/);
    await page.locator('dl.meta').getByRole('link', { name: 'Edit the rule of board/' }).first().waitFor();

    // Non-markdown items: JSON pretty-printed, text as it is.
    await open(page, 'data/config.json');
    expect(await page.locator('.tab-panel:visible pre').textContent()).to.equal('{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}');
    await open(page, 'notes/todo.txt');
    expect(await page.locator('.tab-panel:visible pre').textContent()).to.equal('buy milk\n');
  });

  it('shows the history (who, when, message) and a unified or side-by-side diff between any two versions', async () => {
    await open(page, 'docs/guide.md');
    await tab(page, 'History');
    const rows = page.locator('table.versions tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).to.equal(3);
    const first = await rows.nth(0).textContent();
    expect(first).to.include('v3').and.include('Third draft').and.include('update');
    const last = await rows.nth(2).textContent();
    expect(last).to.include('v1').and.include('First draft').and.include('create').and.include('admin');
    // A commit message is untrusted too: shown as text.
    expect(await rows.nth(1).locator('.message').textContent()).to.equal('Second draft: <img src=x onerror=alert(1)> in a message');
    expect(await page.locator('table.versions img').count()).to.equal(0);

    // By default: the newest version against the one before.
    const diff = page.locator('.diff-output table.diff.unified');
    await diff.waitFor();
    expect(await page.locator('.diff-summary').textContent()).to.include('From version 2 to version 3');
    expect(await diff.locator('tr.add td.code').allTextContents()).to.deep.equal(
      ['+added: Third draft, with **bold** words.', '+added: - three', '+added: ', '+added: | Key | Value |', '+added: |:----|------:|', '+added: | a | 1 |'],
    );
    expect(await diff.locator('tr.del td.code').allTextContents()).to.deep.equal(['−removed: Second draft, with **bold** words.']);
    // Line numbers: old 3 removed, new 3 added (after the unchanged heading and blank line).
    expect(await diff.locator('tr.del td.num').allTextContents()).to.deep.equal(['3', '']);
    expect(await diff.locator('tr.add').first().locator('td.num').allTextContents()).to.deep.equal(['', '3']);
    await shot(page, 'desktop-13-history-unified-diff');

    await page.getByLabel('From').selectOption('1');
    await page.locator('.diff-summary', { hasText: 'From version 1 to version 3' }).waitFor();
    await page.getByLabel('Side by side').check();
    const split = page.locator('.diff-output table.diff.split');
    await split.waitFor();
    expect(await split.locator('td.code.del').first().textContent()).to.include('First draft.');
    expect(await split.locator('td.code.add').first().textContent()).to.include('Third draft');
    await shot(page, 'desktop-14-history-side-by-side');

    // View one version's content.
    await rows.nth(2).getByRole('button', { name: 'View' }).click();
    await page.locator('.version-preview pre', { hasText: 'First draft.' }).waitFor();
    expect(await page.locator('.version-preview pre').textContent()).to.equal(GUIDE_V1);
  });

  it('rolls back to a version only after the confirmation, as a new version', async () => {
    await open(page, 'docs/guide.md');
    await tab(page, 'History');
    await page.locator('table.versions tbody tr').first().waitFor();
    expect(await page.locator('table.versions').getByRole('button', { name: 'Roll back to v3' }).count(), 'no roll back to the current version').to.equal(0);

    // Cancel: nothing happens.
    await page.getByRole('button', { name: 'Roll back to v1' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('The item gets the content of version 1 as a new version 4.').waitFor();
    await shot(page, 'desktop-15-rollback-confirm', { fullPage: false });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    let item = (await getItem(server, server.adminKey, 'docs/guide.md')).body?.data?.item as { content: string };
    expect(item.content).to.equal(GUIDE_V3);

    // Confirm: a new version 4 with version 1's content.
    await page.getByRole('button', { name: 'Roll back to v1' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Roll back to version 1' }).click();
    await page.getByText('Rolled back docs/guide.md to version 1.').waitFor();
    await page.locator('table.versions tbody tr').first().waitFor();
    expect(await page.locator('table.versions tbody tr').count()).to.equal(4);
    expect(await page.locator('table.versions tbody tr').first().textContent()).to.include('v4').and.include('Roll back docs/guide.md to version 1');
    item = (await getItem(server, server.adminKey, 'docs/guide.md')).body?.data?.item as { content: string };
    expect(item.content).to.equal(GUIDE_V1);
    await tab(page, 'Rendered');
    await page.locator('.markdown', { hasText: 'First draft.' }).waitFor();
  });

  it('shows a 409 in words when a roll back meets an item deleted meanwhile', async () => {
    await putItem(server, server.adminKey, 'docs/race.md', 'one\n');
    await putItem(server, server.adminKey, 'docs/race.md', 'two\n');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await open(page, 'docs/race.md');
    await tab(page, 'History');
    await page.getByRole('button', { name: 'Roll back to v1' }).waitFor();
    await deleteItem(server, server.adminKey, 'docs/race.md');
    await page.getByRole('button', { name: 'Roll back to v1' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Roll back to version 1' }).click();
    const notice = page.locator('.notice.error');
    await notice.getByText(/Conflict \(409\): A deleted item exists at this path — restore it first/).waitFor();
    await shot(page, 'desktop-16-rollback-409');
    await ok(api(`${server.url}${API}/trash/restore`, { method: 'POST', key: server.adminKey, body: { path: 'docs/race.md' } }));
  });

  it('renders untrusted content inert: no script runs, no element is injected, nothing is fetched', async () => {
    await page.getByRole('button', { name: 'Refresh' }).click();
    await open(page, 'xss/img.md');
    const md = page.locator('.markdown');
    await md.waitFor();
    expect(await page.locator('.notice p').count(), 'the last action\'s notice is gone once another item is opened').to.equal(0);
    expect(await md.textContent()).to.include('<img src=x onerror=alert(1)>');
    expect(await md.locator('img').count()).to.equal(0);
    await shot(page, 'desktop-17-xss-img-inert');

    await open(page, 'xss/script.md');
    await md.locator('h1', { hasText: 'Script' }).waitFor();
    expect(await md.textContent()).to.include('<script>window.__xss = 1; alert(1)</script>');
    expect(await md.locator('script, iframe').count()).to.equal(0);

    await open(page, 'xss/links.md');
    await md.locator('.blocked-image').waitFor();
    expect(await md.locator('a[href^="javascript:"], a[href^="data:"], a[onclick], img').count()).to.equal(0);
    expect(await md.textContent()).to.include('[click me](javascript:alert(1))').and.include('image not loaded: tracker');

    await open(page, 'xss/raw.txt');
    expect(await page.locator('.tab-panel:visible pre').textContent()).to.equal(XSS['xss/raw.txt']);
    await tab(page, 'Raw');
    expect(await page.locator('.tab-panel:visible pre').textContent()).to.equal(XSS['xss/raw.txt']);

    expect(await inPage(page, 'window.__xss')).to.equal(undefined);
    expect(await page.locator('#app script, #app iframe, #app [onerror], #app [onclick]').count()).to.equal(0);
    expect(w.requests.some((u) => u.includes('example.com'))).to.equal(false);
  });

  it('moves an item to the trash from the dashboard, after a confirmation', async () => {
    await putItem(server, server.adminKey, 'notes/old.md', 'old\n');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await open(page, 'notes/old.md');
    await page.getByRole('button', { name: 'Move to trash' }).click();
    await page.getByRole('dialog').getByText('restore it from the Trash with the same id and history').waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Move to trash' }).click();
    await page.getByText('Moved notes/old.md to the trash.').waitFor();
    await page.locator('.tree a[data-path="notes/todo.txt"]').waitFor();
    expect(await page.locator('.tree a[data-path="notes/old.md"]').count()).to.equal(0);
    expect((await getItem(server, server.adminKey, 'notes/old.md')).status).to.equal(404);
    expect(page.url()).to.match(/#\/items$/);
  });
});
