// Issue 22, break 3: stored contributions are evidence. A hostile aggregator (agg-2's own NATS user)
// attacks the contributions agg-1 stored, in a live `plain`-mode federation (updates in the clear,
// a robust rule that makes the coordinator read every contribution back) over a real nats-server
// with the federation's permissions: it tries to read them, hide one, overwrite one, roll the store
// up, store oversized messages and abuse JetStream headers. Each attempt must fail, the live audit
// must still re-add every contribution, and honest rounds must commit afterwards. Then the audit
// itself: a bundle with one contribution removed (and resealed), or with every contribution removed
// and the meta saying they were skipped, must never verify clean.
//
// The attacks name raw subjects (the old object store `cohort-F-updates` and the contributions
// stream), so the same file ran against the code before the fix, where they succeeded.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import type { CohortConfigInput } from '../../src/config/index.ts';
import type { ControlBodies } from '../../src/protocol/index.ts';
import { federationGenesis } from '../../src/services/agent/index.ts';
import { ckksParamsOf, type MemberContext } from '../../src/services/index.ts';
import { readObject } from '../../src/services/store/index.ts';
import { bytesToHex } from '../../src/versions/index.ts';
import { Federation } from '../helpers/federation.ts';
import { auditExport, cohort } from '../helpers/run-cli.ts';
import { AttackLedger, holds, honestRoundsCommit, refusedAs } from './attack-ledger.ts';

const F = 'evidence';
const HOSTILE = 'agg-2';
const VICTIM = 'agg-1';
const OVERRIDES: Partial<CohortConfigInput> = {
  federation: { id: F, mode: 'plain', aggregation: { name: 'median' } },
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 8000,
    voteTimeoutMs: 8000,
    minContributors: 3,
  },
  learning: { model: 'logreg', trainLimit: 600, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

/** The old object store (before the fix) and the contributions stream (after it). */
const OLD_BUCKET = `cohort-${F}-updates`;
const OLD_STREAM = `OBJ_${OLD_BUCKET}`;
const STREAM = `COHORT_${F.toUpperCase()}_CONTRIBUTIONS`;
const subjectOf = (aggregator: string, round: number, attempt: Uint8Array, site: string, frame: number) =>
  `cohort.${F}.contribution.${aggregator}.${round}.${bytesToHex(attempt)}.${site}.${frame}`;
const oldNameOf = (round: number, attempt: Uint8Array, site: string) =>
  `round-${round}/${bytesToHex(attempt)}/${site}`;

const ledger = new AttackLedger('evidence', [
  'Issue 22 item',
  'Attack with an aggregator’s own credentials (agg-2), or on an exported bundle',
  'Outcome',
]);

/** What a request answered: 'ok', or the error's message (a permission refusal, a JetStream error). */
async function attempt(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  }
}

const refusedByServer = (answer: string) => /permissions violation|permission denied/i.test(answer);

describe('a hostile aggregator against the stored contributions (issue 22, break 3)', () => {
  let f: Federation;
  let hostile: MemberContext;
  let nc: NatsConnection;
  let dir: string;
  let rounds = 0;
  /** Round 2's opening, and one site agg-1 summed in it. */
  let open: ControlBodies['round-open'];
  let victimSite: string;
  let ownSite: string;
  /** Every RoundOpen of the log, by round. */
  const opens = new Map<number, ControlBodies['round-open']>();

  /** The live audit as the auditor's read-only user (exit status and report). */
  async function liveAudit(): Promise<{ status: number; report: AuditReport }> {
    const r = await cohort(
      'audit',
      'verify',
      '--config',
      f.dep.configPath,
      '--member',
      'auditor-1',
      '--json',
    );
    return { status: r.status, report: JSON.parse(r.stdout) as AuditReport };
  }

  /** The live audit re-adds every contribution of every round and finds nothing wrong. */
  async function everyContributionReAdded(): Promise<boolean> {
    const { status, report } = await liveAudit();
    return (
      status === 0 &&
      report.problems.length === 0 &&
      report.unchecked.length === 0 &&
      report.checked.recomputed === report.rounds.filter((r) => r.outcome === 'commit').length &&
      report.checked.contributions >= 3 * report.checked.recomputed
    );
  }

  /** Messages in whichever contributions store the federation has. */
  async function storedMessages(): Promise<number> {
    const jsm = await jetstreamManager(f.coord.transport.connection, { checkAPI: false });
    for (const name of [STREAM, OLD_STREAM]) {
      try {
        return (await jsm.streams.info(name)).state.messages;
      } catch {
        // not this design's store
      }
    }
    return -1;
  }

  /** Runs the coordinator through one more round; whether it committed. */
  async function oneMoreRound(): Promise<boolean> {
    rounds++;
    const summary = await f.startCoordinator({ rounds, switchWaitMs: 5000 }).done;
    return summary.rounds.at(-1)?.commit === true;
  }

  beforeAll(async () => {
    f = await Federation.create(F, { aggregators: 2, sites: 4, overrides: OVERRIDES });
    for (const a of f.dep.aggregators) await f.startAggregator(a);
    for (const s of f.dep.sites) await f.startAgent(s);
    rounds = 2;
    const summary = await f.runCoordinator(rounds);
    expect(summary.committed).toBe(2);
    hostile = await f.member(HOSTILE);
    nc = hostile.transport.connection;
    open = (await f.logEntries()).flatMap((e) =>
      e.record.roundOpen?.round === 2 ? [e.record.roundOpen] : [],
    )[0]!;
    victimSite = open.assignments.find((a) => a.aggregator === VICTIM)!.site;
    ownSite = open.assignments.find((a) => a.aggregator === HOSTILE)!.site;
    dir = mkdtempSync(join(tmpdir(), 'cohort-evidence-'));
  }, 180_000);

  afterAll(async () => {
    await f?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("agg-2 cannot read agg-1's sites' contributions (plaintext in plain mode)", async () => {
    const answers = [
      // The old updates object store, through the object store client.
      await attempt(
        readObject(nc, OLD_BUCKET, oldNameOf(2, open.attempt, victimSite), {
          maxBytes: 64 << 20,
          timeoutMs: 3000,
        }),
      ),
      // The contributions stream: its info (the subjects it holds) and a message.
      await attempt(nc.request(`$JS.API.STREAM.INFO.${STREAM}`, '{}', { timeout: 3000 })),
      await attempt(
        nc.request(
          `$JS.API.STREAM.MSG.GET.${STREAM}`,
          JSON.stringify({ seq: 1, next_by_subj: subjectOf(VICTIM, 2, open.attempt, victimSite, 0) }),
          { timeout: 3000 },
        ),
      ),
    ];
    // Listening on the contribution subjects as they are written.
    const listen = hostile.transport.subscribe(`cohort.${F}.contribution.>`, async () => undefined);
    answers.push(await attempt(listen.ready()));
    ledger.record(
      3,
      "read agg-1's sites' contributions: the store's messages, its subject list, or listen as they are written",
      [
        holds(
          'each refused by nats-server (permissions violation): an aggregator may not read the store',
          answers.every(refusedByServer),
        ),
      ],
    );
  });

  /** The auditor's bundle of the live log (CLI export). */
  async function exported(): Promise<AuditBundle> {
    const path = join(dir, `audit-${Math.random().toString(36).slice(2)}.bin`);
    return decodeAuditBundle(await auditExport(f.dep.configPath, path));
  }

  async function verifyFile(b: AuditBundle) {
    const path = join(dir, `b-${Math.random().toString(36).slice(2)}.bin`);
    writeFileSync(path, await encodeAuditBundle(b, loadBundleSigner(f.dep.config, 'auditor-1')));
    const r = await cohort('audit', 'verify', '--bundle', path, '--config', f.dep.configPath, '--json');
    return { status: r.status, report: r.stdout === '' ? null : (JSON.parse(r.stdout) as AuditReport) };
  }

  it('a bundle with one contribution removed (resealed) does not verify: the audit names it', async () => {
    for (const e of await f.logEntries())
      if (e.record.roundOpen) opens.set(e.record.roundOpen.round, e.record.roundOpen);
    const bundle = await exported();
    const clean = await verifyFile(bundle);
    expect(clean.status).toBe(0);
    // One contribution agg-1 stored (its item's name ends with the site, and names the round).
    const [name] = [...bundle.contributions!].find(([, v]) => v !== null)!;
    const round = Number(/round-(\d+)/.exec(name)![1]);
    const site = name.split('/').at(-1)!;
    const aggregator = opens.get(round)!.assignments.find((a) => a.site === site)!.aggregator;
    const contributions = new Map(bundle.contributions!);
    contributions.delete(name);
    const { status, report } = await verifyFile({ ...bundle, contributions });
    const problem = report?.problems.find((p) => (p.code as string) === 'CONTRIBUTION_NOT_STORED');
    ledger.record(
      3,
      'audit an exported bundle with one contribution item removed, sealed again with the exporter’s own key',
      [
        refusedAs('CONTRIBUTION_NOT_STORED', problem?.code, 'the audit'),
        holds(
          'the problem names the round, the site and the aggregator that stored it',
          /round \d+/.test(problem?.message ?? '') &&
            (problem?.message ?? '').includes(`round ${round}`) &&
            (problem?.message ?? '').includes(site) &&
            (problem?.message ?? '').includes(aggregator),
        ),
        holds('exit 3', status === 3),
      ],
    );
  }, 120_000);

  it('a bundle whose contributions are all removed and marked skipped does not verify clean', async () => {
    const bundle = await exported();
    const skipped: AuditBundle = {
      ...bundle,
      meta: { ...bundle.meta, contributions: 'skipped' },
      contributions: new Map(),
    };
    const decoded = decodeAuditBundle(
      await encodeAuditBundle(skipped, loadBundleSigner(f.dep.config, 'auditor-1')),
    );
    const trust = resolveAuditTrust(
      {
        federation: F,
        registryPin: f.dep.config.members!.registry!.sha256,
        genesis: federationGenesis(f.dep.config).commit,
      },
      decoded,
    );
    const report = await verifyAudit(bundleAuditSource(decoded), trust, {
      ckksParams: [ckksParamsOf(f.dep.config)],
    });
    ledger.record(3, 'audit a bundle with every contribution removed and its meta saying they were skipped', [
      refusedAs(
        'CONTRIBUTIONS_UNAVAILABLE',
        report.unchecked.every((u) => u.code === 'CONTRIBUTIONS_UNAVAILABLE')
          ? report.unchecked[0]?.code
          : '',
        'the audit as incomplete',
      ),
      holds(
        'the report is not verified (no re-addition made)',
        !report.verified && report.checked.recomputed === 0,
      ),
    ]);
  }, 120_000);

  it("agg-2 cannot hide, overwrite or delete one of agg-1's contributions", async () => {
    const answers: string[] = [];
    // The old store: a delete marker, then an overwrite, through the object store client.
    const os = new Objm(jetstream(nc, { checkAPI: false })).open(OLD_BUCKET);
    answers.push(await attempt(os.then((s) => s.delete(oldNameOf(2, open.attempt, victimSite)))));
    answers.push(
      await attempt(
        os.then((s) => s.putBlob({ name: oldNameOf(2, open.attempt, victimSite) }, new Uint8Array(8))),
      ),
    );
    // The stream: a message on agg-1's subject, and the delete and purge APIs.
    const js = jetstream(nc, { checkAPI: false });
    answers.push(
      await attempt(js.publish(subjectOf(VICTIM, 2, open.attempt, victimSite, 0), new Uint8Array(8))),
    );
    for (const api of ['STREAM.MSG.DELETE', 'STREAM.PURGE', 'STREAM.DELETE']) {
      answers.push(
        await attempt(nc.request(`$JS.API.${api}.${STREAM}`, JSON.stringify({ seq: 1 }), { timeout: 3000 })),
      );
    }
    ledger.record(
      3,
      "hide one of agg-1's contributions (a delete marker), overwrite it, or delete or purge messages",
      [
        holds('each refused by nats-server (permissions violation)', answers.every(refusedByServer)),
        holds('the live audit still re-adds every contribution', await everyContributionReAdded()),
      ],
    );
  }, 60_000);

  it('agg-2 cannot overwrite its own stored contribution (write-once)', async () => {
    const js = jetstream(nc, { checkAPI: false });
    const again = await attempt(
      js.publish(subjectOf(HOSTILE, 2, open.attempt, ownSite, 0), new Uint8Array(8)),
    );
    ledger.record(3, 'store a second message on the subject of a contribution it stored itself', [
      refusedAs('maximum messages per subject exceeded', again, 'the stream'),
      holds('the live audit still re-adds every contribution', await everyContributionReAdded()),
    ]);
  }, 60_000);

  it('agg-2 cannot store a message larger than one block frame', async () => {
    const js = jetstream(nc, { checkAPI: false });
    const big = new Uint8Array(4 << 20);
    const answers = [
      await attempt(js.publish(`cohort.${F}.contribution.${HOSTILE}.9.00.x.0`, big.subarray(0, 900_000))),
    ];
    const os = new Objm(js).open(OLD_BUCKET);
    const old = await attempt(os.then((s) => s.putBlob({ name: 'junk' }, big)));
    ledger.record(
      3,
      'store a 900 KB message on its own contribution subjects (one block frame is far smaller)',
      [
        refusedAs('message size exceeds maximum allowed', answers[0], 'the stream'),
        holds('the old object store refuses it too (permissions violation)', refusedByServer(old)),
      ],
    );
  }, 60_000);

  it('agg-2 cannot roll the store up (Nats-Rollup), nor abuse message ids or expectations', async () => {
    const before = await storedMessages();
    const js = jetstream(nc, { checkAPI: false });
    const rollup = natsHeaders();
    rollup.set('Nats-Rollup', 'all');
    const own = `cohort.${F}.contribution.${HOSTILE}.9.00.rollup.0`;
    const answers = [await attempt(js.publish(own, new Uint8Array(8), { headers: rollup }))];
    // On the old store's meta subjects, which aggregators could publish on.
    const old = await attempt(
      js.publish(`$O.${OLD_BUCKET}.M.cm9sbHVw`, new Uint8Array(8), { headers: rollup }),
    );
    const after = await storedMessages();
    ledger.record(3, 'publish with `Nats-Rollup: all` (one such message cut the old store to itself)', [
      refusedAs('rollup not permitted', answers[0], 'the stream'),
      holds('the old store’s subjects are refused (permissions violation)', refusedByServer(old)),
      holds('the store keeps every message', after === before && before > 0),
    ]);

    // Message-id deduplication and expectations act on the publisher's own message only.
    const ids = [
      await js.publish(`cohort.${F}.contribution.${HOSTILE}.9.00.id.0`, new Uint8Array(8), { msgID: 'agg' }),
      await js.publish(`cohort.${F}.contribution.${HOSTILE}.9.00.id.1`, new Uint8Array(8), { msgID: 'agg' }),
    ];
    const expected = await attempt(
      js.publish(`cohort.${F}.contribution.${HOSTILE}.9.00.exp.0`, new Uint8Array(8), {
        expect: { lastSequence: 1 },
      }),
    );
    const committed = await oneMoreRound();
    ledger.record(
      3,
      'publish with `Nats-Msg-Id` (a duplicate id) and `Nats-Expected-Last-Sequence` on its own subjects',
      [
        holds(
          'only its own second message is dropped as a duplicate',
          ids[1]!.duplicate && !ids[0]!.duplicate,
        ),
        refusedAs('wrong last sequence', expected, 'the stream'),
        honestRoundsCommit(committed),
        holds(
          'the live audit re-adds every contribution of the next round too',
          await everyContributionReAdded(),
        ),
      ],
    );
  }, 120_000);

  it('the attack table in docs/security.md is the one observed', () => {
    ledger.verify();
  });
});
