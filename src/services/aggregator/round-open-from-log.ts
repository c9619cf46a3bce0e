import type { ControlBodies } from '../../protocol/index.ts';
import { openLogReader } from '../federation-log/index.ts';
import type { MemberContext } from '../member-context.ts';

/** Entries read back from the log's tail when looking for a RoundOpen. */
const TAIL_ENTRIES = 64;

/**
 * The RoundOpen of `round` as the federation log holds it (the coordinator appends it before it
 * announces it), when it is among the last {@link TAIL_ENTRIES} entries and its round is not
 * decided yet; undefined otherwise. For an aggregator that never heard the broadcast (it is at
 * most once: lost in a server restart or a partition) while its sites' updates for the round
 * arrive. Each entry read is checked (the coordinator's signature, the federation, its sequence).
 *
 * @throws FederationLogError `LOG_UNAVAILABLE` when the log cannot be read.
 */
export async function roundOpenFromLog(
  ctx: MemberContext,
  round: number,
): Promise<ControlBodies['round-open'] | undefined> {
  const reader = await openLogReader(ctx.transport.connection, {
    federation: ctx.config.federation.id,
    coordinator: ctx.members.coordinator,
    keys: ctx.keys,
  });
  const last = await reader.lastSequence();
  for (let sequence = last; sequence >= 1 && sequence > last - TAIL_ENTRIES; sequence--) {
    const record = (await reader.get(sequence)).record;
    if (record.decision?.round === round) return undefined; // decided: too late to sum
    const open = record.roundOpen;
    if (open === undefined || open === null) continue;
    if (open.round === round) return open;
    if (open.round < round) return undefined; // the round is not open yet
  }
  return undefined;
}
