import { bytesEqual, sha256 } from '../../../crypto/digest/index.ts';
import type { StrategyState } from '../../../federation/index.ts';
import { bytesToHex, openSnapshot, SnapshotError } from '../../versions/index.ts';
import { maxSnapshotBytes } from '../../versions/snapshot.ts';
import type { LoggedSnapshot } from '../federation-log/index.ts';
import { snapshotStore } from '../store/index.ts';
import type { AgentCore } from './agent-core.ts';
import { AgentError } from './agent-error.ts';
import { fetchObject } from './aggregate-fetch.ts';
import { dataKeyAt } from './epoch-keys.ts';
import { type SnapshotRange, snapshotCandidates } from './snapshot-candidates.ts';
import { snapshotRefusalsOf } from './snapshot-refusals.ts';

/** A logged snapshot whose content checked against the log's commit, decrypted. */
export interface LoadedSnapshot {
  readonly logged: LoggedSnapshot;
  readonly parameters: Float32Array;
  readonly strategyState: StrategyState;
}

/**
 * The best snapshot a site can start from for `range` (docs/round-protocol.md, "Catch-up,
 * snapshots, recovery"): the logged snapshots in the order of `snapshotCandidates` (highest first),
 * each fetched, hashed against the digest the log records, checked as signed by the site the log
 * names, decrypted, and its model and strategy state checked against the log's commit. A snapshot
 * that fails a check is refused — counted by reason (`snapshotRefusalsOf`), logged with the site
 * that signed it, never tried again — and the next one is tried: a hostile writer's snapshot costs
 * a joining site the replay from the snapshot below, never its join.
 *
 * Returns undefined when no candidate is left (none logged, or every one refused), the site has
 * no federation data key or its options turn snapshots off: the caller replays from its head or genesis. Throws `REPLAY_UNAVAILABLE` when none could be used and one
 * could not be read (retried later, rather than a long replay for a passing outage).
 */
export async function loadSnapshot(
  core: AgentCore,
  range: SnapshotRange,
): Promise<LoadedSnapshot | undefined> {
  if (core.dataKey === null || core.options.snapshots === false) return undefined;
  const refusals = snapshotRefusalsOf(core);
  // A snapshot of a key epoch this site was not in is under a data key it does not hold.
  const history = core.follower.history;
  const candidates = snapshotCandidates(history.snapshots, range, (s) => refusals.has(s)).filter(
    (l) => dataKeyAt(core, history.commitAt(l.snapshot.height)?.commit.round ?? 0) !== null,
  );
  let unavailable: AgentError | undefined;
  for (const logged of candidates) {
    try {
      return { logged, ...(await openLogged(core, logged)) };
    } catch (err) {
      const s = logged.snapshot;
      if (err instanceof AgentError && err.code === 'REPLAY_UNAVAILABLE') {
        unavailable ??= err;
        core.ctx.log.warn({ height: s.height, object: s.object, err }, 'snapshot unavailable');
        continue;
      }
      if (!(err instanceof SnapshotError)) throw err;
      const signer = typeof err.details['signedBy'] === 'string' ? err.details['signedBy'] : undefined;
      refusals.record(logged, {
        height: s.height,
        object: s.object,
        site: s.site,
        signer,
        reason: err.code,
        message: err.message,
      });
      core.ctx.log.warn(
        {
          height: s.height,
          object: s.object,
          site: s.site,
          signer: signer ?? null,
          reason: err.code,
          detail: err.message,
          refusals: refusals.total,
        },
        'snapshot refused',
      );
    }
  }
  if (unavailable !== undefined) throw unavailable;
  return undefined;
}

/**
 * Fetches, checks and decrypts one logged snapshot. `SnapshotError` when its bytes are not the
 * ones the log records or its content is not the commit's; `REPLAY_UNAVAILABLE` when it cannot
 * be read.
 */
async function openLogged(
  core: AgentCore,
  logged: LoggedSnapshot,
): Promise<{ parameters: Float32Array; strategyState: StrategyState }> {
  const s = logged.snapshot;
  const cc = core.follower.history.commitAt(s.height)!;
  const decision = cc.commit.kind === 'genesis' ? null : (await core.follower.roundOf(cc)).decision;
  const maxBytes = maxSnapshotBytes(core.genesis.parameters.length);
  const bytes = await fetchObject(core, snapshotStore(core.ctx.config.federation.id), s.object, maxBytes);
  const digest = sha256(bytes);
  if (!bytesEqual(digest, s.digest)) {
    throw new SnapshotError(
      'SNAPSHOT_DIGEST_MISMATCH',
      `snapshot ${s.object} hashes to ${bytesToHex(digest).slice(0, 12)}, the log records ${bytesToHex(s.digest).slice(0, 12)}`,
    );
  }
  const opened = openSnapshot(bytes, {
    // Only the site the log names as its writer may have signed it.
    keys: (id) => (id === s.site ? core.ctx.keys(id) : undefined),
    dataKey: dataKeyAt(core, cc.commit.round)!,
    maxBytes,
    expected: {
      federation: core.ctx.config.federation.id,
      commitHash: cc.commit.hash,
      modelHash: cc.commit.modelHash,
      ...(decision !== null && decision.stateHash.length === 32 ? { stateHash: decision.stateHash } : {}),
    },
  });
  return { parameters: opened.parameters, strategyState: opened.strategyState };
}
