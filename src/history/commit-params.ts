import { decodeRoundParams, type RoundParams } from '../round/index.ts';
import type { Commit } from '../versions/index.ts';

/** The round parameters a commit carries, decoded (`decodeRoundParams`), or null when they do not decode. */
export function commitRoundParams(commit: Commit): RoundParams | null {
  try {
    return decodeRoundParams(commit.params);
  } catch {
    return null;
  }
}
