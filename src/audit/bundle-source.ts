import type { AuditBundle } from './audit-bundle.ts';
import type { AggregateRead, AuditSource } from './audit-source.ts';

/**
 * An {@link AuditSource} over a decoded bundle: its entries and objects as exported, its meta's last
 * sequence. An object the bundle does not hold is `unavailable` (exported without aggregates).
 */
export function bundleAuditSource(bundle: AuditBundle): AuditSource {
  return {
    kind: 'bundle',
    federation: bundle.meta.federation,
    stream: bundle.meta.stream,
    member: bundle.meta.member,
    exportedUnixMs: bundle.meta.exportedUnixMs,
    lastSequence: async () => bundle.meta.lastSequence,
    async *entries(until: number) {
      for (const e of bundle.entries) if (e.sequence <= until) yield e;
    },
    aggregate: async (name: string, maxBytes: number): Promise<AggregateRead> => {
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
    contribution: async (name: string, maxBytes: number): Promise<AggregateRead> => {
      if (bundle.contributions?.has(name) !== true) {
        return {
          status: 'unavailable',
          reason:
            bundle.meta.contributions !== 'included'
              ? 'the bundle was exported without contributions'
              : 'the bundle holds no copy of it',
        };
      }
      const bytes = bundle.contributions!.get(name) ?? null;
      if (bytes === null) return { status: 'absent' };
      if (bytes.length > maxBytes) {
        return { status: 'too-large', reason: `${bytes.length} bytes, at most ${maxBytes} accepted` };
      }
      return { status: 'found', bytes };
    },
  };
}
