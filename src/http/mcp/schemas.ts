import { MAX_PATH_LENGTH } from '../../domain/paths.js';

/** Argument schemas the tools share. Every tool's arguments are a closed object: an unknown argument is an error. */
export const PATH = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_PATH_LENGTH,
  description: 'The item\'s path, like "docs/onboarding.md": "/"-separated, no leading "/".',
} as const;

export const FOLDER_PREFIX = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_PATH_LENGTH,
  description: 'Only items under this folder, written with its trailing "/", like "docs/".',
} as const;

export const IF_MATCH = {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  description:
    'The etag the item had when you read it (from `read`). The change is refused if the item has changed since, so you never overwrite a change you have not seen: read it again and redo your change.',
} as const;

export const MESSAGE = {
  type: 'string',
  minLength: 1,
  maxLength: 1000,
  description: 'The commit message: why you made this change (optional; a default names the item).',
} as const;

export const VERSION = { type: 'integer', minimum: 1, description: 'A version number from `history` (1 is the first).' } as const;

export function arguments_(properties: Record<string, object>, required: string[] = []): object {
  return { type: 'object', properties, required, additionalProperties: false };
}
