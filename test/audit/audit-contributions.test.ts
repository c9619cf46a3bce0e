// `cohort audit` re-adds every aggregate from the stored contributions (issue 10): a real federation
// (two aggregators, three sites, a real nats-server with the members' NKEY users) leaves partial and
// vote records in its log and each site update in its contributions stream; the bundle exported by the
// auditor's read-only user verifies with every aggregate recomputed byte-identical, and a forged
// vote, a contribution left out of a sum and one counted twice are each found at their record.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../crypto/digest/index.ts';
import {
  type AuditBundle,
  type AuditReport,
  decodeAuditBundle,
  encodeAuditBundle,
  loadBundleSigner,
} from '../../src/audit/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import {
  AggregateBuilder,
  type DecisionBody,
  decodeBlockBody,
  decodeManifestBody,
  FRAME_KIND,
  type LogRecordBody,
  openControl,
  sealControl,
  unframe,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import { decodeContribution, encodeAggregateObject } from '../../src/round/index.ts';
import { contributionName } from '../../src/services/store/index.ts';
import { createCommit } from '../../src/versions/index.ts';
import { Federation } from '../helpers/federation.ts';
import { auditExport, cohort } from '../helpers/run-cli.ts';

const OVERRIDES: Partial<CohortConfigInput> = {
  round: { heartbeatMs: 200, missedHeartbeats: 5, deadlineMs: 8000, voteTimeoutMs: 8000 },
  learning: { model: 'logreg', trainLimit: 600, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

let f: Federation;
let dir: string;
let bundle: AuditBundle;
/** Every stored entry's record, by sequence. */
const records = new Map<number, LogRecordBody>();

beforeAll(async () => {
  f = await Federation.create('acon', { aggregators: 2, sites: 3, overrides: OVERRIDES });
  for (const a of ['agg-1', 'agg-2']) await f.startAggregator(a);
  for (const s of f.dep.sites) await f.startAgent(s);
  const summary = await f.runCoordinator(2);
  expect(summary.committed).toBe(2);
  dir = mkdtempSync(join(tmpdir(), 'cohort-audit-con-'));
  const path = join(dir, 'audit.bin');
  bundle = decodeAuditBundle(await auditExport(f.dep.configPath, path));
  for (const e of bundle.entries)
    records.set(e.sequence, openControl(e.bytes, 'log-record', f.coord.keys).body);
}, 180_000);

afterAll(async () => {
  await f?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function verify(b: AuditBundle) {
  const path = join(dir, `b-${Math.random().toString(36).slice(2)}.bin`);
  writeFileSync(path, await encodeAuditBundle(b, loadBundleSigner(f.dep.config, 'auditor-1')));
  const r = await cohort('audit', 'verify', '--bundle', path, '--config', f.dep.configPath, '--json');
  return { ...r, report: r.stdout === '' ? null : (JSON.parse(r.stdout) as AuditReport) };
}

/** The last COMMIT: its sequence and decision. */
function lastCommit(): { sequence: number; d: DecisionBody } {
  const [sequence, r] = [...records].filter(([, r]) => r.decision?.commit).pop()!;
  return { sequence, d: r.decision! };
}

/**
 * `bundle` with the records from `from` on replaced by `edit` (a function of sequence and record),
 * each re-sealed with the coordinator's key and re-chained: only what `edit` changes is forged.
 */
function rewritten(
  from: number,
  edit: (sequence: number, r: LogRecordBody) => LogRecordBody,
  objects = bundle.objects,
): AuditBundle {
  let previous: Uint8Array | undefined;
  const entries = bundle.entries.map((e) => {
    if (e.sequence < from) return e;
    const r = edit(e.sequence, records.get(e.sequence)!);
    const bytes = sealControl(
      'log-record',
      { ...r, ...(previous === undefined ? {} : { previousEntry: previous }) },
      f.coord.member,
      f.coord.signing,
    );
    previous = sha256(bytes);
    return { sequence: e.sequence, bytes };
  });
  return { ...bundle, entries, objects };
}

/** A site's stored contribution of the round as a summable update (its ciphertexts in block order). */
function contributionOf(round: number, attempt: Uint8Array, site: string): VerifiedUpdate {
  const open = [...records.values()].find((r) => r.roundOpen?.round === round)!.roundOpen!;
  const aggregator = open.assignments.find((a) => a.site === site)!.aggregator;
  const stored = decodeContribution(
    bundle.contributions!.get(contributionName({ aggregator, round, attempt, site }))!,
  );
  const manifest = decodeManifestBody(unframe(stored.manifest, FRAME_KIND.manifest));
  const blocks = stored.blocks.map((b) => decodeBlockBody(unframe(b, FRAME_KIND.block)));
  blocks.sort((a, b) => a.blockIndex - b.blockIndex);
  return {
    signer: `${site}-${Math.random()}`,
    digest: manifest.updateDigest,
    exampleWeight: manifest.exampleWeight,
    contributors: 1,
    encoding: manifest.encoding,
    totalParams: manifest.totalParams,
    ciphertexts: blocks.map((b) => b.ciphertext),
    sites: [
      { site: `${site}-${Math.random()}`, digest: manifest.updateDigest, weight: manifest.exampleWeight },
    ],
  };
}

/**
 * The last round forged end to end by a cheating coordinator: its aggregate replaced by the sum of
 * `sites` (one left out, or one twice), the decision and commit hash recomputed, each YES vote
 * re-signed by its site for the new commit: every signature and hash holds, only the sum is wrong.
 */
async function forgedSum(
  sites: (contributors: string[]) => string[],
): Promise<{ b: AuditBundle; sequence: number }> {
  const { sequence, d } = lastCommit();
  const open = [...records.values()].find((r) => r.roundOpen?.round === d.round)!.roundOpen!;
  const listed = d.aggregate!.contributors.map((c) => c.site);
  const builder = new AggregateBuilder(f.coord.ckks);
  for (const site of sites(listed)) builder.add(contributionOf(d.round, open.attempt, site));
  const object = encodeAggregateObject(builder.finish().ciphertexts);
  const digest = sha256(object);
  const commitHash = createCommit({
    parent: d.parent,
    height: d.height,
    round: d.round,
    aggregateDigest: digest,
    modelHash: d.modelHash,
    params: d.params,
    kind: 'round',
  }).hash;
  const signers = new Map<string, Awaited<ReturnType<Federation['member']>>>();
  for (const s of listed) signers.set(s, await f.member(s));
  const firstVote = [...records].find(([, r]) => r.votes?.round === d.round)![0];
  const b = rewritten(
    firstVote,
    (_seq, r) => {
      if (r.votes) {
        const votes = r.votes.votes.map(({ member, envelope }) => {
          const v = openControl(envelope, 'vote', f.coord.keys).body;
          const site = signers.get(member)!;
          return { member, envelope: sealControl('vote', { ...v, commitHash }, member, site.signing) };
        });
        return { ...r, votes: { ...r.votes, votes } };
      }
      if (r.decision?.round === d.round) {
        return {
          ...r,
          decision: {
            ...r.decision,
            aggregateDigest: digest,
            commitHash,
            aggregate: { ...r.decision.aggregate!, objectBytes: object.length },
          },
        };
      }
      return r;
    },
    new Map([...bundle.objects, [d.aggregate!.object, object]]),
  );
  return { b, sequence };
}

describe('cohort audit re-adds the stored contributions', () => {
  it('the log holds the partials and votes, and every aggregate is recomputed byte-identical (exit 0)', async () => {
    const partials = [...records.values()].filter((r) => r.partial).length;
    // The coordinator logs each round's votes in one entry here (three votes fit in a batch).
    const batches = [...records.values()].filter((r) => r.votes);
    const votes = batches.reduce((n, r) => n + r.votes!.votes.length, 0);
    expect(partials).toBeGreaterThanOrEqual(2);
    expect(batches).toHaveLength(2);
    expect(votes).toBeGreaterThanOrEqual(2);
    expect([...records.values()].filter((r) => r.vote)).toEqual([]);
    expect(bundle.meta.contributions).toBe('included');
    const { status, report, stderr } = await verify(bundle);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(report!.problems).toEqual([]);
    expect(report!.unchecked).toEqual([]);
    expect(report!.checked.partials).toBe(partials);
    expect(report!.checked.votes).toBe(votes);
    expect(report!.checked.recomputed).toBe(2);
    expect(report!.checked.contributions).toBe(bundle.contributions!.size);
    expect(report!.checked.contributions).toBeGreaterThan(0);
  });

  it('live, as the auditor’s read-only user: the same recomputation', async () => {
    const r = await cohort(
      'audit',
      'verify',
      '--config',
      f.dep.configPath,
      '--member',
      'auditor-1',
      '--json',
    );
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout) as AuditReport;
    expect(report.checked.recomputed).toBe(2);
    expect(report.checked.contributions).toBeGreaterThan(0);
  });

  it('a vote naming another H(w′), re-signed by its site: VOTE_MODEL_MISMATCH at the vote', async () => {
    const { d } = lastCommit();
    const [voteAt, rec] = [...records].find(([, r]) => r.votes?.round === d.round)!;
    // The batch's last vote: the refusal names the entry that holds it, whichever vote it is.
    const forged = rec.votes!.votes.length - 1;
    const member = rec.votes!.votes[forged]!.member;
    const site = await f.member(member);
    const v = openControl(rec.votes!.votes[forged]!.envelope, 'vote', f.coord.keys).body;
    const other = v.modelHash.slice();
    other[0]! ^= 0xff;
    const envelope = sealControl('vote', { ...v, modelHash: other }, member, site.signing);
    const votes = rec.votes!.votes.map((x, i) => (i === forged ? { member, envelope } : x));
    const b = rewritten(voteAt, (seq, r) => (seq === voteAt ? { ...r, votes: { ...r.votes!, votes } } : r));
    const { status, report } = await verify(b);
    expect(status).toBe(3);
    expect(report!.problems).toEqual([
      { sequence: voteAt, code: 'VOTE_MODEL_MISMATCH', message: expect.stringContaining(member) },
    ]);
  });

  it('a vote batch holding a vote twice, or one signed by another key: VOTE_INVALID at the batch', async () => {
    const { d } = lastCommit();
    const [voteAt, rec] = [...records].find(([, r]) => r.votes?.round === d.round)!;
    const votes = rec.votes!.votes;
    const twice = rewritten(voteAt, (seq, r) =>
      seq === voteAt ? { ...r, votes: { ...r.votes!, votes: [...votes, votes[0]!] } } : r,
    );
    const dup = await verify(twice);
    expect(dup.status).toBe(3);
    expect(dup.report!.problems).toEqual([
      {
        sequence: voteAt,
        code: 'VOTE_INVALID',
        message: expect.stringContaining(`a second vote of ${votes[0]!.member}`),
      },
    ]);
    // The coordinator re-signs a site's vote with a key of its own: the batch's signature holds, the vote's does not.
    const v = openControl(votes[0]!.envelope, 'vote', f.coord.keys).body;
    const envelope = sealControl('vote', v, votes[0]!.member, f.coord.signing);
    const forged = rewritten(voteAt, (seq, r) =>
      seq === voteAt
        ? { ...r, votes: { ...r.votes!, votes: votes.map((x, i) => (i === 0 ? { ...x, envelope } : x)) } }
        : r,
    );
    const bad = await verify(forged);
    expect(bad.status).toBe(3);
    expect(bad.report!.problems).toEqual([
      { sequence: voteAt, code: 'VOTE_INVALID', message: expect.stringContaining(votes[0]!.member) },
    ]);
  });

  it('a contribution left out of the sum: CONTRIBUTION_MISSING at the COMMIT, naming the site', async () => {
    const { b, sequence } = await forgedSum((sites) => sites.slice(1));
    const left = lastCommit().d.aggregate!.contributors[0]!.site;
    const { status, report } = await verify(b);
    expect(status).toBe(3);
    expect(report!.problems).toEqual([
      { sequence, code: 'CONTRIBUTION_MISSING', message: expect.stringContaining(left) },
    ]);
  });

  it('a contribution counted twice: CONTRIBUTION_DUPLICATE at the COMMIT, naming the site', async () => {
    const { b, sequence } = await forgedSum((sites) => [...sites, sites[1]!]);
    const twice = lastCommit().d.aggregate!.contributors[1]!.site;
    const { status, report } = await verify(b);
    expect(status).toBe(3);
    expect(report!.problems).toEqual([
      { sequence, code: 'CONTRIBUTION_DUPLICATE', message: expect.stringContaining(twice) },
    ]);
  });

  it('a stored contribution altered: CONTRIBUTION_MISMATCH at the partial that lists it', async () => {
    const [name, bytes] = [...bundle.contributions!].find(([, v]) => v !== null)!;
    const altered = bytes!.slice();
    altered[altered.length - 1]! ^= 0x01;
    const contributions = new Map([...bundle.contributions!, [name, altered]]);
    const { status, report } = await verify({ ...bundle, contributions });
    expect(status).toBe(3);
    expect(report!.problems.map((p) => p.code)).toEqual(['CONTRIBUTION_MISMATCH']);
    expect(records.get(report!.problems[0]!.sequence)!.partial).toBeTruthy();
  });
});
