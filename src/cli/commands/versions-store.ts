import { join, resolve } from 'node:path';
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
