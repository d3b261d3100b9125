import { resolve } from 'node:path';
import { isLogLevel, type LogLevel } from './log.js';

/** Contract §1: each setting comes from the environment, and each is also a `serve` flag (flags win). */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  maxContentBytes: number;
  logLevel: LogLevel;
  /** Loose objects that trigger an automatic `git repack` of an organization (0 turns it off). */
  autoRepackObjects: number;
}

export interface ConfigOverrides {
  host?: string;
  port?: string;
  dataDir?: string;
  maxContentBytes?: string;
  logLevel?: string;
  autoRepackObjects?: string;
}

export class ConfigError extends Error {}

export const DEFAULTS = {
  host: '127.0.0.1',
  port: 3000,
  dataDir: './data',
  maxContentBytes: 1_048_576,
  logLevel: 'info',
  autoRepackObjects: 10_000,
} as const;

export function loadConfig(env: NodeJS.ProcessEnv, overrides: ConfigOverrides = {}): Config {
  const pick = (flag: string | undefined, name: string): string | undefined => flag ?? (env[name] || undefined);
  const port = integer(pick(overrides.port, 'PORT'), DEFAULTS.port, 'port', 0, 65535);
  const maxContentBytes = integer(pick(overrides.maxContentBytes, 'KNOWLEDGE_MAX_CONTENT_BYTES'), DEFAULTS.maxContentBytes, 'KNOWLEDGE_MAX_CONTENT_BYTES', 1, 64 * 1024 * 1024);
  const autoRepackObjects = integer(pick(overrides.autoRepackObjects, 'KNOWLEDGE_AUTO_REPACK_OBJECTS'), DEFAULTS.autoRepackObjects, 'KNOWLEDGE_AUTO_REPACK_OBJECTS', 0, 10_000_000);
  const logLevel = pick(overrides.logLevel, 'LOG_LEVEL') ?? DEFAULTS.logLevel;
  if (!isLogLevel(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of error, warn, info, debug (got "${logLevel}")`);
  return {
    host: pick(overrides.host, 'HOST') ?? DEFAULTS.host,
    port,
    dataDir: resolve(pick(overrides.dataDir, 'KNOWLEDGE_DATA_DIR') ?? DEFAULTS.dataDir),
    maxContentBytes,
    logLevel,
    autoRepackObjects,
  };
}

function integer(raw: string | undefined, fallback: number, name: string, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
  }
  return value;
}
