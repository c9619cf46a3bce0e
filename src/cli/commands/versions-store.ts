import { join, resolve } from 'node:path';
import { type FederationTimeline, readStoredModel } from '../../history/index.ts';
import type { ChainCommit } from '../../services/federation-log/index.ts';
import { VersionError } from '../../versions/index.ts';
import { hex } from './versions-format.ts';
import type { VersionsSession } from './versions-session.ts';

/** Where `versions diff` and `export` read models: `--store`, else a site's own store. */
export interface StoreChoice {
  readonly dir: string;
  /** True when given by `--store` (a missing store is then an error, not a skipped step). */
  readonly explicit: boolean;
}

/** `--store <dir>`, else `<paths.dataDir>/<member>` when the member is a site, else null. */
export function storeChoice(session: VersionsSession, store: string | undefined): StoreChoice | null {
  if (store !== undefined) return { dir: resolve(store), explicit: true };
  if (session.member.role !== 'site') return null;
  return { dir: resolve(join(session.config.paths.dataDir, session.member.member)), explicit: false };
}

/** Why a store lacks a commit's model, and what to do instead. */
export function missingModelMessage(dir: string, c: ChainCommit, timeline: FederationTimeline): string {
  return (
    `the model store ${dir} does not hold the model of commit ${hex(c.commit.hash)} (@${c.commit.height}, round ${c.commit.round}): ` +
    `the store was pruned (history.keepModels) or is shallow (the site joined from a snapshot after it); ` +
    `try another site's store, or a newer commit (the head is @${timeline.head.commit.height})`
  );
}

/**
 * The model of `c` from the store in `dir`, checked against the log's model hash.
 *
 * @throws VersionError `MODEL_MISSING` ({@link missingModelMessage}), `STORE_CORRUPT`, `STORE_IO`.
 */
export function requireStoredModel(dir: string, c: ChainCommit, timeline: FederationTimeline): Float32Array {
  const model = readStoredModel(dir, c.commit);
  if (model === null) {
    throw new VersionError('MODEL_MISSING', missingModelMessage(dir, c, timeline), {
      details: { path: dir, commit: hex(c.commit.hash) },
    });
  }
  return model;
}
