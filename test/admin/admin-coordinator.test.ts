// The admin API over a real coordinator on a real nats-server (idle: rounds open only in runs).
// Sites and the aggregator are played by heartbeats alone, so a round opens and then waits for
// partials that never come: what an operator's abort is for. Every admin action is read back
// from the log as an entry signed by the coordinator, naming its caller.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSigningKeyPair } from '../../crypto/signature/index.ts';
import { buildAdminApi, coordinatorAdminDeps } from '../../src/admin/index.ts';
import type { AuditReport } from '../../src/audit/index.ts';
import { runCli } from '../../src/cli/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { openControl } from '../../src/protocol/index.ts';
import { encodeRegistryChangeRecord, sealRegistryChange } from '../../src/registry/index.ts';
import { federationGenesis } from '../../src/round/index.ts';
import type { CoordinatorHandle, RoundSummary } from '../../src/services/coordinator/index.ts';
import { ADMIN_ACTION_COORDINATOR_START } from '../../src/services/federation-log/index.ts';
import type { MemberContext } from '../../src/services/index.ts';
import { errorCode } from '../helpers/error-code.ts';
import { Federation, waitFor } from '../helpers/federation.ts';
import { startHeartbeats } from '../helpers/heartbeats.ts';
import { PROMTOOL, promtool } from '../helpers/promtool.ts';
import { auth, TOKEN, TOKENS } from './admin-fixture.ts';

const F = 'admreal';
const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 100,
    missedHeartbeats: 20,
    deadlineMs: 120_000,
    voteTimeoutMs: 5000,
    minContributors: 1,
  },
  learning: { model: 'logreg' },
  log: { level: 'error' },
  // Used by the `cohort coordinator` process of the last test (the in-process one ignores it).
  admin: { port: 0, tokens: TOKENS.map((t) => ({ ...t, scopes: [...t.scopes] })) },
};

let f: Federation;
let coordinator: CoordinatorHandle;
let app: FastifyInstance;
const decisions: RoundSummary[] = [];
const timers: NodeJS.Timeout[] = [];

function heartbeat(m: MemberContext, role: 'site' | 'aggregator'): void {
  const head = role === 'site' ? federationGenesis(f.dep.config).commit.hash : new Uint8Array(0);
  timers.push(startHeartbeats(m, role, () => ({ head, height: 0 })));
}

beforeAll(async () => {
  f = await Federation.create(F, { aggregators: 1, sites: 2, overrides: OVERRIDES });
  heartbeat(await f.member('agg-1'), 'aggregator');
  for (const s of f.dep.sites) heartbeat(await f.member(s), 'site');
  let started = false;
  coordinator = f.startCoordinator({
    idle: true,
    switchWaitMs: 500,
    onEvent: (e) => {
      if (e.type === 'started') started = true;
      if (e.type === 'decision') decisions.push(e.summary);
    },
  });
  await waitFor('the coordinator started', () => started, 20_000);
  // `started` comes once the log is open; the API says ready once the subscriptions are up too.
  await waitFor('the coordinator waiting', () => coordinator.stats().phase !== 'starting', 20_000);
  app = buildAdminApi(coordinatorAdminDeps({ handle: coordinator, member: f.coord, config: f.dep.config }), {
    tokens: TOKENS,
  });
});
afterAll(async () => {
  for (const t of timers) clearInterval(t);
  await app?.close();
  await f?.stop();
});

/** The log's admin actions (entries verified: coordinator signature, chain, history rules). */
/** The operators' actions in the log (the coordinator's own `coordinator.start` left out). */
async function loggedActions() {
  return (await f.logEntries()).filter(
    (e) => e.record.adminAction && e.record.adminAction.action !== ADMIN_ACTION_COORDINATOR_START,
  );
}

describe('admin API over a real coordinator', () => {
  it('is ready, and idle: no round opens without a run', async () => {
    expect((await app.inject({ url: '/v1/ready' })).json()).toEqual({ ready: true, phase: 'waiting' });
    await waitFor('sites live', () => coordinator.stats().liveSites.length === 2, 10_000);
    expect(coordinator.stats().phase).toBe('waiting');
    // Only the coordinator's claim of the log: no round was opened.
    expect((await f.logEntries()).map((e) => e.record.adminAction?.action)).toEqual([
      ADMIN_ACTION_COORDINATOR_START,
    ]);
  });

  it('an admin action lands in the log as a signed record naming its caller', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth('operator'),
      payload: { rounds: 1, label: 'drill' },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ id: 'run-1', rounds: 1, label: 'drill', startedBy: 'ops' });
    const [entry] = await loggedActions();
    expect(entry!.sequence).toBe(2);
    const action = entry!.record.adminAction!;
    expect(action).toMatchObject({ action: 'runs.start', caller: 'ops', scope: 'operator', target: '' });
    expect(JSON.parse(new TextDecoder().decode(action.arguments))).toEqual({ label: 'drill', rounds: 1 });
    // The stored bytes are a log record signed by the coordinator; one changed byte breaks it.
    expect(openControl(entry!.bytes, 'log-record', f.coord.keys, { signer: 'coordinator' }).signer).toBe(
      'coordinator',
    );
    const forged = entry!.bytes.slice();
    forged[forged.length - 1]! ^= 1;
    expect(errorCode(() => openControl(forged, 'log-record', f.coord.keys))).toMatch(/^BLOCK_/);
  });

  it('the run opens a round; an operator aborts it and no site is blamed', async () => {
    await waitFor('round 1 open', () => coordinator.stats().phase === 'collecting', 20_000);
    const status = (await app.inject({ url: '/v1/status', headers: auth('auditor') })).json();
    expect(status).toMatchObject({ phase: 'collecting', round: 1, run: { id: 'run-1', state: 'running' } });
    expect(status.lastRounds[0]).toMatchObject({
      round: 1,
      status: 'open',
      participants: ['site-1', 'site-2'],
    });
    const res = await app.inject({
      method: 'POST',
      url: '/v1/rounds/1/abort',
      headers: auth('operator'),
      payload: { reason: 'drill' },
    });
    expect(res.statusCode, res.body).toBe(202);
    await waitFor('the ABORT', () => decisions.length === 1, 20_000);
    expect(decisions[0]).toMatchObject({
      round: 1,
      commit: false,
      reason: 'aborted by ops (admin API): drill',
      noVoters: [],
      missing: [],
    });
    const entries = await f.logEntries();
    const kinds = entries.map((e) =>
      e.record.adminAction
        ? `action ${e.record.adminAction.action}`
        : e.record.decision
          ? 'decision'
          : 'open',
    );
    expect(kinds).toEqual([
      `action ${ADMIN_ACTION_COORDINATOR_START}`,
      'action runs.start',
      'open',
      'action rounds.abort',
      'decision',
    ]);
    // The run had one round: it is complete, and the idle coordinator waits for the next.
    await waitFor('run-1 completed', () => coordinator.runs()[0]!.state === 'completed', 10_000);
    const run = (await app.inject({ url: '/v1/runs/run-1', headers: auth('auditor') })).json();
    expect(run).toMatchObject({ state: 'completed', decided: 1, aborted: 1 });
    expect(run.roundsDecided).toMatchObject([{ round: 1, commit: false, contributorSites: [] }]);
    const round = (await app.inject({ url: '/v1/rounds/1', headers: auth('auditor') })).json();
    expect(round).toMatchObject({ round: 1, status: 'abort', reason: 'aborted by ops (admin API): drill' });
    expect(round.durationMs).toBeGreaterThanOrEqual(0);
    const sites = (await app.inject({ url: '/v1/sites', headers: auth('auditor') })).json();
    expect(sites.filter((s: { excluded: boolean }) => s.excluded)).toEqual([]);
  });

  it('stopping a run lets its open round be decided and opens no other', async () => {
    const start = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth('operator'),
      payload: { rounds: 5 },
    });
    expect(start.statusCode, start.body).toBe(201);
    await waitFor(
      'round 2 open',
      () => coordinator.stats().phase === 'collecting' && coordinator.stats().round === 2,
      20_000,
    );
    const stop = await app.inject({ method: 'POST', url: '/v1/runs/run-2/stop', headers: auth('operator') });
    expect(stop.json()).toMatchObject({ id: 'run-2', state: 'stopping', stoppedBy: 'ops' });
    const abort = await app.inject({
      method: 'POST',
      url: '/v1/rounds/2/abort',
      headers: auth('operator'),
      payload: {},
    });
    expect(abort.statusCode, abort.body).toBe(202);
    await waitFor('run-2 stopped', () => coordinator.runs()[1]?.state === 'stopped', 20_000);
    expect(coordinator.runs()[1]!.summaries.map((s) => s.round)).toEqual([2]);
    expect(coordinator.stats().phase).toBe('waiting');
    const actions = (await loggedActions()).map(
      (e) => `${e.record.adminAction!.action} ${e.record.adminAction!.target}`,
    );
    expect(actions).toEqual([
      'runs.start ',
      'rounds.abort 1',
      'runs.start ',
      'runs.stop run-2',
      'rounds.abort 2',
    ]);
  });

  it("hands an officer-signed revoke to the coordinator's registry queue", async () => {
    const officer = loadSigningKeyPair(f.dep.officer.key);
    const record = sealRegistryChange(
      {
        federation: F,
        kind: 'revoke',
        member: 'site-2',
        role: 'site',
        signingKey: undefined,
        kemKey: undefined,
        nkey: undefined,
        fromRound: 3,
        issuedUnixMs: Date.now(),
        reason: 'decommissioned',
      },
      officer,
    );
    const change = Buffer.from(encodeRegistryChangeRecord(record)).toString('base64');
    const res = await app.inject({
      method: 'POST',
      url: '/v1/sites/site-2/revoke',
      headers: auth('admin'),
      payload: { change },
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ queued: true, kind: 'revoke', member: 'site-2', fromRound: 3 });
    // The same change again conflicts with the queued one: refused by the coordinator (409).
    const again = await app.inject({
      method: 'POST',
      url: '/v1/sites/site-2/revoke',
      headers: auth('admin'),
      payload: { change },
    });
    expect(again.json()).toMatchObject({ statusCode: 409, code: 'REGISTRY_CHANGE_REFUSED' });
    const last = (await loggedActions()).at(-1)!.record.adminAction!;
    expect(last).toMatchObject({
      action: 'registry.revoke',
      caller: 'root',
      scope: 'admin',
      target: 'site-2',
    });
  });

  it('refuses a rollback to the head, and lists the versions from the log', async () => {
    const before = (await loggedActions()).length;
    const res = await app.inject({
      method: 'POST',
      url: '/v1/versions/rollback',
      headers: auth('admin'),
      payload: { target: 'HEAD' },
    });
    expect(res.json()).toMatchObject({ statusCode: 409, code: 'ROLLBACK_REFUSED' });
    expect((await loggedActions()).length).toBe(before);
    const log = (await app.inject({ url: '/v1/versions?all=true', headers: auth('auditor') })).json();
    expect(log.map((j: { kind: string; round: number }) => `${j.kind} ${j.round}`)).toEqual([
      'abort 2',
      'abort 1',
      'genesis 0',
    ]);
  });

  it('`cohort coordinator --idle` serves the API it is configured with; `cohort status` reads it', async () => {
    await app.close();
    await coordinator.stop();
    const child = f.spawn('coordinator', 'coordinator', ['--idle']);
    // The API listens while the coordinator is still reading its log back ("starting, round 0");
    // the figures below are those after the `started` line.
    await waitFor(
      'the API address and the started line',
      () =>
        child.lines.some((l) => l.startsWith('admin API listening on ')) &&
        child.lines.some((l) => l.startsWith('coordinator coordinator: federation ')),
      20_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${f.dumpOutput()}`);
    });
    const url = child.lines.find((l) => l.startsWith('admin API listening on '))!.slice(23);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9][0-9]*$/);
    const out: string[] = [];
    const err: string[] = [];
    const status = await runCli(['node', 'cohort', 'status', '--url', url], {
      stdout: { write: (t) => out.push(t) },
      stderr: { write: (t) => err.push(t) },
      env: { COHORT_ADMIN_TOKEN: TOKEN.auditor },
    });
    expect(status, err.join('')).toBe(0);
    const lines = out.join('').split('\n');
    expect(lines[0]).toMatch(/^federation admreal: (starting|waiting), round 3$/);
    expect(lines).toContain('  round 2  ABORT   aborted by ops (admin API)');
    expect(child.running).toBe(true);

    // Its /metrics is a valid exposition (promtool) of the coordinator it runs.
    const metrics = await fetch(`${url}/metrics`, { headers: auth('operator') });
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const exposition = await metrics.text();
    expect(exposition).toMatch(/^cohort_log_sequence \d+$/m);
    expect(exposition).toMatch(
      /^cohort_build_info\{version="\d+\.\d+\.\d+[^"]*",node="v\d+\.\d+\.\d+"\} 1$/m,
    );
    expect(exposition).toMatch(/^process_resident_memory_bytes \d/m);
    if (PROMTOOL !== undefined) {
      const check = promtool(['check', 'metrics'], exposition);
      expect(check.code, check.output).toBe(0);
    }
    expect((await fetch(`${url}/metrics`, { headers: auth('auditor') })).status).toBe(403);

    // Its audit bundle verifies with `cohort audit verify`, admin actions included.
    const bundle = await fetch(`${url}/v1/audit/bundle`, { headers: auth('auditor') });
    expect(bundle.status).toBe(200);
    const file = join(f.dep.dir, 'api-audit.bundle');
    writeFileSync(file, Buffer.from(await bundle.arrayBuffer()));
    const report: string[] = [];
    const verified = await runCli(
      ['node', 'cohort', 'audit', 'verify', '--bundle', file, '--config', f.dep.configPath, '--json'],
      { stdout: { write: (t) => report.push(t) }, stderr: { write: (t) => err.push(t) }, env: {} },
    );
    expect(verified, err.join('')).toBe(0);
    const audit = JSON.parse(report.join('')) as AuditReport;
    expect(audit.problems).toEqual([]);
    expect(audit.entries).toBe((await f.logEntries()).length);
    expect(audit.checked.adminActions).toBeGreaterThan(0);
    // …and the dashboard's verification route audits the same live log.
    const live = await fetch(`${url}/v1/audit/verify`, { headers: auth('auditor') });
    expect(live.status).toBe(200);
    expect(await live.json()).toMatchObject({ verified: true, entries: audit.entries, problems: [] });
  });
});
