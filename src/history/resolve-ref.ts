import type { ChainCommit, LogHistory } from '../services/federation-log/index.ts';
import { bytesToHex } from '../versions/index.ts';
import { HistoryError } from './history-error.ts';

/** Fewest hex digits a hash prefix may have (as git: shorter ones collide too easily). */
export const MIN_REF_PREFIX = 4;

const HEX_REF = /^[0-9a-fA-F]+$/;
const HEAD_BACK = /^HEAD~([0-9]+)$/;
const AT_HEIGHT = /^@([0-9]+)$/;

/**
 * The commit on `history`'s chain that `ref` names:
 *
 * - `HEAD`: the head; `HEAD~n`: the commit n below it (`HEAD~0` is the head);
 * - `@<height>`: the commit at that height (`@0` is genesis);
 * - a commit hash in hex, whole (64 digits) or a unique prefix of at least {@link MIN_REF_PREFIX}
 *   digits (either case).
 *
 * Only commits on the chain resolve (an ABORTed round has none).
 *
 * @throws HistoryError `REF_INVALID` for any other text, `REF_UNKNOWN` when nothing matches,
 *   `REF_AMBIGUOUS` (listing the candidates) when a prefix matches several commits; each names `ref`.
 */
export function resolveRef(history: LogHistory, ref: string): ChainCommit {
  if (typeof ref !== 'string') {
    throw new HistoryError('REF_INVALID', `ref must be a string, got ${typeof ref}`, { details: { ref } });
  }
  const head = history.head.commit.height;
  const unknown = (why: string) =>
    new HistoryError('REF_UNKNOWN', `unknown commit ${JSON.stringify(ref)}: ${why}`, { details: { ref } });
  if (ref === 'HEAD') return history.head;
  const back = HEAD_BACK.exec(ref) ?? AT_HEIGHT.exec(ref);
  if (back !== null) {
    const n = Number(back[1]);
    const height = ref.startsWith('@') ? n : head - n;
    if (!Number.isSafeInteger(n) || height < 0 || height > head) {
      throw unknown(`the chain holds heights 0 to ${head}`);
    }
    return history.commitAt(height)!;
  }
  if (HEX_REF.test(ref) && ref.length >= MIN_REF_PREFIX && ref.length <= 64) {
    const prefix = ref.toLowerCase();
    const matches: ChainCommit[] = [];
    for (let h = 0; h <= head; h++) {
      const c = history.commitAt(h)!;
      if (bytesToHex(c.commit.hash).startsWith(prefix)) matches.push(c);
    }
    if (matches.length === 1) return matches[0]!;
    if (matches.length === 0) throw unknown('no commit on the chain has that hash');
    const list = matches.map((c) => `${bytesToHex(c.commit.hash).slice(0, 16)} (@${c.commit.height})`);
    throw new HistoryError(
      'REF_AMBIGUOUS',
      `ambiguous commit ${JSON.stringify(ref)}: ${matches.length} commits match (${list.join(', ')}); give more digits`,
      { details: { ref, candidates: matches.map((c) => bytesToHex(c.commit.hash)) } },
    );
  }
  throw new HistoryError(
    'REF_INVALID',
    `invalid commit reference ${JSON.stringify(ref)}: expects a hash (at least ${MIN_REF_PREFIX} hex digits), HEAD, HEAD~n or @<height>`,
    { details: { ref } },
  );
}
