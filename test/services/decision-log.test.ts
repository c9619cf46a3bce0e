import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../crypto/digest/index.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../../crypto/signature/index.ts';
import { sealControl } from '../../src/protocol/index.ts';
import {
  type DecisionEntry,
  DecisionLogError,
  decisionLogStreamName,
  type LoggedDecision,
  openDecisionLog,
} from '../../src/services/decision-log/index.ts';
import { type NatsServerHandle, startNatsServer } from '../helpers/nats-server.ts';

let server: NatsServerHandle;
let nc: NatsConnection;
let key: SigningKeyPair;

beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  nc = await connect({ servers: server.url });
  key = generateSigningKeyPair('falcon-512');
});

afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const hash = (s: string) => sha256(new TextEncoder().encode(s));

function entry(federation: string, round: number, commit: boolean): DecisionEntry {
  return {
    federation,
    round,
    commit,
    commitHash: commit ? hash(`commit ${round}`) : new Uint8Array(0),
    modelHash: commit ? hash(`model ${round}`) : new Uint8Array(0),
    parent: hash(`parent ${round}`),
    height: round,
    aggregateDigest: hash(`aggregate ${round}`),
    voters: ['site-1', 'site-2'],
    reason: commit ? '' : 'site-2 voted NO',
  };
}

async function all(it: AsyncIterable<LoggedDecision>): Promise<LoggedDecision[]> {
  const out: LoggedDecision[] = [];
  for await (const e of it) out.push(e);
  return out;
}

describe('decision log', () => {
  it('names the stream after the federation', () => {
    expect(decisionLogStreamName('demo')).toBe('COHORT_DEMO');
    expect(decisionLogStreamName('fed-1')).toBe('COHORT_FED-1');
  });

  it('appends, reads back the last entry and iterates a verified chain', async () => {
    const log = await openDecisionLog(nc, 'f-append', key, 'coordinator');
    expect(await log.last()).toBeUndefined();
    expect(await all(log.entries())).toEqual([]);
    const a = await log.append(entry('f-append', 1, true));
    const b = await log.append(entry('f-append', 2, false));
    expect([a.sequence, b.sequence]).toEqual([1, 2]);
    const last = await log.last();
    expect(last?.sequence).toBe(2);
    expect(last?.body.round).toBe(2);
    expect(last?.body.commit).toBe(false);
    expect(last?.body.reason).toBe('site-2 voted NO');
    expect(last?.body.logSequence).toBe(2);
    expect(last?.body.previousEntry).toEqual(sha256(a.bytes));
    const entries = await all(log.entries());
    expect(entries.map((e) => e.body.round)).toEqual([1, 2]);
    expect(entries[0]!.body.previousEntry).toEqual(new Uint8Array(32));
    expect(entries[0]!.body.commitHash).toEqual(hash('commit 1'));
    expect(entries[1]!.bytes).toEqual(b.bytes);
  });

  it('refuses a forged insertion', async () => {
    const log = await openDecisionLog(nc, 'f-forged', key, 'coordinator');
    await log.append(entry('f-forged', 1, true));
    // Someone with publish rights on the subject writes a message directly.
    nc.publish('cohort.f-forged.log', new TextEncoder().encode('not a decision'));
    await nc.flush();
    await new Promise((r) => setTimeout(r, 100));
    await expect(all(log.entries())).rejects.toMatchObject({ code: 'LOG_ENTRY_INVALID' });
    await expect(log.last()).rejects.toBeInstanceOf(DecisionLogError);
  });

  it('refuses a well-signed entry that breaks the chain', async () => {
    const log = await openDecisionLog(nc, 'f-chain', key, 'coordinator');
    await log.append(entry('f-chain', 1, true));
    // Signed with the right key, but linked to nothing (e.g. replayed from another log).
    const forged = sealControl(
      'decision',
      { ...entry('f-chain', 2, true), logSequence: 2, previousEntry: new Uint8Array(32) },
      'coordinator',
      key,
    );
    nc.publish('cohort.f-chain.log', forged);
    await nc.flush();
    await new Promise((r) => setTimeout(r, 100));
    await expect(all(log.entries())).rejects.toMatchObject({ code: 'LOG_CHAIN_BROKEN' });
  });

  it('refuses an append from a second writer with a stale sequence', async () => {
    const first = await openDecisionLog(nc, 'f-writers', key, 'coordinator');
    const second = await openDecisionLog(nc, 'f-writers', key, 'coordinator');
    await first.append(entry('f-writers', 1, true));
    await second.append(entry('f-writers', 2, true)); // reads the tail (sequence 1) first
    const err = await first.append(entry('f-writers', 3, true)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DecisionLogError);
    expect((err as DecisionLogError).code).toBe('LOG_SEQUENCE_CONFLICT');
    expect((err as Error).message).toContain('expected last sequence 1');
    expect((err as Error).message).toContain('at 2');
    // The chain is intact and the refused entry is not in it.
    expect((await all(first.entries())).map((e) => e.body.round)).toEqual([1, 2]);
  });

  it('continues the chain after a restart', async () => {
    const before = await openDecisionLog(nc, 'f-restart', key, 'coordinator');
    await before.append(entry('f-restart', 1, true));
    const { bytes } = await before.append(entry('f-restart', 2, true));
    const after = await openDecisionLog(nc, 'f-restart', key, 'coordinator');
    expect((await after.last())?.body.round).toBe(2);
    const next = await after.append(entry('f-restart', 3, false));
    expect(next.sequence).toBe(3);
    const entries = await all(after.entries());
    expect(entries.map((e) => e.sequence)).toEqual([1, 2, 3]);
    expect(entries[2]!.body.previousEntry).toEqual(sha256(bytes));
  });

  it('verifies with another key lookup and refuses entries of another signer', async () => {
    const log = await openDecisionLog(nc, 'f-signer', key, 'coordinator');
    await log.append(entry('f-signer', 1, true));
    const reader = await openDecisionLog(nc, 'f-signer', key, 'other', {
      keys: (s) => (s === 'coordinator' ? key : undefined),
    });
    await expect(reader.last()).rejects.toMatchObject({ code: 'LOG_ENTRY_INVALID' });
  });
});
