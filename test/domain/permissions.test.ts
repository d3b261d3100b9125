import { expect } from 'chai';
import {
  can,
  highest,
  isRole,
  ORG_DEFAULTS,
  PERMISSIONS,
  READ_REQUIREMENTS,
  resolveRequirement,
  ROLES,
  WRITE_REQUIREMENTS,
  type FolderRuleLookup,
  type Permission,
  type Role,
} from '../../src/domain/permissions.js';

/** Roles, the order of access, and what `inherit` resolves to (see README, Keys, roles and permissions). */

describe('domain/permissions', () => {
  describe('can(role, permission)', () => {
    const table: Record<Role, Record<Permission, boolean>> = {
      reader: { 'knowledge:read': true, 'knowledge:write': false, 'knowledge:admin': false },
      writer: { 'knowledge:read': true, 'knowledge:write': true, 'knowledge:admin': false },
      admin: { 'knowledge:read': true, 'knowledge:write': true, 'knowledge:admin': true },
    };
    for (const [role, row] of Object.entries(table) as Array<[Role, Record<Permission, boolean>]>) {
      for (const [permission, allowed] of Object.entries(row) as Array<[Permission, boolean]>) {
        it(`${role} ${allowed ? 'holds' : 'lacks'} ${permission}`, () => {
          expect(can(role, permission)).to.equal(allowed);
        });
      }
    }

    it('knows exactly the three built-in roles', () => {
      expect(Object.keys(ROLES).sort()).to.deep.equal(['admin', 'reader', 'writer']);
      for (const role of ['reader', 'writer', 'admin']) expect(isRole(role)).to.equal(true);
      for (const notRole of ['boss', 'Admin', '', 'toString', '__proto__', 'constructor', 'hasOwnProperty']) {
        expect(isRole(notRole), notRole).to.equal(false);
      }
    });
  });

  describe('highest()', () => {
    it('follows the order read < write < admin, either way round', () => {
      expect(PERMISSIONS).to.deep.equal(['knowledge:read', 'knowledge:write', 'knowledge:admin']);
      expect(highest('knowledge:read', 'knowledge:write')).to.equal('knowledge:write');
      expect(highest('knowledge:write', 'knowledge:read')).to.equal('knowledge:write');
      expect(highest('knowledge:admin', 'knowledge:read')).to.equal('knowledge:admin');
      expect(highest('knowledge:read', 'knowledge:admin')).to.equal('knowledge:admin');
      expect(highest('knowledge:write', 'knowledge:admin')).to.equal('knowledge:admin');
      expect(highest('knowledge:admin', 'knowledge:write')).to.equal('knowledge:admin');
      for (const p of PERMISSIONS) expect(highest(p, p)).to.equal(p);
    });
  });

  describe('requirement values', () => {
    it('reads may require any permission or inherit; writes at least write', () => {
      expect([...READ_REQUIREMENTS].sort()).to.deep.equal(['inherit', 'knowledge:admin', 'knowledge:read', 'knowledge:write']);
      expect([...WRITE_REQUIREMENTS].sort()).to.deep.equal(['inherit', 'knowledge:admin', 'knowledge:write']);
    });
  });

  describe('resolveRequirement()', () => {
    const everyFolder: FolderRuleLookup = () => 'knowledge:admin';

    it('returns an explicit value as it is, without looking at folders', () => {
      const asked: string[] = [];
      const lookup: FolderRuleLookup = (folder) => {
        asked.push(folder);
        return 'knowledge:admin';
      };
      for (const p of PERMISSIONS) {
        expect(resolveRequirement({ requirement: p, path: 'a/b/c.md', kind: 'read', folderRule: lookup })).to.equal(p);
        expect(resolveRequirement({ requirement: p, path: 'a/b/c.md', kind: 'write', folderRule: lookup })).to.equal(p);
      }
      expect(asked).to.deep.equal([]);
    });

    it('resolves inherit to the organization default when no folder has a rule', () => {
      expect(ORG_DEFAULTS).to.deep.equal({ read: 'knowledge:read', write: 'knowledge:write' });
      expect(resolveRequirement({ requirement: 'inherit', path: 'a/b/c.md', kind: 'read' })).to.equal('knowledge:read');
      expect(resolveRequirement({ requirement: 'inherit', path: 'a/b/c.md', kind: 'write' })).to.equal('knowledge:write');
      expect(resolveRequirement({ requirement: 'inherit', path: 'top.md', kind: 'read', folderRule: () => undefined })).to.equal(
        'knowledge:read',
      );
      expect(resolveRequirement({ requirement: 'inherit', path: 'top.md', kind: 'write', folderRule: () => undefined })).to.equal(
        'knowledge:write',
      );
    });

    it('never consults folders for a top-level item (it has no ancestor)', () => {
      for (const kind of ['read', 'write'] as const) {
        expect(resolveRequirement({ requirement: 'inherit', path: 'top.md', kind, folderRule: everyFolder })).to.equal(ORG_DEFAULTS[kind]);
      }
    });

    it('asks the ancestors from the nearest outwards, passing the kind', () => {
      const asked: Array<[string, string]> = [];
      const lookup: FolderRuleLookup = (folder, kind) => {
        asked.push([folder, kind]);
        return undefined;
      };
      resolveRequirement({ requirement: 'inherit', path: 'a/b/c/d.md', kind: 'write', folderRule: lookup });
      expect(asked).to.deep.equal([
        ['a/b/c', 'write'],
        ['a/b', 'write'],
        ['a', 'write'],
      ]);
    });

    describe('resolves inherit to the nearest folder rule', () => {
      const path = 'a/b/c/d.md';
      const at =
        (rules: Record<string, Permission>): FolderRuleLookup =>
        (folder) =>
          rules[folder];

      it('a rule on the top folder (depth 1)', () => {
        const lookup = at({ a: 'knowledge:admin' });
        expect(resolveRequirement({ requirement: 'inherit', path, kind: 'read', folderRule: lookup })).to.equal('knowledge:admin');
      });

      it('a rule on the middle folder (depth 2) wins over the top one', () => {
        const lookup = at({ a: 'knowledge:admin', 'a/b': 'knowledge:write' });
        expect(resolveRequirement({ requirement: 'inherit', path, kind: 'read', folderRule: lookup })).to.equal('knowledge:write');
      });

      it('a rule on the parent folder (depth 3) wins over both', () => {
        const lookup = at({ a: 'knowledge:admin', 'a/b': 'knowledge:write', 'a/b/c': 'knowledge:read' });
        expect(resolveRequirement({ requirement: 'inherit', path, kind: 'read', folderRule: lookup })).to.equal('knowledge:read');
      });

      it('a rule for one kind does not apply to the other', () => {
        const lookup: FolderRuleLookup = (folder, kind) => (folder === 'a/b' && kind === 'read' ? 'knowledge:admin' : undefined);
        expect(resolveRequirement({ requirement: 'inherit', path, kind: 'read', folderRule: lookup })).to.equal('knowledge:admin');
        expect(resolveRequirement({ requirement: 'inherit', path, kind: 'write', folderRule: lookup })).to.equal('knowledge:write');
      });

      it('a folder whose name merely starts like an ancestor is not one', () => {
        const lookup = at({ 'a/b/c/d': 'knowledge:admin', 'a/bb': 'knowledge:admin', ab: 'knowledge:admin' });
        expect(resolveRequirement({ requirement: 'inherit', path, kind: 'read', folderRule: lookup })).to.equal('knowledge:read');
      });
    });
  });
});
