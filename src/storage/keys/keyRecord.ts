/** One API key as the key store keeps it (keys.json, keys.log): never the secret, only its SHA-256. */
export interface KeyRecord {
  id: string;
  orgId: string;
  name: string;
  role: string;
  /** Hex SHA-256 of the secret. */
  hash: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
  /**
   * Folder prefixes ("docs/") the key is limited to. Absent on keys without scopes, so a key file
   * written before scopes existed reads unchanged (the file's version stays 1).
   */
  scopes?: string[];
}
