import { h } from './dom.js';
import { isMarkdownPath, renderMarkdown } from './markdown.js';

/** An item's content as a person reads it: markdown rendered (safely), JSON indented, anything else as text. */
export function renderContent(path: string, content: string): HTMLElement {
  if (content === '') return h('p', { class: 'muted' }, 'This item is empty.');
  if (isMarkdownPath(path)) {
    const el = h('div', { class: 'markdown' });
    // The one place HTML is parsed: markdown-it with html:false (see markdown.ts); CSP blocks inline script besides.
    el.innerHTML = renderMarkdown(content);
    return el;
  }
  if (/\.json$/i.test(path)) {
    try {
      return h('pre', { class: 'raw' }, h('code', null, JSON.stringify(JSON.parse(content), null, 2)));
    } catch {
      // not valid JSON: shown as it is
    }
  }
  return h('pre', { class: 'raw wrap' }, content);
}
