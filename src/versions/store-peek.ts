import { join } from 'node:path';
import { bytesEqual } from '../../crypto/digest/index.ts';
import { readFileOrNull } from './atomic-file.ts';
import type { Commit } from './commit.ts';
import { decodeCommit } from './commit-codec.ts';
import { VersionError } from './version-error.ts';

const HEAD_CONTENT = /^([0-9a-f]{64})\n$/;

/**
 * The HEAD commit of the model store in `dir`, read without opening the store: nothing in `dir`
 * is written, removed or finished (`openModelStore` tidies temporary files and completes an
 * interrupted commit, which must never happen under a running agent). For tools and tests that
 * look at a live site's store. Null when the store has no HEAD yet.
 *
 * @throws VersionError `STORE_CORRUPT` when HEAD does not name a stored, verifying commit.
 */
export function peekStoreHead(dir: string): Commit | null {
  const headPath = join(dir, 'HEAD');
  const bytes = readFileOrNull(headPath);
  if (bytes === null) return null;
  const match = HEAD_CONTENT.exec(new TextDecoder().decode(bytes));
  if (match === null) {
    throw new VersionError('STORE_CORRUPT', `${headPath}: not a commit hash in hex and a newline`, {
      details: { path: headPath },
    });
  }
  const commitPath = join(dir, 'commits', `${match[1]}.commit`);
  const commitBytes = readFileOrNull(commitPath);
  if (commitBytes === null) {
    throw new VersionError('STORE_CORRUPT', `${headPath} names commit ${match[1]}, which is not stored`, {
      details: { path: headPath },
    });
  }
  let commit: Commit;
  try {
    commit = decodeCommit(commitBytes);
  } catch (cause) {
    throw new VersionError('STORE_CORRUPT', `${commitPath}: does not decode or verify`, {
      cause,
      details: { path: commitPath },
    });
  }
  if (!bytesEqual(commit.hash, new Uint8Array(Buffer.from(match[1]!, 'hex')))) {
    throw new VersionError('STORE_CORRUPT', `${commitPath}: holds another commit`, {
      details: { path: commitPath },
    });
  }
  return commit;
}
