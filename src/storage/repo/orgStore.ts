import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { errnoCode } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { silentMetrics, type Metrics } from '../../common/metrics.js';
import { OrgAlreadyExists } from '../errors.js';
import { fsyncDir, fsyncTree, pathExists, writeAndSync } from '../fs/durable.js';
import type { FsPromises } from '../fs/fs.js';
import type { GitCli, ObjectCounts, RepackReport, UploadPack } from '../git/gitCli.js';
import { MAIN_REF } from '../git/refs.js';
import { LAYOUT } from './itemRecord.js';
import { OpenOrgs, type OrgLease } from './openOrgs.js';
import { OrgRepo } from './orgRepo.js';
import { cloneMainOnly, writeFirstCommit } from './repoBirth.js';
import { RepoCaches } from './repoCaches.js';
import type { PageCaches } from '../search/pageCaches.js';
import { SearchIndex, type ReadNeed } from '../search/searchIndex.js';
import { verifyRepository, type StoreRules, type VerifyReport } from './verify.js';

/** The search index's file, inside the bare repository's directory (git ignores it; a clone does not carry it). */
export const SEARCH_FILE = 'knowledge-search.sqlite';

/**
 * The organizations of a data directory: `<dataDir>/orgs/<orgId>.git`, one
 * bare repository each. Repositories are opened on first use (see OpenOrgs),
 * so an organization created by the CLI while the server runs is picked up by
 * the first request that names it.
 */
export class OrgStore {
  private readonly repos: OpenOrgs<OrgRepo>;
  private readonly caches: RepoCaches;
  readonly root: string;

  constructor(
    private readonly options: {
      fs: FsPromises;
      dataDir: string;
      logger: Logger;
      /** Told what the repositories do (group commits, repacks); silent unless given. */
      metrics?: Metrics;
      /** C git: clones, repacks, fsck, upload-pack. */
      git: GitCli;
      /** True in the process that owns the data dir (the server): lock files left by a crash are removed on open. */
      owner?: boolean;
      /** Repack a repository automatically once this many loose objects pile up (0: never). */
      autoRepackObjects?: number;
      /**
       * Keep a full-text index beside each repository (only in a process that owns the data dir:
       * the index file has one writer). `readNeed` ranks who may read an item (the domain's rules).
       */
      search?: { readNeed: ReadNeed; progressEvery?: number; pageCaches?: PageCaches; checkFile?: (file: string) => Promise<boolean> };
      /** Told of each repository once it is open, before anyone uses it (replication starts there). */
      opened?: (repo: OrgRepo) => Promise<void>;
      /** Close the least recently used idle organizations beyond this many open (0, the default: keep all open; see OpenOrgs). */
      maxOpen?: number;
      /** What all its repositories keep of what they read and write, together (default: RepoCaches.atDefault()). */
      caches?: RepoCaches;
    },
  ) {
    this.caches = options.caches ?? RepoCaches.atDefault();
    this.root = `${options.dataDir}/orgs`;
    this.repos = new OpenOrgs({
      openRepo: (orgId) => this.openRepo(orgId),
      maxOpen: options.maxOpen ?? 0,
      logger: options.logger,
      metrics: options.metrics ?? silentMetrics,
    });
  }

  gitdirOf(orgId: string): string {
    return `${this.root}/${orgId}.git`;
  }

  async exists(orgId: string): Promise<boolean> {
    return pathExists(this.options.fs, `${this.gitdirOf(orgId)}/HEAD`);
  }

  async list(): Promise<string[]> {
    try {
      const names = await this.options.fs.readdir(this.root);
      return names.filter((n) => n.endsWith('.git') && !n.startsWith('.')).map((n) => n.slice(0, -4)).sort();
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return [];
      throw err;
    }
  }

  /** The organization's repository, or null when there is no such organization. Not held: a server's users `hold` it. */
  get(orgId: string): Promise<OrgRepo | null> {
    return this.repos.get(orgId);
  }

  /**
   * The organization's repository, kept open until the lease is released (see OpenOrgs: with `maxOpen`, what
   * nobody holds may be closed); null when there is no such organization.
   */
  hold(orgId: string): Promise<OrgLease<OrgRepo> | null> {
    return this.repos.hold(orgId);
  }

  /**
   * Never closes the organization for being idle until the returned function is called: its webhooks' or
   * mirrors' workers hold its repository (see OpenOrgs.keep).
   */
  keepOpen(orgId: string): () => void {
    return this.repos.keep(orgId);
  }

  private async openRepo(orgId: string): Promise<OrgRepo | null> {
    const { fs, logger } = this.options;
    if (!(await this.exists(orgId))) return null;
    const gitdir = this.gitdirOf(orgId);
    if (this.options.owner) {
      // Only this process writes refs here; a lock file present now was left by a crash.
      await fs.unlink(`${gitdir}/${MAIN_REF}.lock`).then(
        () => logger.warn('removed a ref lock left by a crash', { org: orgId }),
        () => undefined,
      );
    }
    const started = Date.now();
    const { git, autoRepackObjects, metrics } = this.options;
    const repo = await OrgRepo.open({ orgId, fs, gitdir, logger, git, autoRepackObjects, metrics, caches: this.caches });
    const { search } = this.options;
    if (search) {
      try {
        // Built in the background when missing or behind: the organization answers meanwhile; searches wait for it.
        repo.attachSearch(await SearchIndex.open({ file: `${gitdir}/${SEARCH_FILE}`, source: repo, logger, orgId, metrics: this.options.metrics, inBackground: true, ...search }));
      } catch (err) {
        await repo.close();
        throw err;
      }
    }
    try {
      await this.options.opened?.(repo);
    } catch (err) {
      await repo.close();
      throw err;
    }
    logger.info('organization opened', { org: orgId, items: repo.itemCount, ms: Date.now() - started });
    return repo;
  }

  /**
   * Creates an organization's repository with one commit holding the store's
   * format marker. Built in a temporary directory, made durable, then renamed
   * into place: a crash never leaves a half-made organization.
   */
  async create(orgId: string, now: Date): Promise<void> {
    const { fs } = this.options;
    await fs.mkdir(this.root, { recursive: true });
    if (await this.exists(orgId)) throw new OrgAlreadyExists({ orgId });
    const tmp = `${this.root}/.creating-${orgId}-${randomBytes(4).toString('hex')}`;
    try {
      await writeFirstCommit({ fs, gitdir: tmp, orgId, now });
      await fsyncTree(fs, tmp);
      await fs.rename(tmp, this.gitdirOf(orgId));
      await fsyncDir(fs, this.root);
    } catch (err) {
      await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      const code = errnoCode(err);
      if (code === 'ENOTEMPTY' || code === 'EEXIST') throw new OrgAlreadyExists({ orgId });
      throw err;
    }
  }

  /**
   * Clones `source` (a git URL or path) into a temporary bare repository next to
   * the organizations, for `org import` to check before `adopt` or `discard`
   * (see cloneMainOnly: only `main`, objects checked, the remote removed).
   */
  async cloneForImport(orgId: string, source: string): Promise<{ gitdir: string; problems: string[] }> {
    const { fs } = this.options;
    await fs.mkdir(this.root, { recursive: true });
    if (await this.exists(orgId)) throw new OrgAlreadyExists({ orgId });
    const gitdir = `${this.root}/.importing-${orgId}-${randomBytes(4).toString('hex')}`;
    return { gitdir, problems: await cloneMainOnly({ git: this.options.git, source, gitdir }) };
  }

  /** Makes a checked import the organization's repository, durably. */
  async adopt(gitdir: string, orgId: string): Promise<void> {
    const { fs } = this.options;
    await fsyncTree(fs, gitdir);
    try {
      await fs.rename(gitdir, this.gitdirOf(orgId));
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'ENOTEMPTY' || code === 'EEXIST') throw new OrgAlreadyExists({ orgId });
      throw err;
    }
    await fsyncDir(fs, this.root);
  }

  async discard(gitdir: string): Promise<void> {
    await this.options.fs.rm(gitdir, { recursive: true, force: true });
  }

  /**
   * C git's fsck and the store's own rules over one repository: an
   * organization's, or (with `gitdir`) a clone being imported.
   */
  async verify(orgId: string, rules: StoreRules, gitdir = this.gitdirOf(orgId)): Promise<VerifyReport> {
    const report = await verifyRepository({ fs: this.options.fs, git: this.options.git, gitdir, orgId, rules });
    // The search index is checked where this process keeps one (it owns the data dir), for organizations only.
    if (this.options.search && gitdir === this.gitdirOf(orgId)) {
      const repo = await this.get(orgId);
      const search = repo?.search;
      if (search) {
        await search.settled();
        report.problems.push(...search.differences());
        report.search = 'checked';
      }
    }
    return report;
  }

  /**
   * How many items the organization holds, live and in the trash, from the tree of main alone
   * (`git ls-tree` of the records and the trash: no index loaded, nothing written), so that
   * `org list` is cheap beside a running server.
   */
  async countItems(orgId: string): Promise<{ items: number; trashed: number }> {
    const { itemsRoot, trashRoot } = LAYOUT;
    const argv = ['--git-dir', this.gitdirOf(orgId), 'ls-tree', '-r', '--name-only', '-z', MAIN_REF, '--', itemsRoot, trashRoot];
    const { code, output } = await this.options.git.run(argv);
    if (code !== 0) throw new Error(`git ls-tree failed: ${output.trim()}`);
    let records = 0;
    let trashed = 0;
    for (const file of output.split('\0')) {
      if (file.startsWith(`${itemsRoot}/`)) records++;
      else if (file.startsWith(`${trashRoot}/`)) trashed++;
    }
    return { items: records - trashed, trashed };
  }

  countObjects(orgId: string): Promise<ObjectCounts> {
    return this.options.git.countObjects(this.gitdirOf(orgId));
  }

  /**
   * Repacks from outside the server (`gc`): geometric by default, which is
   * safe beside a running server; `full` only when none runs.
   */
  repack(orgId: string, options: { full?: boolean } = {}): Promise<RepackReport> {
    return this.options.git.repack(this.gitdirOf(orgId), options);
  }

  /** Serves a clone or fetch of the organization's repository (read-only: upload-pack). */
  uploadPack(orgId: string, args: { advertiseRefs: boolean; protocol?: string; input?: Readable }): UploadPack {
    return this.options.git.uploadPack({ gitdir: this.gitdirOf(orgId), ...args });
  }

  /**
   * Readiness (GET /readyz): that the data directory takes a durable write now. A small file is
   * written, fsynced and removed, so a read-only remount, a full disk or a dead volume shows here
   * before a writer meets it. Throws what the file system throws.
   */
  async checkWritable(): Promise<void> {
    const { fs, dataDir } = this.options;
    const probe = `${dataDir}/.readyz-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      await writeAndSync(fs, probe, 'ready\n');
    } finally {
      await fs.unlink(probe).catch(() => undefined);
    }
  }

  /**
   * Opens every organization this process has not opened before (readiness: the first request to each is then
   * not the one that waits; with `maxOpen`, those beyond it are closed again as others open, and not opened
   * again by the next probe); says which could not be.
   */
  async openAll(): Promise<{ opened: number; failed: string[] }> {
    return this.repos.openEach(await this.list());
  }

  /** Organizations open now and the writes queued across them, read when /metrics is scraped. */
  stats(): { openOrganizations: number; queuedWrites: number } {
    return this.repos.stats();
  }

  /** The bytes its repositories' shared caches hold now (GET /metrics). */
  cacheBytes(): ReturnType<RepoCaches['bytes']> {
    return this.caches.bytes();
  }

  closeAll(): Promise<void> {
    return this.repos.closeAll();
  }
}
