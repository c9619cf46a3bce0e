// A site reads stored objects (an aggregate sent by reference, a round's decryption shares, a
// re-sharing's deals, catch-up) from a real nats-server. A server that stalls for a moment (here
// paused with SIGSTOP) must cost a retry, not a NO vote: one read timing out under load made a
// voter vote NO for REPLAY_UNAVAILABLE and abort a threshold round it could decrypt. An object
// that is not stored is reported as such.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentCore } from '../../../src/services/agent/agent-core.ts';
import { fetchObject } from '../../../src/services/agent/aggregate-fetch.ts';
import { aggregateStore, lazyWriteOnceStore } from '../../../src/services/store/index.ts';
import { type NatsServerHandle, startNatsServer } from '../../helpers/nats-server.ts';

const F = 'fetchretry';
const STORE = aggregateStore(F);

describe('fetchObject (real nats-server)', () => {
  let server: NatsServerHandle;
  let nc: NatsConnection;
  let core: AgentCore;
  const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) & 0xff);

  beforeAll(async () => {
    server = await startNatsServer({ jetstream: true });
    nc = await connect({ servers: server.url });
    const store = await lazyWriteOnceStore(nc, STORE, { replicas: 1 })();
    await store.put('round-1', bytes);
    // Only what fetchObject reads of a site: its connection and its NATS settings.
    core = {
      ctx: { transport: { connection: nc }, config: { nats: { timeoutMs: 400, maxRetry: 5 } } },
    } as unknown as AgentCore;
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('reads an object through a server stalled for longer than one read’s timeout', async () => {
    process.kill(server.pid, 'SIGSTOP');
    const resume = setTimeout(() => process.kill(server.pid, 'SIGCONT'), 1200);
    try {
      const read = await fetchObject(core, STORE, 'round-1', 1 << 20);
      expect(Buffer.from(read).equals(Buffer.from(bytes))).toBe(true);
    } finally {
      clearTimeout(resume);
      process.kill(server.pid, 'SIGCONT');
    }
  });

  it('reports an object that is not stored as such', async () => {
    await expect(fetchObject(core, STORE, 'round-2', 1 << 20)).rejects.toMatchObject({
      code: 'REPLAY_UNAVAILABLE',
      message: expect.stringMatching(/is not stored/),
    });
  });
});
