import { bytesEqual } from '../../crypto/digest/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { type ControlBodies, decodeManifestBody, FRAME_KIND, unframe } from '../protocol/index.ts';
import { RegistryView, type VerifiedRegistry } from '../registry/index.ts';
import { openLogEntry } from '../services/federation-log/index.ts';
import { type ContributionKey, contributionName } from '../services/store/index.ts';
import type { Commit } from '../versions/index.ts';
import { expectedAggregateBlocks } from './aggregate-check.ts';
import {
  AUDIT_BUNDLE_VERSION,
  type AuditBundleMeta,
  type BundleSink,
  type ContributionNote,
  writeAuditBundle,
} from './audit-bundle.ts';
import { AuditError } from './audit-error.ts';
import type { AuditSource, StoredEntry } from './audit-source.ts';

/** Options of {@link exportAuditBundle}. */
export interface ExportAuditBundleOptions {
  /** The registry the exporter trusts: its copy goes in the bundle and its coordinator key finds the decisions. */
  readonly registry: VerifiedRegistry;
  /** The federation's genesis commit (a copy goes in the bundle). */
  readonly genesis: Commit;
  /** Leave the aggregates (and so the contributions) out (for credentials that cannot read the aggregate store). */
  readonly skipAggregates?: boolean;
  /** Leave the stored contributions out (they are also left out when the credentials cannot read the contributions stream). */
  readonly skipContributions?: boolean;
  /** The exporter's clock (default `Date.now`). */
  readonly now?: () => number;
}

/** What {@link exportAuditBundle} wrote. */
export interface ExportedBundleSummary {
  readonly federation: string;
  readonly lastSequence: number;
  readonly entries: number;
  /** Aggregate objects written (found in the store). */
  readonly objects: number;
  /** Objects a decision names that the store did not hold (written as absent). */
  readonly absent: number;
  readonly aggregates: 'included' | 'skipped';
  /** Stored contributions written (found in the contributions stream). */
  readonly contributions: number;
  /** `skipped`: on request, or the contributions stream could not be read with these credentials. */
  readonly contributionsIncluded: 'included' | 'skipped';
}

/**
 * Exports what `source` holds as an audit bundle to `sink` (see {@link encodeAuditBundle} for the
 * format): the log's stored entries 1…last as they are (nothing verified, nothing re-encoded), the
 * aggregate object of every COMMIT whose entry opens under the registry's coordinator key (or its
 * absence), every contribution the partial records of that round's open attempt list, as the
 * aggregator its RoundOpen assigned the site to stored it (or its absence, or what is wrong with
 * it: exactly the ones the audit asks for), a copy of the registry file and the genesis commit.
 * The admin API can stream it.
 *
 * @throws AuditError `AUDIT_SOURCE_UNAVAILABLE` when the log, or an aggregate (unless
 *   `skipAggregates`), cannot be read: a bundle never silently lacks what it claims to include.
 */
export async function exportAuditBundle(
  source: AuditSource,
  options: ExportAuditBundleOptions,
  sink: BundleSink,
): Promise<ExportedBundleSummary> {
  if (typeof sink !== 'function')
    throw new InvalidArgumentError('sink must be a function', { details: { name: 'sink' } });
  const skip = options.skipAggregates === true;
  const last = await source.lastSequence();
  const view = RegistryView.fromRegistry(options.registry.registry);
  const coordinator = options.registry.registry.members.find((m) => m.role === 'coordinator')?.id ?? '';
  const entries: StoredEntry[] = [];
  const wanted = new Map<string, number>();
  /** Each round's open attempt, and the contributions its partial records list (as the audit keeps them). */
  const opens = new Map<number, ControlBodies['round-open']>();
  const listed = new Map<number, ContributionKey[]>();
  const wantedContributions = new Map<
    string,
    { key: ContributionKey; maxBytes: number; maxFrames: number }
  >();
  for await (const e of source.entries(last)) {
    entries.push(e);
    try {
      const record = openLogEntry(e.bytes, undefined, {
        federation: source.federation,
        coordinator,
        keys: (id) => view.current(id),
        stream: source.stream,
      }).record;
      const open = record.roundOpen;
      if (open) {
        opens.set(open.round, open);
        listed.set(open.round, []);
      }
      const p = record.partial;
      const opened = p ? opens.get(p.round) : undefined;
      if (p && opened !== undefined && bytesEqual(opened.attempt, p.attempt)) {
        const assigned = new Map(opened.assignments.map((a) => [a.site, a.aggregator]));
        const sites = decodeManifestBody(unframe(p.manifest, FRAME_KIND.manifest)).contributorList;
        for (const c of sites) {
          listed.get(p.round)?.push({
            aggregator: assigned.get(c.site) ?? p.aggregator,
            round: p.round,
            attempt: p.attempt,
            site: c.site,
          });
        }
      }
      const d = record.decision;
      if (d?.commit && d.kind !== 'rollback' && d.aggregate != null) {
        wanted.set(d.aggregate.object, d.aggregate.objectBytes);
        // A contribution (seeded ciphertexts, frames) is smaller than the full-ciphertext sum.
        const maxFrames = expectedAggregateBlocks(d.aggregate) + 1;
        for (const key of listed.get(d.round) ?? []) {
          wantedContributions.set(contributionName(key), {
            key,
            maxBytes: 2 * d.aggregate.objectBytes + (1 << 20),
            maxFrames,
          });
        }
      }
    } catch {
      // An entry that does not open names no aggregate here; the audit reports it.
    }
  }
  const objects = new Map<string, Uint8Array | null>();
  if (!skip) {
    for (const [name, objectBytes] of wanted) {
      const read = await source.aggregate(name, objectBytes);
      if (read.status === 'unavailable') {
        throw new AuditError(
          'AUDIT_SOURCE_UNAVAILABLE',
          `cannot read aggregate ${JSON.stringify(name)}: ${read.reason} (export with credentials that may read the aggregate store, or skip aggregates)`,
          { details: { object: name } },
        );
      }
      // Too large or corrupt in the store: exported as absent, and the audit of the bundle reports it missing.
      objects.set(name, read.status === 'found' ? read.bytes : null);
    }
  }
  const contributions = new Map<string, Uint8Array | null>();
  const notes = new Map<string, ContributionNote>();
  let withContributions = !skip && options.skipContributions !== true;
  if (withContributions && source.contribution !== undefined) {
    for (const [name, { key, maxBytes, maxFrames }] of wantedContributions) {
      const read = await source.contribution(key, maxBytes, maxFrames);
      if (read.status === 'unavailable') {
        // Credentials that may not read the contributions stream (a site's): the bundle says so.
        withContributions = false;
        contributions.clear();
        notes.clear();
        break;
      }
      if (read.status === 'found' || read.status === 'overwritten') {
        contributions.set(name, read.bytes);
        if (read.status === 'overwritten') notes.set(name, { kind: 'overwritten' });
      } else {
        contributions.set(name, null);
        if (read.status !== 'absent') notes.set(name, { kind: 'unreadable', reason: read.reason });
      }
    }
  } else {
    withContributions = false;
  }
  const meta: AuditBundleMeta = {
    format: 'cohort-audit-bundle',
    version: AUDIT_BUNDLE_VERSION,
    federation: source.federation,
    stream: source.stream,
    member: source.member,
    exportedUnixMs: (options.now ?? Date.now)(),
    lastSequence: last,
    aggregates: skip ? 'skipped' : 'included',
    contributions: withContributions ? 'included' : 'skipped',
  };
  await writeAuditBundle(
    {
      meta,
      registry: options.registry.bytes,
      genesis: options.genesis,
      entries,
      objects,
      contributions,
      contributionNotes: notes,
    },
    sink,
  );
  const absent = [...objects.values()].filter((b) => b === null).length;
  return {
    federation: source.federation,
    lastSequence: last,
    entries: entries.length,
    objects: objects.size - absent,
    absent,
    aggregates: meta.aggregates,
    contributions: [...contributions.values()].filter((b) => b !== null).length,
    contributionsIncluded: withContributions ? 'included' : 'skipped',
  };
}
