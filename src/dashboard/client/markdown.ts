import MarkdownIt from 'markdown-it';

/**
 * Item content is untrusted. markdown-it with `html: false` turns any raw HTML
 * (`<script>`, `<img onerror>`) into text, and its link validation drops
 * `javascript:`, `vbscript:`, `file:` and non-image `data:` URLs. On top of that:
 * - images load only from data: URLs (as the CSP allows); any other image is shown
 *   as a labelled link, so an item cannot make the browser fetch from elsewhere;
 * - links carry rel="noopener noreferrer nofollow";
 * - no inline style attribute is ever emitted (table alignment becomes a class).
 * The page's CSP (no inline script) is the second wall should any of this fail.
 */
const md = new MarkdownIt({ html: false, linkify: true, typographer: false });

const defaultImage = md.renderer.rules.image;
md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  const src = String(token?.attrGet('src') ?? '');
  if (token && src.startsWith('data:image/') && defaultImage) return defaultImage(tokens, idx, options, env, self);
  const alt = token ? self.renderInlineAsText(token.children ?? [], options, env) : '';
  const label = `image not loaded: ${alt || 'untitled'}`;
  return `<span class="blocked-image" title="${md.utils.escapeHtml(src)}">[${md.utils.escapeHtml(label)}]</span>`;
};

const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx]?.attrSet('rel', 'noopener noreferrer nofollow');
  return defaultLinkOpen(tokens, idx, options, env, self);
};

// Table alignment comes as style="text-align:…", which the CSP (style-src 'self') would refuse: use classes.
for (const rule of ['th_open', 'td_open'] as const) {
  md.renderer.rules[rule] = (tokens, idx, options, _env, self) => {
    const token = tokens[idx];
    const style = String(token?.attrGet('style') ?? '');
    const align = /^text-align:(left|center|right)$/.exec(style)?.[1];
    if (token && style) {
      token.attrs = (token.attrs ?? []).filter(([name]) => name !== 'style');
      if (align) token.attrJoin('class', `align-${align}`);
    }
    return self.renderToken(tokens, idx, options);
  };
}

/** Safe HTML for a markdown text: no raw HTML, no script URLs, no remote images. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

export const isMarkdownPath = (path: string): boolean => /\.(md|markdown|mdx?)$/i.test(path);
