import type { Actor } from '../domain/keys.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';

/** What the middleware chain puts on `ctx.state` for the routes. */
export interface AppState {
  requestId: string;
  actor: Actor;
  repo: OrgRepo;
}
