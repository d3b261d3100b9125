import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { DOCX_TYPE, makeDocx, makePdf } from '../support/fileFixtures.js';
import { upload } from '../http/fileHelpers.js';
import { shot, signedInDashboard } from './support.js';

/** File items in the dashboard: shown with their name, type, size and text; downloaded; uploaded from the browser. */
describe('Dashboard in Chromium: file items', function () {
  this.timeout(60_000);
  let page: Page;
  let pdf: Buffer;
  let docx: Buffer;

  const session = signedInDashboard(async (server) => {
    docx = makeDocx({ heading: 'Field guide', paragraphs: ['Tapirs are shy.'] });
    expect((await upload(server, server.adminKey, 'guides/field.docx', docx, DOCX_TYPE, { 'X-File-Name': 'Field Guide.docx' })).status).to.equal(200);
    pdf = await makePdf('Annual tapir census');
  });
  before(() => ({ page } = session));

  it('shows a file item: name, type, size, its extracted text rendered, and downloads the original', async () => {
    await page.locator('.tree a[data-path="guides/field.docx"]').click();
    await page.locator('.item-path', { hasText: 'guides/field.docx' }).waitFor();
    const summary = page.locator('.file-summary');
    await summary.getByText('Field Guide.docx').waitFor();
    expect(await summary.textContent()).to.match(/application\/vnd\.openxmlformats-officedocument\.wordprocessingml\.document · \d+(\.\d)? KB/);
    await page.getByRole('tab', { name: 'Extracted text' }).click();
    await page.locator('.markdown h1', { hasText: 'Field guide' }).waitFor();
    await page.locator('.markdown p', { hasText: 'Tapirs are shy.' }).waitFor();
    await shot(page, 'desktop-file-item');
    const [download] = await Promise.all([page.waitForEvent('download'), summary.getByRole('button', { name: 'Download original' }).click()]);
    expect(download.suggestedFilename()).to.equal('Field Guide.docx');
    const saved = await download.path();
    expect((await readFile(saved)).equals(docx)).to.equal(true);
  });

  it('uploads a PDF from the browser: the path is suggested from its name, the item opens with its text', async () => {
    await page.getByRole('button', { name: 'Upload a file' }).click();
    await page.locator('#upload-file').setInputFiles({ name: 'Tapir Census 2026.pdf', mimeType: 'application/pdf', buffer: pdf });
    expect(await page.locator('#upload-path').inputValue()).to.equal('tapir-census-2026.pdf');
    await page.locator('#upload-path').fill('reports/tapir-census-2026.pdf');
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.locator('.item-path', { hasText: 'reports/tapir-census-2026.pdf' }).waitFor();
    await page.locator('.file-summary').getByText('Tapir Census 2026.pdf').waitFor();
    await page.getByRole('tab', { name: 'Extracted text' }).click();
    await page.getByText('Annual tapir census').waitFor();
    await page.locator('.tree a[data-path="reports/tapir-census-2026.pdf"]').waitFor();
  });

  it('an upload the server refuses says why, and nothing is added', async () => {
    await page.getByRole('button', { name: 'Upload a file' }).click();
    await page.locator('#upload-file').setInputFiles({ name: 'picture.png', mimeType: 'image/png', buffer: Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex') });
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.locator('.upload-form').getByText('Unsupported file type: image/png').waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.locator('.tree a[data-path="picture.png"]').count()).to.equal(0);
  });
});
