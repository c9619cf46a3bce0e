// `cohort audit` on the log of a short real federation (coordinator, aggregator and three agents in
// this process, a real nats-server with the members' NKEY users and mutual TLS): a bundle exported
// with the auditor's read-only user verifies clean; each tampered copy (one change per case) is
// found, with its code, at the entry it concerns; the live log verifies as the auditor's read-only
// user. A site may not read the stored contributions: its bundle and its live audit check every
// entry and aggregate but are incomplete (no sum re-added).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPair } from '../../crypto/signature/index.ts';
import {
  type AuditBundle,
  type AuditReport,
  bundleAuditSource,
  decodeAuditBundle,
  encodeAuditBundle,
  loadBundleSigner,
  resolveAuditTrust,
  verifyAudit,
} from '../../src/audit/index.ts';
import { withLiveSource } from '../../src/cli/commands/audit-session.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { openControl, sealControl } from '../../src/protocol/index.ts';
import { federationGenesis } from '../../src/services/agent/index.ts';
import { ckksParamsOf } from '../../src/services/index.ts';
import { Federation } from '../helpers/federation.ts';
import { auditExport, auditLive, cohort } from '../helpers/run-cli.ts';

const OVERRIDES: Partial<CohortConfigInput> = {
  round: { heartbeatMs: 200, missedHeartbeats: 5, deadlineMs: 8000, voteTimeoutMs: 8000 },
  learning: { model: 'logreg', trainLimit: 600, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

let f: Federation;
let dir: string;
let bundlePath: string;
let bundle: AuditBundle;
/** Log sequence of each decision, by round. */
const decisionAt = new Map<number, number>();

beforeAll(async () => {
  f = await Federation.create('afed', { aggregators: 1, sites: 3, overrides: OVERRIDES });
  await f.startAggregator('agg-1');
  for (const s of f.dep.sites) await f.startAgent(s);
  const summary = await f.runCoordinator(2);
  expect(summary.committed).toBeGreaterThanOrEqual(1);
  dir = mkdtempSync(join(tmpdir(), 'cohort-audit-'));
  bundlePath = join(dir, 'audit.bin');
  for (const [member, path, ...extra] of [
    ['auditor-1', bundlePath],
    ['site-1', join(dir, 'site.bin')],
    ['auditor-1', join(dir, 'no-contributions.bin'), '--skip-contributions'],
  ] as const) {
    await auditExport(f.dep.configPath, path, member, ...extra);
  }
  bundle = decodeAuditBundle(readFileSync(bundlePath));
  for (const e of await f.logEntries()) {
    if (e.record.decision?.commit) decisionAt.set(e.record.decision.round, e.sequence);
  }
}, 120_000);

afterAll(async () => {
  await f?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `audit verify --json` of `b` (written to a file), with the federation's config as the trust. */
async function verify(b: AuditBundle, ...extra: string[]) {
  const path = join(dir, `tampered-${Math.random().toString(36).slice(2)}.bin`);
  writeFileSync(path, await encodeAuditBundle(b, loadBundleSigner(f.dep.config, b.meta.member!)));
  const r = await cohort(
    'audit',
    'verify',
    '--bundle',
    path,
    '--config',
    f.dep.configPath,
    '--json',
    ...extra,
  );
  return { ...r, report: r.stdout === '' ? null : (JSON.parse(r.stdout) as AuditReport) };
}

const withEntries = (entries: AuditBundle['entries']): AuditBundle => ({ ...bundle, entries });

/** What the auditor trusts: the registry the configuration pins (its copy in `b`) and the genesis. */
const trustOf = (b: AuditBundle) =>
  resolveAuditTrust(
    {
      federation: f.dep.config.federation.id,
      registryPin: f.dep.config.members!.registry!.sha256,
      genesis: federationGenesis(f.dep.config).commit,
    },
    b,
  );
const ckksParams = () => [ckksParamsOf(f.dep.config)];

describe('cohort audit on a real federation log', () => {
  it('the exported bundle verifies clean (exit 0): every entry, commit hash and aggregate checked', async () => {
    const { status, report, stderr } = await verify(bundle);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(report!.verified).toBe(true);
    expect(report!.problems).toEqual([]);
    expect(report!.entries).toBe(bundle.entries.length);
    expect(report!.checked.signatures).toBe(bundle.entries.length);
    expect(report!.checked.links).toBe(bundle.entries.length);
    expect(report!.historyThrough).toBe(bundle.meta.lastSequence);
    expect(report!.checked.commitHashes).toBe(decisionAt.size);
    expect(report!.checked.aggregates).toBe(decisionAt.size);
    expect(report!.head.height).toBe(decisionAt.size);
    expect(report!.source).toMatchObject({ kind: 'bundle', member: 'auditor-1' });
    expect(report!.checked.recomputed).toBe(decisionAt.size);

    const text = await cohort('audit', 'verify', '--bundle', bundlePath, '--config', f.dep.configPath);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^result +verified$/m);
  });

  it("a site's bundle holds no contribution: every entry and aggregate checks, the audit is incomplete", async () => {
    const site = decodeAuditBundle(readFileSync(join(dir, 'site.bin')));
    expect(site.meta).toMatchObject({ member: 'site-1', contributions: 'skipped' });
    const report = await verifyAudit(bundleAuditSource(site), trustOf(site), { ckksParams: ckksParams() });
    expect(report.problems).toEqual([]);
    expect(report.checked.aggregates).toBe(decisionAt.size);
    // A site's seal vouches for nothing (any member could relabel a bundle as its own): unsealed.
    expect(report.unchecked.map((u) => u.code)).toEqual([
      ...[...decisionAt].map(() => 'CONTRIBUTIONS_UNAVAILABLE'),
      'BUNDLE_UNSEALED',
    ]);
    expect(report.unchecked.at(-1)!.message).toMatch(/sealed by "site-1", a site/);
    expect(report.source.sealedBy).toBe(null);
    expect(report.verified).toBe(false);
    // The auditor may skip the contributions (then listed), never the seal.
    const skipped = await verifyAudit(bundleAuditSource(site), trustOf(site), {
      ckksParams: ckksParams(),
      skipContributions: true,
    });
    expect(skipped.unchecked.map((u) => u.code)).toEqual([
      ...[...decisionAt].map(() => 'CONTRIBUTIONS_SKIPPED'),
      'BUNDLE_UNSEALED',
    ]);
    expect(skipped.verified).toBe(false);
  });

  it('`audit verify` of a bundle without contributions: exit 2 naming CONTRIBUTIONS_UNAVAILABLE, or 0 skipping them', async () => {
    // A site's bundle stays incomplete either way: its seal vouches for nothing.
    const ofSite = await cohort(
      'audit',
      'verify',
      '--bundle',
      join(dir, 'site.bin'),
      '--config',
      f.dep.configPath,
      '--skip-contributions',
    );
    expect(ofSite.status).toBe(2);
    expect(ofSite.stderr).toMatch(
      /^error \[AUDIT_INCOMPLETE\]: .*BUNDLE_UNSEALED: the bundle is sealed by "site-1"/m,
    );
    const site = join(dir, 'no-contributions.bin');
    const incomplete = await cohort('audit', 'verify', '--bundle', site, '--config', f.dep.configPath);
    expect(incomplete.status).toBe(2);
    expect(incomplete.stderr).toMatch(/^error \[AUDIT_INCOMPLETE\]: .*CONTRIBUTIONS_UNAVAILABLE/m);
    expect(incomplete.stderr).toContain('--skip-contributions');
    expect(incomplete.stderr).not.toMatch(/TypeError|undefined/);
    const skipped = await cohort(
      'audit',
      'verify',
      '--bundle',
      site,
      '--config',
      f.dep.configPath,
      '--skip-contributions',
      '--json',
    );
    expect(skipped.status, skipped.stderr).toBe(0);
    const report = JSON.parse(skipped.stdout) as AuditReport;
    expect(report.unchecked.map((u) => u.code)).toEqual([...decisionAt].map(() => 'CONTRIBUTIONS_SKIPPED'));
  });

  it("a contribution missing within the configuration's retention is a problem: CONTRIBUTION_NOT_STORED, exit 3", async () => {
    const [name] = [...bundle.contributions!].find(([, v]) => v !== null)!;
    const contributions = new Map(bundle.contributions);
    contributions.delete(name);
    const path = join(dir, 'one-gone.bin');
    writeFileSync(
      path,
      await encodeAuditBundle(
        { ...bundle, contributions },
        loadBundleSigner(f.dep.config, bundle.meta.member!),
      ),
    );
    // The round is far younger than `history.updateRetentionMs` (which the CLI passes on): it was
    // never stored, not gone with age.
    const r = await cohort('audit', 'verify', '--bundle', path, '--config', f.dep.configPath, '--json');
    expect(r.status).toBe(3);
    expect((JSON.parse(r.stdout) as AuditReport).problems.map((p) => p.code)).toEqual([
      'CONTRIBUTION_NOT_STORED',
    ]);
  });

  it('an altered aggregate in the object store: AGGREGATE_DIGEST_MISMATCH at its decision', async () => {
    const [round, sequence] = [...decisionAt][0]!;
    const objects = new Map(bundle.objects);
    const bytes = objects.get(`round-${round}`)!.slice();
    bytes[bytes.length - 1]! ^= 0x01;
    objects.set(`round-${round}`, bytes);
    const { status, report } = await verify({ ...bundle, objects });
    expect(status).toBe(3);
    expect(report!.problems).toEqual([
      { sequence, code: 'AGGREGATE_DIGEST_MISMATCH', message: expect.stringContaining(`round-${round}`) },
    ]);
  });

  it('a removed record: SEQUENCE_GAP at the record after it, naming both sequences', async () => {
    const { status, report } = await verify(withEntries(bundle.entries.filter((e) => e.sequence !== 2)));
    expect(status).toBe(3);
    expect(report!.problems[0]).toEqual({
      sequence: 3,
      code: 'SEQUENCE_GAP',
      message: 'entry 3 follows entry 1: entry 2 is missing',
    });
  });

  it('a record re-signed with another key: SIGNATURE_INVALID at it (and the chain breaks after it)', async () => {
    const mallory = generateSigningKeyPair('falcon-512');
    const entries = bundle.entries.map((e) => {
      if (e.sequence !== 2) return e;
      const record = openControl(e.bytes, 'log-record', f.coord.keys).body;
      return { sequence: 2, bytes: sealControl('log-record', record, 'coordinator', mallory) };
    });
    const { status, report } = await verify(withEntries(entries));
    expect(status).toBe(3);
    expect(report!.problems.map((p) => [p.sequence, p.code])).toEqual([
      [2, 'SIGNATURE_INVALID'],
      [3, 'CHAIN_BROKEN'],
    ]);
  });

  it('a reordered record: SEQUENCE_MISMATCH where the swapped entries are stored', async () => {
    const [a, b] = [bundle.entries[1]!, bundle.entries[2]!];
    const entries = bundle.entries.map((e) =>
      e === a
        ? { sequence: a.sequence, bytes: b.bytes }
        : e === b
          ? { sequence: b.sequence, bytes: a.bytes }
          : e,
    );
    const { status, report } = await verify(withEntries(entries));
    expect(status).toBe(3);
    expect(report!.problems.slice(0, 2).map((p) => [p.sequence, p.code])).toEqual([
      [a.sequence, 'SEQUENCE_MISMATCH'],
      [b.sequence, 'SEQUENCE_MISMATCH'],
    ]);
    expect(report!.problems[0]!.message).toContain(`claims sequence ${b.sequence}`);
  });

  it('a corrupted frame: FRAME_MALFORMED at it', async () => {
    const entries = bundle.entries.map((e) => {
      if (e.sequence !== 2) return e;
      const bytes = e.bytes.slice();
      bytes[0] = 0x58; // not the COHB magic
      return { sequence: 2, bytes };
    });
    const { status, report } = await verify(withEntries(entries));
    expect(status).toBe(3);
    expect(report!.problems[0]).toMatchObject({ sequence: 2, code: 'FRAME_MALFORMED' });
  });

  it('a bundle damaged in transit cannot be audited: BUNDLE_INVALID, exit 2', async () => {
    const bytes = readFileSync(bundlePath);
    bytes[bytes.length >> 1]! ^= 0x40;
    const path = join(dir, 'damaged.bin');
    writeFileSync(path, bytes);
    const r = await cohort('audit', 'verify', '--bundle', path, '--config', f.dep.configPath);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('error [BUNDLE_INVALID]');
  });

  it('live, as the auditor’s read-only NATS user: the log verifies (exit 0)', async () => {
    const report = await auditLive(f.dep.configPath, 'auditor-1', '--skip-aggregates');
    expect(report.source).toMatchObject({ kind: 'live', member: 'auditor-1' });
    expect(report.entries).toBe(bundle.entries.length);
    expect(report.problems).toEqual([]);
    expect(report.unchecked.map((u) => u.code)).toEqual([...decisionAt].map(() => 'AGGREGATE_SKIPPED'));
    // Without --skip-aggregates: the auditor's user may read the aggregate store (and nothing
    // else of the object stores), so every aggregate is checked live.
    expect((await auditLive(f.dep.configPath)).checked.aggregates).toBe(decisionAt.size);
    // A site's read-only user may also read the aggregate store (every aggregate is checked live),
    // not the contributions: nothing is re-added, so its audit is incomplete.
    const site = await withLiveSource(f.dep.config, 'site-2', (source) =>
      verifyAudit(source, trustOf(bundle), { ckksParams: ckksParams() }),
    );
    expect(site.checked.aggregates).toBe(decisionAt.size);
    expect(site.problems).toEqual([]);
    expect(site.unchecked.map((u) => u.code)).toEqual([...decisionAt].map(() => 'CONTRIBUTIONS_UNAVAILABLE'));
    expect(site.verified).toBe(false);
  });
});
