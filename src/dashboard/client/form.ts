import { describeError } from './api.js';
import { h, replace } from './dom.js';

/** A problem with a form, in words, in its message area (a role=alert region, so it is announced). */
export function formError(box: Element, text: string, focus?: HTMLElement): void {
  replace(box, h('p', { class: 'error-text' }, text));
  focus?.focus();
}

/**
 * Sends a form: its submit button is disabled meanwhile so that a second click cannot
 * send it twice, and a failure is shown in the form's message area rather than lost.
 */
export async function sendForm(submit: HTMLButtonElement, box: Element, send: () => Promise<void>): Promise<void> {
  submit.disabled = true;
  replace(box);
  try {
    await send();
  } catch (err) {
    formError(box, describeError(err));
  } finally {
    submit.disabled = false;
  }
}
