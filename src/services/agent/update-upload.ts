import { bytesEqual } from '../../../crypto/digest/index.ts';
import { type ControlBodies, openControl } from '../../protocol/index.ts';
import { failpoint } from '../failpoint.ts';
import type { AgentCore } from './agent-core.ts';
import { roundMacOf } from './apply-aggregate.ts';

/** A site's signed, encrypted update as `encodeUpdate` frames it. */
export interface FramedUpdate {
  readonly blocks: readonly Uint8Array[];
  readonly manifest: Uint8Array;
  readonly digest: Uint8Array;
}

/**
 * Sends `update`'s blocks, then its manifest, to `aggregator`, each acknowledged, and records it as
 * the site's last delivered update (its vote reports the bytes and `rms`; the voter checks the
 * aggregate lists it). Gives up (false) before a block once `stale()` says the round has moved on.
 */
export async function uploadUpdate(
  core: AgentCore,
  open: ControlBodies['round-open'],
  aggregator: string,
  update: FramedUpdate,
  rms: number,
  stale: () => boolean,
): Promise<boolean> {
  const u0 = performance.now();
  const subject = core.ctx.subjects.update(aggregator, core.member);
  for (const block of update.blocks) {
    if (stale()) return false;
    await core.ctx.transport.request(subject, block);
    core.counters.blocksSent++;
    // Mid-upload: a block acknowledged, the manifest (and any further block) not yet sent.
    failpoint('agent.update-block-sent', open.round);
  }
  const ack = await core.ctx.transport.request(subject, update.manifest);
  // The whole update acknowledged: a contributor that dies now (before decryption).
  failpoint('agent.update-sent', open.round);
  core.lastUploadMs = performance.now() - u0;
  const receipt = checkedReceipt(core, open, aggregator, update.digest, ack);
  core.counters.updatesSent++;
  core.lastUpdate = {
    round: open.round,
    rms,
    bytes: update.manifest.length + update.blocks.reduce((a, b) => a + b.length, 0),
    digest: update.digest,
    aggregator,
    peers: open.assignments
      .filter((a) => a.aggregator === aggregator && a.site !== core.member)
      .map((a) => a.site),
    receipt,
  };
  return true;
}

/**
 * The aggregator's signed receipt of this site's update in `ack` (the answer to the manifest, the
 * request that completes the update), checked: signed by `aggregator`, naming this federation,
 * round, attempt, site and update digest. Null (logged) for anything else: the update may still be
 * summed, but this site could not prove a drop.
 */
function checkedReceipt(
  core: AgentCore,
  open: ControlBodies['round-open'],
  aggregator: string,
  digest: Uint8Array,
  ack: Uint8Array,
): Uint8Array | null {
  try {
    const body = openControl(ack, 'receipt', core.ctx.keys, { signer: aggregator }).body;
    if (
      body.federation === core.ctx.config.federation.id &&
      body.round === open.round &&
      bytesEqual(body.attempt, open.attempt) &&
      body.aggregator === aggregator &&
      body.site === core.member &&
      bytesEqual(body.updateDigest, digest)
    ) {
      return ack;
    }
    core.ctx.log.warn({ round: open.round, aggregator }, 'the receipt of the update names another update');
  } catch (err) {
    core.ctx.log.warn({ round: open.round, aggregator, err }, 'no valid receipt of the update');
  }
  return null;
}

/**
 * This site's FedAvg weight in the round: what RoundOpen pinned for it (its example count, or less
 * when capped at a multiple of the round's median; never more, or the site skips the round).
 */
export function pinnedExamples(core: AgentCore, open: ControlBodies['round-open']): number {
  return open.assignments.find((a) => a.site === core.member)?.examples ?? 0;
}

/** The round context and codec options of a site's update in the round `open` announced. */
export function updateFraming(core: AgentCore, open: ControlBodies['round-open']) {
  const head = core.store.head()!;
  return {
    credentials: {
      signer: core.member,
      ckks: core.keyset!,
      signing: core.ctx.signing,
      mac: roundMacOf(core, {
        federation: core.ctx.config.federation.id,
        round: open.round,
        attempt: open.attempt,
      }),
    },
    context: {
      federation: core.ctx.config.federation.id,
      round: open.round,
      baseCommit: head.hash,
      version: head.height,
    },
    options: {
      bits: open.bits as 1 | 2 | 4 | 8,
      clip: open.clip,
      maxContributors: open.maxContributors,
      crcChunkBytes: open.crcChunkBytes,
    },
    timings: core.options.cryptoTimings,
  };
}
