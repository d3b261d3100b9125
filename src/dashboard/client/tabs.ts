import { h } from './dom.js';

let counter = 0;

/**
 * ARIA tabs: Left/Right/Home/End move between tabs (roving tabindex), Tab goes
 * into the panel. A panel is built the first time its tab is shown.
 */
export function tabs(label: string, defs: { id: string; label: string; render: () => HTMLElement }[], initial?: string): HTMLElement {
  const base = `tabs-${++counter}`;
  const buttons: HTMLButtonElement[] = [];
  const panels: HTMLElement[] = [];
  const built = new Set<number>();

  const select = (index: number, focus: boolean): void => {
    buttons.forEach((b, i) => {
      b.setAttribute('aria-selected', String(i === index));
      b.tabIndex = i === index ? 0 : -1;
      (panels[i] as HTMLElement).hidden = i !== index;
    });
    if (!built.has(index)) {
      built.add(index);
      (panels[index] as HTMLElement).append((defs[index] as (typeof defs)[number]).render());
    }
    if (focus) buttons[index]?.focus();
  };

  defs.forEach((def, i) => {
    buttons.push(
      h(
        'button',
        {
          type: 'button',
          role: 'tab',
          id: `${base}-tab-${def.id}`,
          'data-tab': def.id,
          'aria-controls': `${base}-panel-${def.id}`,
          onclick: () => select(i, false),
          onkeydown: (e: Event) => {
            const key = (e as KeyboardEvent).key;
            const n = defs.length;
            const next = key === 'ArrowRight' ? (i + 1) % n : key === 'ArrowLeft' ? (i - 1 + n) % n : key === 'Home' ? 0 : key === 'End' ? n - 1 : -1;
            if (next >= 0) {
              e.preventDefault();
              select(next, true);
            }
          },
        },
        def.label,
      ),
    );
    panels.push(h('div', { role: 'tabpanel', id: `${base}-panel-${def.id}`, 'aria-labelledby': `${base}-tab-${def.id}`, tabindex: '0', class: 'tab-panel' }));
  });
  const start = Math.max(0, defs.findIndex((d) => d.id === initial));
  select(start, false);
  return h('div', { class: 'tabs' }, h('div', { role: 'tablist', 'aria-label': label }, buttons), panels);
}
