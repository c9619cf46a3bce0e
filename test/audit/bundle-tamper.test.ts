// Issue 22, acceptance 4: an audit bundle with any item removed, duplicated, reordered or altered,
// and resealed, is refused or reported, never verified clean. Two tamperers: one without the
// exporter's key (it can only recompute the trailer: the exporter's seal no longer verifies), and
// the exporter itself, which seals again with its own key (then the audit's own checks must catch
// every change but a cut to a prefix, which is its signed statement of an earlier log).
// A real `plain`-mode federation (two aggregators, three sites, a real nats-server) runs two rounds;
// the auditor exports a bundle (CLI). Each kind of item (meta, registry, genesis, log entry, aggregate
// object, contribution) is removed, duplicated, moved and altered in turn, then a fast-check property
// draws random sequences of such tamperings. The verdict is the library's (decode, trust, verify);
// a few cases also go through `cohort audit verify` for the exit status.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sign } from '../../crypto/signature/index.ts';
import {
  type AuditReport,
  BUNDLE_ITEM,
  BUNDLE_SEAL_DOMAIN,
  type BundleSigner,
  bundleAuditSource,
  decodeAuditBundle,
  encodeAuditBundle,
  loadBundleSigner,
  resolveAuditTrust,
  verifyAudit,
} from '../../src/audit/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { federationGenesis } from '../../src/services/agent/index.ts';
import { ckksParamsOf } from '../../src/services/index.ts';
import { Federation } from '../helpers/federation.ts';
import { auditExport, cohort } from '../helpers/run-cli.ts';

const F = 'tamper';
const OVERRIDES: Partial<CohortConfigInput> = {
  federation: { id: F, mode: 'plain' },
  round: { heartbeatMs: 200, missedHeartbeats: 5, deadlineMs: 8000, voteTimeoutMs: 8000, minContributors: 3 },
  learning: { model: 'logreg', trainLimit: 600, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

/** One item of a bundle as it lies in the file. */
interface Item {
  readonly type: number;
  readonly name: Uint8Array;
  readonly data: Uint8Array;
}

const MAGIC_AND_VERSION = 16;

/** The items of a bundle, seal and trailer excluded (the bytes are taken as they are, nothing checked). */
function itemsOf(bytes: Uint8Array): Item[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const items: Item[] = [];
  let at = MAGIC_AND_VERSION;
  while (at < bytes.length) {
    const type = bytes[at]!;
    const n = view.getUint32(at + 1, false);
    const name = bytes.subarray(at + 5, at + 5 + n);
    const d = view.getUint32(at + 5 + n, false);
    const data = bytes.subarray(at + 9 + n, at + 9 + n + d);
    at += 9 + n + d;
    if (type !== BUNDLE_ITEM.trailer && type !== BUNDLE_ITEM.seal) items.push({ type, name, data });
  }
  return items;
}

function itemBytes(item: Item): Uint8Array {
  const head = new Uint8Array(9 + item.name.length);
  const view = new DataView(head.buffer);
  head[0] = item.type;
  view.setUint32(1, item.name.length, false);
  head.set(item.name, 5);
  view.setUint32(5 + item.name.length, item.data.length, false);
  return Buffer.concat([head, item.data]);
}

/**
 * The bytes of `items` after the original header, sealed by `by` (the exporter's key: the exporter
 * itself tampering), or with the original seal kept (`'kept'`: anyone else), or none (`'none'`),
 * and a trailer recomputed over them.
 */
function resealed(
  header: Uint8Array,
  items: readonly Item[],
  by: BundleSigner | 'kept' | 'none' = exporter,
): Uint8Array {
  const body = Buffer.concat([header, ...items.map(itemBytes)]);
  const seal =
    by === 'none'
      ? new Uint8Array(0)
      : itemBytes(
          by === 'kept'
            ? sealItem
            : {
                type: BUNDLE_ITEM.seal,
                name: new TextEncoder().encode(by.member),
                data: sign(by.key, BUNDLE_SEAL_DOMAIN, createHash('sha256').update(body).digest()),
              },
        );
  const sealed = Buffer.concat([body, seal]);
  const digest = createHash('sha256').update(sealed).digest();
  const trailer = new Uint8Array(9 + 32);
  trailer[0] = BUNDLE_ITEM.trailer;
  trailer.set(digest, 9);
  new DataView(trailer.buffer).setUint32(5, 32, false);
  return new Uint8Array(Buffer.concat([sealed, trailer]));
}

/** A tampering of the item list. */
type Tamper =
  | { readonly op: 'remove'; readonly at: number }
  | { readonly op: 'duplicate'; readonly at: number }
  | { readonly op: 'swap'; readonly at: number; readonly with: number }
  | {
      readonly op: 'flip';
      readonly at: number;
      readonly byte: number;
      readonly bit: number;
      readonly inName: boolean;
    };

function apply(items: readonly Item[], t: Tamper): Item[] {
  const out = [...items];
  const i = t.at % out.length;
  switch (t.op) {
    case 'remove':
      out.splice(i, 1);
      return out;
    case 'duplicate':
      out.splice(i + 1, 0, out[i]!);
      return out;
    case 'swap': {
      let j = t.with % out.length;
      if (j === i) j = (i + 1) % out.length;
      [out[i], out[j]] = [out[j]!, out[i]!];
      return out;
    }
    case 'flip': {
      const item = out[i]!;
      const field = t.inName && item.name.length > 0 ? 'name' : item.data.length > 0 ? 'data' : 'name';
      const bytes = item[field].slice();
      if (bytes.length === 0) {
        out.splice(i, 1, { ...item, data: new Uint8Array([1 << t.bit]) });
        return out;
      }
      bytes[t.byte % bytes.length]! ^= 1 << t.bit;
      out.splice(i, 1, { ...item, [field]: bytes });
      return out;
    }
  }
}

let f: Federation;
let dir: string;
let original: Uint8Array;
let header: Uint8Array;
let items: Item[];
/** The exported bundle's seal item, and its exporter's signer (auditor-1's key). */
let sealItem: Item;
let exporter: BundleSigner;

/** The auditor's verdict on `bytes`: refused (decode, trust or verify throws), reported, or clean. */
async function verdict(bytes: Uint8Array): Promise<{ kind: 'refused' | 'reported' | 'clean'; why: string }> {
  try {
    const b = decodeAuditBundle(bytes);
    const trust = resolveAuditTrust(
      {
        federation: F,
        registryPin: f.dep.config.members!.registry!.sha256,
        genesis: federationGenesis(f.dep.config).commit,
      },
      b,
    );
    const report: AuditReport = await verifyAudit(bundleAuditSource(b), trust, {
      ckksParams: [ckksParamsOf(f.dep.config)],
      contributionRetentionMs: f.dep.config.history.updateRetentionMs,
    });
    if (report.verified) return { kind: 'clean', why: '' };
    return {
      kind: 'reported',
      why: [...report.problems.map((p) => p.code), ...report.unchecked.map((u) => u.code)].join(','),
    };
  } catch (err) {
    return { kind: 'refused', why: `${(err as { code?: string }).code ?? ''} ${(err as Error).message}` };
  }
}

const TYPE_NAMES: Record<number, string> = {
  [BUNDLE_ITEM.meta]: 'meta',
  [BUNDLE_ITEM.registry]: 'registry',
  [BUNDLE_ITEM.genesis]: 'genesis',
  [BUNDLE_ITEM.entry]: 'entry',
  [BUNDLE_ITEM.object]: 'object',
  [BUNDLE_ITEM.contribution]: 'contribution',
};

beforeAll(async () => {
  f = await Federation.create(F, { aggregators: 2, sites: 3, overrides: OVERRIDES });
  for (const a of f.dep.aggregators) await f.startAggregator(a);
  for (const s of f.dep.sites) await f.startAgent(s);
  expect((await f.runCoordinator(2)).committed).toBe(2);
  dir = mkdtempSync(join(tmpdir(), 'cohort-tamper-'));
  const path = join(dir, 'audit.bin');
  original = await auditExport(f.dep.configPath, path);
  header = original.subarray(0, MAGIC_AND_VERSION);
  items = itemsOf(original);
  const trailerAt = original.length - 41;
  const sealName = new TextEncoder().encode('auditor-1');
  const sealAt = Buffer.from(original).lastIndexOf(
    Buffer.concat([Buffer.from([BUNDLE_ITEM.seal, 0, 0, 0, sealName.length]), sealName]),
    trailerAt,
  );
  sealItem = {
    type: BUNDLE_ITEM.seal,
    name: sealName,
    data: original.subarray(sealAt + 9 + sealName.length, trailerAt),
  };
  exporter = loadBundleSigner(f.dep.config, 'auditor-1');
}, 180_000);

afterAll(async () => {
  await f?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a tampered audit bundle is never verified clean', () => {
  it('the bundle as exported verifies clean, and resealing it unchanged gives the same bytes', async () => {
    expect(Buffer.from(resealed(header, items, 'kept')).equals(Buffer.from(original))).toBe(true);
    expect(await verdict(original)).toEqual({ kind: 'clean', why: '' });
    expect(await verdict(resealed(header, items))).toEqual({ kind: 'clean', why: '' });
    // Every kind of item is there: meta, registry, genesis, entries, aggregates, contributions.
    const kinds = new Set(items.map((i) => TYPE_NAMES[i.type]));
    expect([...kinds].sort()).toEqual(['contribution', 'entry', 'genesis', 'meta', 'object', 'registry']);
  });

  it('each kind of item removed, duplicated, moved or altered (and resealed): refused or reported', async () => {
    const seen: string[] = [];
    for (const type of Object.keys(TYPE_NAMES).map(Number)) {
      const at = items.findIndex((i) => i.type === type);
      const last = items.findLastIndex((i) => i.type === type);
      const tampers: [string, Tamper][] = [
        ['removed', { op: 'remove', at }],
        ['duplicated', { op: 'duplicate', at }],
        ['moved before the previous item', { op: 'swap', at, with: at === 0 ? 1 : at - 1 }],
        ['moved after the next item', { op: 'swap', at: last, with: last + 1 }],
        // Among items of its own kind (entries, objects, contributions: each kind in name order).
        ...(items[at + 1]?.type === type
          ? ([['swapped with the next of its kind', { op: 'swap', at, with: at + 1 }]] as [string, Tamper][])
          : []),
        ['altered (a bit of its data)', { op: 'flip', at, byte: 7, bit: 0, inName: false }],
        ['altered (a bit of its name)', { op: 'flip', at, byte: 0, bit: 1, inName: true }],
      ];
      for (const [how, t] of tampers) {
        const v = await verdict(resealed(header, apply(items, t)));
        seen.push(`${TYPE_NAMES[type]} ${how}: ${v.kind} ${v.why.slice(0, 80)}`);
        expect(v.kind, `${TYPE_NAMES[type]} ${how}`).not.toBe('clean');
      }
    }
    expect(seen.length).toBe(39);
  }, 120_000);

  it('random tamperings (fast-check): none verifies clean', async () => {
    const tamper: fc.Arbitrary<Tamper> = fc.oneof(
      fc.record({ op: fc.constant('remove' as const), at: fc.nat() }),
      fc.record({ op: fc.constant('duplicate' as const), at: fc.nat() }),
      fc.record({ op: fc.constant('swap' as const), at: fc.nat(), with: fc.nat() }),
      fc.record({
        op: fc.constant('flip' as const),
        at: fc.nat(),
        byte: fc.nat(),
        bit: fc.integer({ min: 0, max: 7 }),
        inName: fc.boolean(),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(tamper, { minLength: 1, maxLength: 3 }), async (tampers) => {
        const changed = tampers.reduce(apply, items);
        const bytes = resealed(header, changed);
        // A sequence that undoes itself (a swap and its reverse, a copy removed again) is no
        // tampering: compare the items under the original seal, since a new seal is new bytes.
        fc.pre(!Buffer.from(resealed(header, changed, 'kept')).equals(Buffer.from(original)));
        const v = await verdict(bytes);
        expect(v.kind, JSON.stringify(tampers)).not.toBe('clean');
      }),
      { numRuns: 120, seed: 22 },
    );
  }, 300_000);

  it('the meta: each field the verdict rests on, altered, is refused or reported; the exporter’s name and clock are its sealed statements', async () => {
    const meta = JSON.parse(new TextDecoder().decode(items[0]!.data)) as Record<string, unknown>;
    const withMeta = (over: Record<string, unknown>, by: BundleSigner | 'kept' = exporter) =>
      resealed(
        header,
        [
          { ...items[0]!, data: new TextEncoder().encode(JSON.stringify({ ...meta, ...over })) },
          ...items.slice(1),
        ],
        by,
      );
    const last = meta['lastSequence'] as number;
    const cases: [Record<string, unknown>, 'refused' | 'reported'][] = [
      [{ format: 'other' }, 'refused'],
      [{ version: 1 }, 'refused'],
      [{ federation: 'other' }, 'refused'],
      [{ stream: 'COHORT_OTHER' }, 'refused'],
      [{ lastSequence: last - 1 }, 'refused'],
      [{ lastSequence: last + 1 }, 'reported'],
      [{ aggregates: 'skipped' }, 'refused'],
      [{ contributions: 'skipped' }, 'refused'],
    ];
    for (const [over, kind] of cases) {
      expect((await verdict(withMeta(over))).kind, JSON.stringify(over)).toBe(kind);
    }
    // Who exported it and when: the exporter's signed statements. Anyone else who changes them is
    // caught by the seal; the exporter can restate its own clock under its own seal (the report
    // says whose seal it is), and cannot name another exporter.
    expect(await verdict(withMeta({ exportedUnixMs: 1 }, 'kept'))).toMatchObject({
      kind: 'reported',
      why: 'BUNDLE_SEAL_INVALID',
    });
    expect((await verdict(withMeta({ member: 'auditor-2' }, 'kept'))).kind).toBe('refused');
    const b = decodeAuditBundle(withMeta({ exportedUnixMs: 1 }));
    const trust = resolveAuditTrust(
      {
        federation: F,
        registryPin: f.dep.config.members!.registry!.sha256,
        genesis: federationGenesis(f.dep.config).commit,
      },
      b,
    );
    const report = await verifyAudit(bundleAuditSource(b), trust, {
      ckksParams: [ckksParamsOf(f.dep.config)],
    });
    expect(report.source).toMatchObject({ member: 'auditor-1', exportedUnixMs: 1, sealedBy: 'auditor-1' });
  }, 60_000);

  it('cut to a prefix of its log, the meta lowered to match: refused or reported unless its exporter seals it', async () => {
    const meta = JSON.parse(new TextDecoder().decode(items[0]!.data)) as Record<string, unknown>;
    const sequenceOf = (i: Item) => Number(new TextDecoder().decode(i.name));
    const firstEntry = sequenceOf(items.find((i) => i.type === BUNDLE_ITEM.entry)!);
    const evidence = new Set<number>([
      BUNDLE_ITEM.object,
      BUNDLE_ITEM.absent,
      BUNDLE_ITEM.contribution,
      BUNDLE_ITEM.contributionAbsent,
    ]);
    // The log as it stood after its first entry: later entries and every aggregate and
    // contribution (none of which that prefix names) left out.
    const cut = items
      .filter((i) => !(i.type === BUNDLE_ITEM.entry && sequenceOf(i) > firstEntry) && !evidence.has(i.type))
      .map((i, k) =>
        k === 0
          ? { ...i, data: new TextEncoder().encode(JSON.stringify({ ...meta, lastSequence: firstEntry })) }
          : i,
      );
    expect(cut.filter((i) => i.type === BUNDLE_ITEM.entry)).toHaveLength(1);
    expect(await verdict(resealed(header, cut, 'kept'))).toMatchObject({
      kind: 'reported',
      why: 'BUNDLE_SEAL_INVALID',
    });
    // Unsealed, as a version 3 bundle (the format before seals): incomplete, never clean.
    const v3 = (items: Item[]) => {
      const header3 = header.slice();
      new DataView(header3.buffer).setUint32(12, 3, false);
      const meta3 = JSON.parse(new TextDecoder().decode(items[0]!.data)) as Record<string, unknown>;
      const first = {
        ...items[0]!,
        data: new TextEncoder().encode(JSON.stringify({ ...meta3, version: 3 })),
      };
      return resealed(header3, [first, ...items.slice(1)], 'none');
    };
    expect(await verdict(v3(cut))).toMatchObject({ kind: 'reported', why: 'BUNDLE_UNSEALED' });
    expect(await verdict(v3(items))).toMatchObject({ kind: 'reported', why: 'BUNDLE_UNSEALED' });
    // The exporter itself can seal a prefix: its signed statement that the log ended there.
    expect(await verdict(resealed(header, cut))).toEqual({ kind: 'clean', why: '' });
  }, 60_000);

  it('the seal removed, altered, or made by another member: refused or reported', async () => {
    const other = loadBundleSigner(f.dep.config, 'site-1');
    const cases: [string, Uint8Array][] = [
      ['removed', resealed(header, items, 'none')],
      [
        'a bit of its signature flipped',
        (() => {
          const data = sealItem.data.slice();
          data[10]! ^= 1;
          const saved = sealItem;
          sealItem = { ...saved, data };
          try {
            return resealed(header, items, 'kept');
          } finally {
            sealItem = saved;
          }
        })(),
      ],
      [
        'made by site-1 under auditor-1’s name',
        resealed(header, items, { member: 'auditor-1', key: other.key }),
      ],
    ];
    // Any member may seal a bundle it relabels as its own (here cut to nothing but the meta's
    // claims): only the coordinator's or an auditor's seal vouches for a bundle.
    const meta = JSON.parse(new TextDecoder().decode(items[0]!.data)) as Record<string, unknown>;
    const relabelled = [
      { ...items[0]!, data: new TextEncoder().encode(JSON.stringify({ ...meta, member: 'site-1' })) },
      ...items.slice(1),
    ];
    cases.push([
      'relabelled as site-1’s export and sealed with site-1’s key',
      resealed(header, relabelled, other),
    ]);
    for (const [how, bytes] of cases) expect((await verdict(bytes)).kind, how).not.toBe('clean');
    expect(await verdict(resealed(header, relabelled, other))).toMatchObject({
      kind: 'reported',
      why: 'BUNDLE_UNSEALED',
    });
  }, 60_000);

  it('a contribution gone past the retention is listed as expired; within it, or without a retention, it is a problem', async () => {
    const at = items.findIndex((i) => i.type === BUNDLE_ITEM.contribution);
    const b = decodeAuditBundle(resealed(header, apply(items, { op: 'remove', at })));
    const trust = resolveAuditTrust(
      {
        federation: F,
        registryPin: f.dep.config.members!.registry!.sha256,
        genesis: federationGenesis(f.dep.config).commit,
      },
      b,
    );
    const day = 86_400_000;
    const audit = async (retention: number | undefined, exported: number, now: number) =>
      verifyAudit(
        bundleAuditSource(
          decodeAuditBundle(
            await encodeAuditBundle({ ...b, meta: { ...b.meta, exportedUnixMs: exported } }, exporter),
          ),
        ),
        trust,
        {
          ckksParams: [ckksParamsOf(f.dep.config)],
          ...(retention === undefined ? {} : { contributionRetentionMs: retention }),
          now: () => now,
        },
      );
    const t = Date.now();
    // Exported two days after the round, one day of retention: it may have aged out.
    const aged = await audit(day, t + 2 * day, t + 2 * day);
    expect(aged.problems).toEqual([]);
    expect(aged.unchecked.map((u) => u.code)).toEqual(['CONTRIBUTIONS_EXPIRED']);
    expect(aged.verified).toBe(true);
    // Within the retention, without one, or with an export time past the auditor's clock: missing.
    for (const [retention, exported, now] of [
      [30 * day, t + 2 * day, t + 2 * day],
      [undefined, t + 2 * day, t + 2 * day],
      [day, t + 2 * day, t],
    ] as const) {
      const r = await audit(retention, exported, now);
      expect(
        r.problems.map((p) => p.code),
        `${retention} ${exported - t} ${now - t}`,
      ).toEqual(['CONTRIBUTION_NOT_STORED']);
    }
  }, 60_000);

  it('a removed contribution, or a contribution of another site in its place, fails `cohort audit verify` (exit 3)', async () => {
    const at = items.findIndex((i) => i.type === BUNDLE_ITEM.contribution);
    const other = items.findLastIndex((i) => i.type === BUNDLE_ITEM.contribution);
    const cases: [Item[], string][] = [
      [apply(items, { op: 'remove', at }), 'CONTRIBUTION_NOT_STORED'],
      [items.map((i, k) => (k === at ? { ...i, data: items[other]!.data } : i)), 'CONTRIBUTION_MISMATCH'],
    ];
    for (const [changed, code] of cases) {
      const path = join(dir, `t-${code}.bin`);
      writeFileSync(path, resealed(header, changed));
      const r = await cohort('audit', 'verify', '--bundle', path, '--config', f.dep.configPath, '--json');
      expect(r.status).toBe(3);
      const report = JSON.parse(r.stdout) as AuditReport;
      expect(report.problems.map((p) => p.code)).toEqual([code]);
    }
  }, 60_000);
});
