// The log writer refuses an entry over what an append may hold (LOG_MAX_APPEND_BYTES: the log's
// entry cap less the append's headers, which the stream counts against its max_msg_size) before
// anything is sent, and stays usable: the coordinator splits what it logs (a decision's votes) to
// fit. A real nats-server whose max_payload admits larger messages, so the boundary is the writer's
// own check and the stream's, not the client's.
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPair } from '../../../crypto/signature/index.ts';
import { InvalidArgumentError } from '../../../src/errors/index.ts';
import { type AdminActionBody, sealControl } from '../../../src/protocol/index.ts';
import {
  ensureLogStream,
  LOG_MAX_APPEND_BYTES,
  LOG_MAX_ENTRY_BYTES,
  LOG_ORIGIN,
  openLogReader,
  openLogWriter,
} from '../../../src/services/federation-log/index.ts';
import { type NatsServerHandle, startNatsServer } from '../../helpers/nats-server.ts';

const F = 'fl-cap';
const COORDINATOR = 'coordinator';
const T0 = 1_700_000_000_000;
// ML-DSA-65 signatures have a fixed length (3,309 bytes), so an entry's size is known before it is sealed.
const coordinatorKey = generateSigningKeyPair('ml-dsa-65');

function action(argumentBytes: number): AdminActionBody {
  return {
    action: 'runs.start',
    caller: 'ops',
    scope: 'operator',
    target: '',
    arguments: new Uint8Array(argumentBytes).fill(0x61),
    unixMs: T0,
  };
}

/** The argument size whose entry at `sequence` (after `previous`) seals to exactly `bytes`. */
function argumentsFor(bytes: number, sequence: number, previous: Uint8Array): number {
  const size = (n: number) =>
    sealControl(
      'log-record',
      { federation: F, sequence, previousEntry: previous, unixMs: T0, adminAction: action(n) },
      COORDINATOR,
      coordinatorKey,
    ).length;
  let n = bytes - size(0);
  // Length prefixes grow with the content: step until the sealed size is exact.
  for (let i = 0; i < 8 && size(n) !== bytes; i++) n += bytes - size(n);
  expect(size(n)).toBe(bytes);
  return n;
}

let server: NatsServerHandle;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer({ jetstream: true, config: `max_payload: ${2 * LOG_MAX_ENTRY_BYTES}` });
  nc = await connect({ servers: server.url });
  await ensureLogStream(await jetstreamManager(nc), { federation: F, replicas: 1, maxBytes: 64 << 20 });
}, 30_000);

afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

describe('FederationLogWriter.append and the entry cap', () => {
  it('appends an entry of exactly LOG_MAX_APPEND_BYTES, refuses one byte more, and stays usable', async () => {
    expect(LOG_MAX_APPEND_BYTES).toBe(LOG_MAX_ENTRY_BYTES - 1024);
    const writer = await openLogWriter(nc, {
      federation: F,
      signer: COORDINATOR,
      signing: coordinatorKey,
      start: LOG_ORIGIN,
      now: () => T0,
    });
    const atCap = await writer.append({
      adminAction: action(argumentsFor(LOG_MAX_APPEND_BYTES, 1, LOG_ORIGIN.hash)),
    });
    expect([atCap.sequence, atCap.bytes.length]).toEqual([1, LOG_MAX_APPEND_BYTES]);

    const over = argumentsFor(LOG_MAX_APPEND_BYTES + 1, 2, atCap.hash);
    const refused = await writer.append({ adminAction: action(over) }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(InvalidArgumentError);
    expect((refused as InvalidArgumentError).details).toMatchObject({
      name: 'record',
      bytes: LOG_MAX_APPEND_BYTES + 1,
      max: LOG_MAX_APPEND_BYTES,
    });
    // Nothing was sent: the writer is where it was and appends the next entry at sequence 2.
    expect(writer.fenced).toBe(false);
    expect(writer.position().sequence).toBe(1);
    const next = await writer.append({ adminAction: action(10) });
    expect(next.sequence).toBe(2);
    const log = await openLogReader(nc, {
      federation: F,
      coordinator: COORDINATOR,
      keys: (id) => (id === COORDINATOR ? coordinatorKey : undefined),
    });
    expect(await log.lastSequence()).toBe(2);
    expect((await log.get(1)).bytes.length).toBe(LOG_MAX_APPEND_BYTES);
  }, 60_000);
});
