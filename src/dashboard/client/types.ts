/** The shapes of the admin API's `data` (README: "The API", "History, trash and the admin API"). */

export interface Item {
  id: string;
  organizationId: string;
  path: string;
  content?: string;
  itemType: string;
  requiredReadPermission: string;
  requiredWritePermission: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface TrashItem extends Item {
  deletedAt: string | null;
  deletedBy: string | null;
}

export interface Version {
  version: number;
  commitId: string;
  action: string;
  message: string;
  author: { name: string; keyId: string };
  timestamp: string;
}

export interface ApiKey {
  id: string;
  organizationId: string;
  name: string;
  role: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface FolderRule {
  folder: string;
  requiredReadPermission: string;
  requiredWritePermission: string;
  updatedAt: string | null;
}

export const ROLES = ['reader', 'writer', 'admin'] as const;
export const READ_REQUIREMENTS = ['inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin'] as const;
export const WRITE_REQUIREMENTS = ['inherit', 'knowledge:write', 'knowledge:admin'] as const;
/** What `inherit` resolves to when no folder rule applies. */
export const ORG_DEFAULTS = { read: 'knowledge:read', write: 'knowledge:write' } as const;
