/**
 * Where "now" comes from: passed in to whatever stamps a time (records, keys,
 * commits), so a test can fix the time and a run can be replayed.
 */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();
