import { type ContributionKey, contributionName } from '../services/store/index.ts';
import { type AuditBundle, type BundleSeal, sealOf } from './audit-bundle.ts';
import type { AggregateRead, AuditSource, ContributionRead } from './audit-source.ts';

/** An {@link AuditSource} over a bundle that also says which of its items the audit never asked for. */
export interface BundleAuditSource extends AuditSource {
  readonly kind: 'bundle';
  /**
   * The exporter's seal (version 4), its signature unchecked; null for an unsealed (older) bundle,
   * or one not exactly as `decodeAuditBundle` returned it (`sealOf`).
   */
  readonly seal: BundleSeal | null;
  /** The bundle's format version. */
  readonly version: number;
  /**
   * Objects and contributions the bundle holds that the audit has not asked for (after an audit:
   * items no verified log entry names).
   */
  unrequested(): string[];
}

/**
 * An {@link AuditSource} over a decoded bundle: its entries and objects as exported, its meta's last
 * sequence. An object the bundle does not hold is `unavailable` (exported without aggregates). A
 * contribution is looked up by its name (`contributionName`): held, marked absent, overwritten or
 * unreadable as the exporter found it; one the bundle does not hold although its meta says
 * contributions are included is `absent` (the exporter writes an item for every contribution the
 * log lists, so a missing one was removed); with contributions skipped, `unavailable`. The evidence
 * was read at the bundle's export time (the audit never takes it as later than its own clock).
 */
export function bundleAuditSource(bundle: AuditBundle): BundleAuditSource {
  const asked = new Set<string>();
  const notes = bundle.contributionNotes ?? new Map();
  return {
    kind: 'bundle',
    seal: sealOf(bundle),
    version: bundle.meta.version,
    federation: bundle.meta.federation,
    stream: bundle.meta.stream,
    member: bundle.meta.member,
    exportedUnixMs: bundle.meta.exportedUnixMs,
    lastSequence: async () => bundle.meta.lastSequence,
    // The audit caps it at its own clock: a bundle from the future is read as of now.
    readAtUnixMs: () => bundle.meta.exportedUnixMs,
    async *entries(until: number) {
      for (const e of bundle.entries) if (e.sequence <= until) yield e;
    },
    aggregate: async (name: string, maxBytes: number): Promise<AggregateRead> => {
      asked.add(`object ${name}`);
      if (!bundle.objects.has(name)) {
        return {
          status: 'unavailable',
          reason:
            bundle.meta.aggregates === 'skipped'
              ? 'the bundle was exported without aggregates'
              : 'the bundle holds no copy of it',
        };
      }
      const bytes = bundle.objects.get(name) ?? null;
      if (bytes === null) return { status: 'absent' };
      if (bytes.length > maxBytes) {
        return { status: 'too-large', reason: `${bytes.length} bytes, at most ${maxBytes} accepted` };
      }
      return { status: 'found', bytes };
    },
    contribution: async (key: ContributionKey, maxBytes: number): Promise<ContributionRead> => {
      const name = contributionName(key);
      asked.add(`contribution ${name}`);
      if (bundle.meta.contributions !== 'included') {
        return { status: 'unavailable', reason: 'the bundle was exported without contributions' };
      }
      const bytes = bundle.contributions?.get(name) ?? null;
      const note = notes.get(name);
      if (note?.kind === 'unreadable') return { status: 'corrupt', reason: note.reason };
      if (bytes === null) return { status: 'absent' };
      if (bytes.length > maxBytes) {
        return { status: 'too-large', reason: `${bytes.length} bytes, at most ${maxBytes} accepted` };
      }
      return note?.kind === 'overwritten'
        ? { status: 'overwritten', bytes, reason: 'a frame of it was written more than once' }
        : { status: 'found', bytes };
    },
    unrequested: () => [
      ...[...bundle.objects.keys()].map((n) => `object ${n}`).filter((n) => !asked.has(n)),
      ...[...(bundle.contributions?.keys() ?? [])]
        .map((n) => `contribution ${n}`)
        .filter((n) => !asked.has(n)),
    ],
  };
}
