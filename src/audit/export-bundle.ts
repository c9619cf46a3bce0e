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
  AuditBundleWriter,
  type BundleSigner,
  type BundleSink,
} from './audit-bundle.ts';
import { AuditError } from './audit-error.ts';
import type { AuditSource, ContributionRead } from './audit-source.ts';

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
  /**
   * Who seals the bundle: the member whose credentials read the log (`source.member`) and its
   * signing key pair. Its seal makes the meta (exporter, export time, last sequence) its signed
   * statement.
   */
  readonly signer: BundleSigner;
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
  /** Bytes of the bundle. */
  readonly bytes: number;
}

/** A contribution the bundle asks for, with the bounds its reader applies. */
interface WantedContribution {
  readonly key: ContributionKey;
  readonly maxBytes: number;
  readonly maxFrames: number;
}

/** What the first pass over the log found: names and sizes only, never the evidence itself. */
interface BundlePlan {
  /** Aggregate objects COMMITs name, and their declared sizes. */
  readonly objects: Map<string, number>;
  /** Contributions the partial records of each committed round's open attempt list, by name. */
  readonly contributions: Map<string, WantedContribution>;
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * First pass: reads the log's entries 1…`last` and keeps the names (and declared sizes) of what the
 * bundle must hold: the aggregate object of every COMMIT whose entry opens under the registry's
 * coordinator key, and every contribution the partial records of that round's open attempt list,
 * under the aggregator the RoundOpen assigned its site to (exactly the ones the audit asks for).
 */
async function planBundle(
  source: AuditSource,
  registry: VerifiedRegistry,
  last: number,
): Promise<BundlePlan> {
  const view = RegistryView.fromRegistry(registry.registry);
  const coordinator = registry.registry.members.find((m) => m.role === 'coordinator')?.id ?? '';
  const objects = new Map<string, number>();
  const contributions = new Map<string, WantedContribution>();
  /** Each round's open attempt, and the contributions its partial records list (as the audit keeps them). */
  const opens = new Map<number, ControlBodies['round-open']>();
  const listed = new Map<number, ContributionKey[]>();
  for await (const e of source.entries(last)) {
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
      // An ABORT that names culprits: the evidence they were named on, and the round's contributions.
      const blamed = d != null && !d.commit && d.aggregate != null && (d.culprits?.length ?? 0) > 0;
      if (blamed) {
        for (const c of d.culprits) {
          if (c.evidence !== '') objects.set(c.evidence, 2 * d.aggregate!.objectBytes + (1 << 20));
        }
      }
      if ((d?.commit && d.kind !== 'rollback' && d.aggregate != null) || blamed) {
        if (d!.commit) objects.set(d!.aggregate!.object, d!.aggregate!.objectBytes);
        // A contribution (seeded ciphertexts, frames) is smaller than the full-ciphertext sum.
        const aggregate = d!.aggregate!;
        const maxFrames = expectedAggregateBlocks(aggregate) + 1;
        for (const key of listed.get(d!.round) ?? []) {
          contributions.set(contributionName(key), {
            key,
            maxBytes: 2 * aggregate.objectBytes + (1 << 20),
            maxFrames,
          });
        }
      }
      if (d) {
        // A decided round's partials are done with: the plan keeps names, not the log.
        listed.delete(d.round);
        opens.delete(d.round);
      }
    } catch {
      // An entry that does not open names no aggregate here; the audit reports it.
    }
  }
  return { objects, contributions };
}

/**
 * Exports what `source` holds as an audit bundle to `sink` (see {@link encodeAuditBundle} for the
 * format), streaming: the bundle is written as it is read and never held whole. A first pass over
 * the log keeps only the names of what the bundle must hold; the second writes the log's stored
 * entries 1…last as they are (nothing verified, nothing re-encoded), then the aggregate object of
 * every COMMIT whose entry opens under the registry's coordinator key (or its absence), then every
 * contribution the partial records of that round's open attempt list, as the aggregator its
 * RoundOpen assigned the site to stored it (or its absence, or what is wrong with it: exactly the
 * ones the audit asks for), each read just before it is written; a copy of the registry file and
 * the genesis commit come first. At most one aggregate or contribution is held at a time, and the
 * sink's promise is awaited before the next read (a slow reader slows the export down).
 *
 * Whether contributions are included is decided before the meta is written, by reading the first
 * one: credentials that may not read the contributions stream (a site's) give a bundle that says
 * they were skipped.
 *
 * @throws AuditError `AUDIT_SOURCE_UNAVAILABLE` when the log, an aggregate (unless
 *   `skipAggregates`) or, once the first was read, a contribution cannot be read: a bundle never
 *   silently lacks what it claims to include (the sink then holds a bundle without its trailer,
 *   which no reader accepts).
 */
export async function exportAuditBundle(
  source: AuditSource,
  options: ExportAuditBundleOptions,
  sink: BundleSink,
): Promise<ExportedBundleSummary> {
  if (typeof sink !== 'function')
    throw new InvalidArgumentError('sink must be a function', { details: { name: 'sink' } });
  if (options.signer?.member !== source.member) {
    throw new InvalidArgumentError(
      `options.signer must be the member that reads the log (${JSON.stringify(source.member)})`,
      { details: { name: 'options.signer' } },
    );
  }
  const skip = options.skipAggregates === true;
  const last = await source.lastSequence();
  const plan = await planBundle(source, options.registry, last);
  const read = source.contribution?.bind(source);
  const contributionNames = [...plan.contributions.keys()].sort(byName);
  let withContributions = !skip && options.skipContributions !== true && read !== undefined;
  let first: ContributionRead | undefined;
  if (withContributions && contributionNames.length > 0) {
    const c = plan.contributions.get(contributionNames[0]!)!;
    first = await read!(c.key, c.maxBytes, c.maxFrames);
    // Credentials that may not read the contributions stream (a site's): the bundle says so.
    if (first.status === 'unavailable') withContributions = false;
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
  const w = new AuditBundleWriter(sink);
  await w.start(meta, options.registry.bytes, options.genesis);
  let entries = 0;
  for await (const e of source.entries(last)) {
    await w.entry(e);
    entries++;
  }
  let objects = 0;
  let absent = 0;
  if (!skip) {
    for (const name of [...plan.objects.keys()].sort(byName)) {
      const got = await source.aggregate(name, plan.objects.get(name)!);
      if (got.status === 'unavailable') {
        throw new AuditError(
          'AUDIT_SOURCE_UNAVAILABLE',
          `cannot read aggregate ${JSON.stringify(name)}: ${got.reason} (export with credentials that may read the aggregate store, or skip aggregates)`,
          { details: { object: name } },
        );
      }
      // Too large or corrupt in the store: exported as absent, and the audit of the bundle reports it missing.
      if (got.status === 'found') objects++;
      else absent++;
      await w.object(name, got.status === 'found' ? got.bytes : null);
    }
  }
  let contributions = 0;
  if (withContributions) {
    for (const [i, name] of contributionNames.entries()) {
      const c = plan.contributions.get(name)!;
      const got = i === 0 && first !== undefined ? first : await read!(c.key, c.maxBytes, c.maxFrames);
      first = undefined;
      if (got.status === 'unavailable') {
        throw new AuditError(
          'AUDIT_SOURCE_UNAVAILABLE',
          `cannot read contribution ${JSON.stringify(name)}: ${got.reason} (the bundle says contributions are included)`,
          { details: { contribution: name } },
        );
      }
      if (got.status === 'found') {
        contributions++;
        await w.contribution(name, got.bytes);
      } else if (got.status === 'overwritten') {
        contributions++;
        await w.contribution(name, got.bytes, { kind: 'overwritten' });
      } else if (got.status === 'absent') {
        await w.contribution(name, null);
      } else {
        await w.contribution(name, null, { kind: 'unreadable', reason: got.reason });
      }
    }
  }
  await w.finish(options.signer);
  return {
    federation: source.federation,
    lastSequence: last,
    entries,
    objects,
    absent,
    aggregates: meta.aggregates,
    contributions,
    contributionsIncluded: withContributions ? 'included' : 'skipped',
    bytes: w.bytes,
  };
}
