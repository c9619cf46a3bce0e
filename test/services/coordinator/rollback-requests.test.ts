// Signed rollback requests (`cohort versions rollback`) against a real coordinator, aggregator and
// three site agents over a real nats-server:
//   1. a request accepted while no round can run (every site is down) is logged, and a coordinator
//      restarted on that log runs the rollback: a request outlives the process that accepted it;
//   2. the same signed bytes sent again (a retry of the CLI's request, or an attacker who recorded
//      it, within the replay window) are answered with the first acceptance and never queued again:
//      a replay cannot undo the commits made since.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealControl } from '../../../src/protocol/index.ts';
import type { CoordinatorEvent } from '../../../src/services/coordinator/index.ts';
import { ADMIN_ACTION_ROLLBACK } from '../../../src/services/federation-log/index.ts';
import { expectSingleChain, Federation, hex, waitFor } from '../../helpers/federation.ts';

const SITES = ['site-1', 'site-2', 'site-3'];

describe('signed rollback requests: durable and idempotent', () => {
  let f: Federation;

  beforeAll(async () => {
    f = await Federation.create('rbreq', {
      aggregators: 1,
      sites: 3,
      overrides: {
        round: { heartbeatMs: 100, missedHeartbeats: 10, deadlineMs: 5000, voteTimeoutMs: 5000 },
        learning: { model: 'logreg', trainLimit: 300, testLimit: 50, epochs: 1 },
        log: { level: 'error' },
      },
    });
    await f.startAggregator('agg-1');
    for (const s of SITES) await f.startAgent(s);
  }, 60_000);

  afterAll(async () => {
    await f?.stop();
  });

  const signedRequest = (target: Uint8Array, reason: string) =>
    sealControl(
      'rollback-request',
      { federation: 'rbreq', target, requestedUnixMs: Date.now(), reason },
      f.coord.member,
      f.coord.signing,
    );
  const send = async (request: Uint8Array) =>
    JSON.parse(
      new TextDecoder().decode(await f.coord.transport.request(f.coord.subjects.rollbackRequest, request)),
    ) as { queued: boolean; target: string; height: number; actionSequence: number; repeated?: boolean };
  const rollbacks = async () => (await f.decisions()).filter((d) => d.rollbackTarget.length === 32);

  let request: Uint8Array;
  let targetHash: string;

  it('a request accepted while no round can run is logged, and a restarted coordinator runs it', async () => {
    const first = await f.runCoordinator(3);
    expect(first.committed).toBe(3);
    const target = (await f.decisions()).find((d) => d.commit && d.height === 1)!;
    targetHash = hex(target.commitHash);

    // Every site goes down: the coordinator waits for sites and cannot run the rollback round.
    for (const s of SITES) await f.agents.get(s)!.stop();
    const events: CoordinatorEvent[] = [];
    const waiting = f.startCoordinator({ rounds: 0, switchWaitMs: 1000, onEvent: (e) => events.push(e) });
    await waitFor('the coordinator up', () => events.some((e) => e.type === 'started'));
    request = signedRequest(target.commitHash, 'test: a bad round');
    const reply = await send(request);
    expect(reply).toMatchObject({ queued: true, target: targetHash, height: 1 });
    const logged = (await f.logEntries()).find((e) => e.sequence === reply.actionSequence)!;
    expect(logged.record.adminAction).toMatchObject({ action: ADMIN_ACTION_ROLLBACK, target: targetHash });
    await waiting.stop();
    expect(await rollbacks()).toEqual([]);

    // The sites come back; a new coordinator process (here: a new run on the same log) finds the
    // logged request that no rollback round has taken yet and runs it first.
    for (const s of SITES) await f.startAgent(s);
    const last = (await f.decisions()).at(-1)!.round;
    const second = await f.runCoordinator(last + 2);
    const rolled = await rollbacks();
    expect(rolled).toHaveLength(1);
    expect(rolled[0]!.commit).toBe(true);
    expect(hex(rolled[0]!.rollbackTarget)).toBe(targetHash);
    expect(second.rounds.map((r) => r.kind)).toEqual(['rollback', 'round']);
    expect(second.committed).toBe(2);
  }, 120_000);

  it('the same signed request again is answered, never queued: a replay cannot undo later commits', async () => {
    const before = await f.decisions();
    const events: CoordinatorEvent[] = [];
    const running = f.startCoordinator({
      rounds: before.at(-1)!.round + 3,
      switchWaitMs: 1000,
      onEvent: (e) => events.push(e),
    });
    await waitFor('the coordinator up', () => events.some((e) => e.type === 'started'));
    const again = await send(request);
    expect(again).toMatchObject({ queued: true, target: targetHash, height: 1, repeated: true });
    // The same request with a field the signature does not cover added to its envelope (protobuf
    // field 99, varint 1): other bytes, the same signed request, answered the same way.
    const padded = new Uint8Array(request.length + 3);
    padded.set(request);
    padded.set([0x98, 0x06, 0x01], request.length);
    new DataView(padded.buffer).setUint32(8, request.length + 3 - 12);
    expect(await send(padded)).toMatchObject({ repeated: true, actionSequence: again.actionSequence });
    const summary = await running.done;
    expect(summary.rounds.map((r) => r.kind)).toEqual(['round', 'round', 'round']);
    expect(summary.committed).toBe(3);
    const after = await f.decisions();
    expect(after.length).toBe(before.length + 3);
    expect(await rollbacks()).toHaveLength(1);
    expectSingleChain(after, f.genesis);
    // One logged acceptance: the repeat was answered from it.
    const actions = (await f.logEntries()).filter(
      (e) => e.record.adminAction?.action === ADMIN_ACTION_ROLLBACK,
    );
    expect(actions).toHaveLength(1);
    expect(again.actionSequence).toBe(actions[0]!.sequence);
  }, 120_000);
});
