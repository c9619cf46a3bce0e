import { InvalidArgumentError } from '../errors/index.ts';
import { decodeManifestBody, FRAME_KIND, unframe } from '../protocol/index.ts';
import { RegistryView, type VerifiedRegistry } from '../registry/index.ts';
import { contributionObjectName } from '../services/aggregator/index.ts';
import { openLogEntry } from '../services/federation-log/index.ts';
import type { Commit } from '../versions/index.ts';
import {
  AUDIT_BUNDLE_VERSION,
  type AuditBundleMeta,
  type BundleSink,
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
  /** Leave the stored contributions out (they are also left out when the credentials cannot read the updates store). */
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
  /** Stored contributions written (found in the updates store). */
  readonly contributions: number;
  /** `skipped`: on request, or the updates store could not be read with these credentials. */
  readonly contributionsIncluded: 'included' | 'skipped';
}

/**
 * Exports what `source` holds as an audit bundle to `sink` (see {@link encodeAuditBundle} for the
 * format): the log's stored entries 1…last as they are (nothing verified, nothing re-encoded), the
 * aggregate object of every COMMIT whose entry opens under the registry's coordinator key (or its
 * absence), a copy of the registry file and the genesis commit. The admin API can stream it.
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
  /** Contributions the partial records of each round list, wanted once the round's COMMIT names its size. */
  const listed = new Map<number, string[]>();
  const wantedContributions = new Map<string, number>();
  for await (const e of source.entries(last)) {
    entries.push(e);
    try {
      const record = openLogEntry(e.bytes, undefined, {
        federation: source.federation,
        coordinator,
        keys: (id) => view.current(id),
        stream: source.stream,
      }).record;
      const p = record.partial;
      if (p) {
        const sites = decodeManifestBody(unframe(p.manifest, FRAME_KIND.manifest)).contributorList;
        const names = listed.get(p.round) ?? [];
        for (const c of sites) names.push(contributionObjectName(p.round, p.attempt, c.site));
        listed.set(p.round, names);
      }
      const d = record.decision;
      if (d?.commit && d.kind !== 'rollback' && d.aggregate != null) {
        wanted.set(d.aggregate.object, d.aggregate.objectBytes);
        // A contribution (seeded ciphertexts, frames) is smaller than the full-ciphertext sum.
        for (const name of listed.get(d.round) ?? []) {
          wantedContributions.set(name, 2 * d.aggregate.objectBytes + (1 << 20));
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
  let withContributions = !skip && options.skipContributions !== true;
  if (withContributions && source.contribution !== undefined) {
    for (const [name, maxBytes] of wantedContributions) {
      const read = await source.contribution(name, maxBytes);
      if (read.status === 'unavailable') {
        // Credentials that may not read the updates store (a site's): the bundle says so.
        withContributions = false;
        contributions.clear();
        break;
      }
      contributions.set(name, read.status === 'found' ? read.bytes : null);
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
    { meta, registry: options.registry.bytes, genesis: options.genesis, entries, objects, contributions },
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
