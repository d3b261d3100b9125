import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.js';
import { inPage, launchBrowser, openDashboard, overflowsHorizontally, PHONE, DESKTOP, putItem, shot, signIn, type Browser, type Watched } from './support.js';

const KITCHEN = 'A tomato sauce: simmer tomatoes with basil and garlic for an hour.\n';
/** Untrusted content in a snippet: shown as text, never as an element. */
const XSS = '<img src=x onerror=alert(1)> rambutan <script>window.__xss = 1</script>\n';

/** Types a query into the search box and sends it with Enter, as a person would. */
async function search(page: Page, q: string): Promise<void> {
  const box = page.getByLabel('Search content');
  await box.fill(q);
  await box.press('Enter');
}

const results = (page: Page) => page.locator('.result-list a[data-path]');
const resultPaths = (page: Page): Promise<string[]> => results(page).evaluateAll((as) => as.map((a) => a.getAttribute('data-path') ?? ''));

describe('Dashboard in Chromium: search over item content', function () {
  this.timeout(60_000);

  let server: TestServer;
  let browser: Browser;
  let w: Watched;
  let page: Page;

  before(async () => {
    server = await startTestServer();
    browser = await launchBrowser();
    const k = server.adminKey;
    await putItem(server, k, 'notes/garden.md', 'The tomato plants need water every morning. Basil grows beside them.\n');
    await putItem(server, k, 'notes/kitchen.md', KITCHEN);
    await putItem(server, k, 'recipes/tomato-soup.md', 'Roast the tomato halves, then blend.\n');
    await putItem(server, k, 'recipes/leek.md', 'Vegetable soup with leeks, carrots and a little thyme.\n');
    await putItem(server, k, 'xss/snippet.md', XSS);
    // More than one page (the server's default page is 20).
    for (let i = 1; i <= 25; i++) await putItem(server, k, `many/p${String(i).padStart(2, '0')}.md`, `Durian number ${i}.\n`);
    w = await openDashboard(browser, server);
    page = w.page;
    await signIn(page, k);
    await page.locator('.tree a[data-path="notes/kitchen.md"]').waitFor();
  });
  afterEach(() => w.check());
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('searches from the box above the tree: results replace the tree, each with its path and the matches marked', async () => {
    await search(page, 'garlic');
    await results(page).first().waitFor();
    expect(await resultPaths(page)).to.deep.equal(['notes/kitchen.md']);
    expect(await page.locator('.tree').isVisible(), 'the tree is hidden while a search is on').to.equal(false);
    await page.getByText('1 item matches “garlic”.').waitFor();
    const snippet = results(page).first().locator('.snippet');
    expect(await snippet.locator('mark').allTextContents()).to.deep.equal(['garlic']);
    expect(await snippet.textContent()).to.include('simmer tomatoes with basil and garlic').and.not.match(/[«»]/);

    await search(page, 'tomato');
    await page.getByText('3 items match “tomato”.').waitFor();
    expect(await resultPaths(page)).to.have.members(['notes/garden.md', 'notes/kitchen.md', 'recipes/tomato-soup.md']);
    expect(await page.locator('.result-list mark').count()).to.be.at.least(3);
    await shot(page, 'desktop-30-search-results');
  });

  it('opens a result as the tree does, and keeps the results beside it', async () => {
    await search(page, 'garlic');
    await results(page).first().click();
    await page.locator('.item-path', { hasText: 'notes/kitchen.md' }).waitFor();
    expect(page.url()).to.match(/#\/items\/notes\/kitchen\.md$/);
    await page.locator('.markdown', { hasText: 'simmer tomatoes with basil and garlic' }).waitFor();
    await page.getByRole('tab', { name: 'Raw' }).click();
    expect(await page.locator('pre.raw:visible').textContent()).to.equal(KITCHEN);
    expect(await results(page).first().getAttribute('aria-current')).to.equal('page');
    await shot(page, 'desktop-31-search-result-open');
  });

  it('follows the cursor with More results', async () => {
    await search(page, 'durian');
    await page.getByText('The best 20 items matching “durian”; more follow.').waitFor();
    expect(await results(page).count()).to.equal(20);
    await page.getByRole('button', { name: 'More results' }).click();
    await page.getByText('25 items match “durian”.').waitFor();
    expect(await results(page).count()).to.equal(25);
    expect(new Set(await resultPaths(page)).size, 'no result twice').to.equal(25);
    expect(await page.getByRole('button', { name: 'More results' }).count(), 'no more after the last page').to.equal(0);
    expect(await inPage(page, 'document.activeElement?.dataset?.path'), 'the focus moves to the first new result').to.equal((await resultPaths(page))[20]);
  });

  it('searches in one folder when one is chosen', async () => {
    await page.getByLabel('in', { exact: true }).selectOption('notes');
    await search(page, 'tomato');
    await page.getByText('2 items match “tomato” in notes/.').waitFor();
    expect(await resultPaths(page)).to.have.members(['notes/garden.md', 'notes/kitchen.md']);
    await page.getByLabel('in', { exact: true }).selectOption('');
  });

  it('says so in words when nothing matches', async () => {
    await search(page, 'zanzibar');
    await page.locator('.search-results .state.empty').getByText('No items match “zanzibar”.').waitFor();
    expect(await results(page).count()).to.equal(0);
  });

  it('shows the server\'s message for a query it refuses', async () => {
    await search(page, '"unclosed');
    const error = page.locator('.search-results .state.error');
    await error.getByText('Refused (400): q has an unclosed quote (").').waitFor();
    expect(await error.getByRole('button', { name: 'Try again' }).count(), 'retrying the same query would not help').to.equal(0);
    await shot(page, 'desktop-32-search-bad-query');
  });

  it('shows untrusted content in a snippet as text: no element is injected, nothing runs', async () => {
    await search(page, 'rambutan');
    const snippet = results(page).first().locator('.snippet');
    await snippet.waitFor();
    expect(await snippet.textContent()).to.include('<img src=x onerror=alert(1)>').and.include('<script>');
    expect(await snippet.locator('mark').allTextContents()).to.deep.equal(['rambutan']);
    expect(await page.locator('#app img, #app script, #app [onerror]').count()).to.equal(0);
    expect(await inPage(page, 'window.__xss')).to.equal(undefined);
  });

  it('returns to the tree with Clear search or Escape', async () => {
    await search(page, 'tomato');
    await results(page).first().waitFor();
    await page.getByRole('button', { name: 'Clear search' }).click();
    await page.locator('.tree a[data-path="notes/kitchen.md"]').waitFor();
    expect(await page.locator('.search-results').isVisible()).to.equal(false);
    expect(await page.getByLabel('Search content').inputValue()).to.equal('');

    await search(page, 'tomato');
    await results(page).first().waitFor();
    await page.getByLabel('Search content').press('Escape');
    await page.locator('.tree a[data-path="notes/kitchen.md"]').waitFor();
    expect(await page.locator('.search-results').isVisible()).to.equal(false);
    expect(await inPage(page, 'document.activeElement?.id'), 'the focus stays in the search box').to.equal('item-search');
  });

  it('works at phone width: results, then the item alone, then back to the results', async () => {
    await page.setViewportSize(PHONE);
    try {
      await inPage(page, "location.hash = '#/items'");
      await page.locator('.tree-pane').waitFor();
      await search(page, 'tomato');
      await results(page).first().waitFor();
      expect(await overflowsHorizontally(page), 'search results are wider than the phone').to.equal(false);
      await shot(page, 'phone-30-search-results');
      await results(page).filter({ hasText: 'notes/garden.md' }).click();
      await page.locator('.item-path', { hasText: 'notes/garden.md' }).waitFor();
      expect(await page.locator('.tree-pane').isVisible()).to.equal(false);
      await page.getByRole('link', { name: '← All items' }).click();
      await page.getByText('3 items match “tomato”.').waitFor();
      expect(await results(page).count()).to.equal(3);
    } finally {
      await page.setViewportSize(DESKTOP);
    }
  });
});
