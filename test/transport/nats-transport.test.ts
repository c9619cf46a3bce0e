import { randomBytes } from 'node:crypto';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectTransport,
  crcHex,
  FRAME_HEADERS,
  type InboundMessage,
  type NatsTransport,
  TransportError,
} from '../../src/transport/index.ts';
import {
  type NatsClusterHandle,
  type NatsServerHandle,
  startNatsCluster,
  startNatsServer,
} from '../helpers/nats-server.ts';

const MAX_PAYLOAD = 262_144;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function rejection(p: Promise<unknown>): Promise<TransportError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(TransportError);
    return err as TransportError;
  }
  throw new Error('expected a rejection');
}

function frameHeaders(id: string, index: number, count: number, length: number, crc: string) {
  const h = headers();
  h.set(FRAME_HEADERS.id, id);
  h.set(FRAME_HEADERS.chunk, `${index}/${count}`);
  h.set(FRAME_HEADERS.length, String(length));
  h.set(FRAME_HEADERS.crc, crc);
  return h;
}

describe('NatsTransport on one server (max_payload 256 KiB)', () => {
  let server: NatsServerHandle;
  let a: NatsTransport;
  let b: NatsTransport;
  let raw: NatsConnection;

  beforeAll(async () => {
    server = await startNatsServer({ config: `max_payload: ${MAX_PAYLOAD}` });
    a = await connectTransport({ servers: [server.url], name: 'a', timeoutMs: 1000, maxRetry: 2 });
    b = await connectTransport({
      servers: [server.url],
      name: 'b',
      timeoutMs: 1000,
      reassemblyTimeoutMs: 200,
    });
    raw = await connect({ servers: server.url });
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await raw?.close();
    await server?.stop();
  });

  it('starts on a random port, not 4222', () => {
    expect(server.port).not.toBe(4222);
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    expect(a.maxPayload).toBe(MAX_PAYLOAD);
  });

  it('publishes and subscribes with headers', async () => {
    const got: InboundMessage[] = [];
    const sub = b.subscribe('t.pub', async (m) => {
      got.push(m);
    });
    await sub.ready();
    await a.publish('t.pub', new Uint8Array([1, 2, 3]), { 'X-Round': '7' });
    await b.flush();
    await sleep(50);
    expect(got).toHaveLength(1);
    expect([...got[0]!.data]).toEqual([1, 2, 3]);
    expect(got[0]!.headers).toEqual({ 'X-Round': '7' });
    expect(got[0]!.expectsReply).toBe(false);
    await sub.unsubscribe();
    expect(await sub.closed).toBeUndefined();
  });

  it('answers a request with the handler result as the acknowledgement', async () => {
    const sub = b.subscribe('t.ack', async (m) => new TextEncoder().encode(`ack:${m.data.length}`));
    await sub.ready();
    const reply = await a.request('t.ack', new Uint8Array(10));
    expect(new TextDecoder().decode(reply)).toBe('ack:10');
    const empty = b.subscribe('t.ack-empty', async () => undefined);
    await empty.ready();
    expect((await a.request('t.ack-empty', new Uint8Array(1))).length).toBe(0);
    await sub.unsubscribe();
    await empty.unsubscribe();
  });

  it('chunks a 3 MB payload under max_payload and reassembles it byte-exact', async () => {
    const payload = new Uint8Array(randomBytes(3 * 1024 * 1024));
    let received: Uint8Array | undefined;
    let chunks = 0;
    const counter = raw.subscribe('t.big', {
      callback: (_e, m) => {
        chunks++;
        expect(m.data.length).toBeLessThanOrEqual(MAX_PAYLOAD);
      },
    });
    const sub = b.subscribe('t.big', async (m) => {
      received = m.data;
      return crcBytes(m.data);
    });
    await sub.ready();
    await raw.flush();
    const ack = await a.request('t.big', payload);
    expect(Buffer.from(ack).toString()).toBe(crcHex(payload));
    expect(received).toBeDefined();
    expect(Buffer.compare(received!, payload)).toBe(0);
    await raw.flush();
    expect(chunks).toBeGreaterThanOrEqual(Math.ceil(payload.length / MAX_PAYLOAD));
    // A large reply is chunked on the way back as well.
    const echo = b.subscribe('t.echo', async (m) => m.data);
    await echo.ready();
    const back = await a.request('t.echo', payload);
    expect(Buffer.compare(back, payload)).toBe(0);
    counter.unsubscribe();
    await sub.unsubscribe();
    await echo.unsubscribe();
  });

  it('keeps the application headers of a chunked message (they travel on chunk 0)', async () => {
    const got: InboundMessage[] = [];
    const sub = b.subscribe('t.big-headers', async (m) => {
      got.push(m);
    });
    await sub.ready();
    const payload = new Uint8Array(randomBytes(3 * MAX_PAYLOAD));
    await a.request('t.big-headers', payload, { headers: { 'X-Round': '9' } });
    expect(got).toHaveLength(1);
    expect(got[0]!.headers).toEqual({ 'X-Round': '9' });
    expect(Buffer.compare(got[0]!.data, payload)).toBe(0);
    await sub.unsubscribe();
  });

  it('retries a slow request with one message id; the handler runs once', async () => {
    let calls = 0;
    const ids = new Set<string>();
    const sub = b.subscribe('t.slow', async (m) => {
      calls++;
      ids.add(m.messageId);
      await sleep(500); // longer than two attempts of 200 ms
      return new Uint8Array([42]);
    });
    await sub.ready();
    let spyCount = 0;
    const spy = raw.subscribe('t.slow', {
      callback: () => {
        spyCount++;
      },
    });
    await raw.flush();
    const before = a.stats().retries;
    const reply = await a.request('t.slow', new Uint8Array([1]), { timeoutMs: 200, maxRetry: 3 });
    expect([...reply]).toEqual([42]);
    expect(calls).toBe(1);
    expect(ids.size).toBe(1);
    expect(spyCount).toBeGreaterThanOrEqual(3); // the request went out at least three times
    expect(a.stats().retries - before).toBeGreaterThanOrEqual(2);
    expect(sub.stats().duplicates).toBeGreaterThanOrEqual(2);
    spy.unsubscribe();
    await sub.unsubscribe();
  });

  it('answers a duplicate message id from the reply cache without running the handler again', async () => {
    let calls = 0;
    const sub = b.subscribe('t.dup', async () => {
      calls++;
      return new TextEncoder().encode(`reply-${calls}`);
    });
    await sub.ready();
    const data = new Uint8Array([9, 9]);
    const h = () => frameHeaders('dupid0000000000000001', 0, 1, data.length, crcHex(data));
    const r1 = await raw.request('t.dup', data, { timeout: 1000, headers: h() });
    const r2 = await raw.request('t.dup', data, { timeout: 1000, headers: h() });
    expect(r1.string()).toBe('reply-1');
    expect(r2.string()).toBe('reply-1');
    expect(calls).toBe(1);
    expect(sub.stats().duplicates).toBe(1);
    await sub.unsubscribe();
  });

  it('fails with TRANSPORT_TIMEOUT after maxRetry + 1 unanswered attempts', async () => {
    const seen: string[] = [];
    const mute = raw.subscribe('t.mute', {
      callback: (_e, m) => {
        seen.push(m.headers?.get(FRAME_HEADERS.id) ?? '');
      },
    });
    await raw.flush();
    const err = await rejection(a.request('t.mute', new Uint8Array(1), { timeoutMs: 150, maxRetry: 2 }));
    expect(err.code).toBe('TRANSPORT_TIMEOUT');
    expect(err.details['attempts']).toBe(3);
    expect(seen).toHaveLength(3);
    expect(new Set(seen).size).toBe(1); // the same message id on every attempt
    mute.unsubscribe();
  });

  it('fails with TRANSPORT_NO_RESPONDERS when nobody subscribes', async () => {
    const err = await rejection(a.request('t.nobody', new Uint8Array(1), { timeoutMs: 200, maxRetry: 1 }));
    expect(err.code).toBe('TRANSPORT_NO_RESPONDERS');
  });

  it('returns a handler failure to the requester as TRANSPORT_REMOTE', async () => {
    const sub = b.subscribe('t.fail', async () => {
      throw new TransportError('TRANSPORT_CHUNK', 'boom');
    });
    await sub.ready();
    const err = await rejection(a.request('t.fail', new Uint8Array(1)));
    expect(err.code).toBe('TRANSPORT_REMOTE');
    expect(err.details['remoteCode']).toBe('TRANSPORT_CHUNK');
    await sub.unsubscribe();
  });

  it('refuses a corrupt chunk with TRANSPORT_CHUNK and expires incomplete messages', async () => {
    const errors: TransportError[] = [];
    let calls = 0;
    const sub = b.subscribe(
      't.corrupt',
      async () => {
        calls++;
      },
      { onError: (e) => errors.push(e) },
    );
    await sub.ready();
    const data = new Uint8Array([1, 2, 3, 4]);
    raw.publish('t.corrupt', data, { headers: frameHeaders('corrupt00000000000001', 0, 1, 4, '00000000') });
    raw.publish('t.corrupt', data, { headers: frameHeaders('partial00000000000001', 0, 2, 8, crcHex(data)) });
    await raw.flush();
    await sleep(400); // reassemblyTimeoutMs is 200
    expect(calls).toBe(0);
    expect(errors.map((e) => e.code)).toEqual(['TRANSPORT_CHUNK']);
    expect(sub.stats()).toMatchObject({ chunkErrors: 1, expired: 1, delivered: 0 });
    await sub.unsubscribe();
  });

  it('validates arguments and reports TRANSPORT_CLOSED after close', async () => {
    await expect(a.publish('bad subject', new Uint8Array())).rejects.toThrow(/subject/);
    await expect(a.publish('t.*', new Uint8Array())).rejects.toThrow(/wildcards/);
    await expect(a.publish('t.x', new Uint8Array(), { 'Cohort-Id': 'x' })).rejects.toThrow(/reserved/);
    const c = await connectTransport({ servers: [server.url], name: 'c' });
    await c.close();
    const err = await rejection(c.publish('t.x', new Uint8Array(1)));
    expect(err.code).toBe('TRANSPORT_CLOSED');
    await expect(
      connectTransport({ servers: ['nats://127.0.0.1:1'], name: 'x', timeoutMs: 300 }),
    ).rejects.toMatchObject({ code: 'TRANSPORT_CONNECT' });
  });
});

function crcBytes(data: Uint8Array): Uint8Array {
  return new TextEncoder().encode(crcHex(data));
}

describe('NatsTransport on a three-node cluster', () => {
  let cluster: NatsClusterHandle;

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('delivers from node 3 to node 1, also after node 2 stops', async () => {
    const n1 = await connectTransport({ servers: [cluster.urls[0]!], name: 'n1-sub', timeoutMs: 2000 });
    const n3 = await connectTransport({ servers: [cluster.urls[2]!], name: 'n3-pub', timeoutMs: 2000 });
    try {
      const got: string[] = [];
      const sub = n1.subscribe('t.cluster', async (m) => {
        got.push(new TextDecoder().decode(m.data));
        return m.data;
      });
      await sub.ready();
      const waitFor = async (n: number) => {
        for (let i = 0; i < 100 && got.length < n; i++) await sleep(20);
      };
      // Interest propagates over routes asynchronously: a request (with retries) proves the path.
      await n3.request('t.cluster', new TextEncoder().encode('one'), { timeoutMs: 500, maxRetry: 5 });
      await n3.publish('t.cluster', new TextEncoder().encode('two'));
      await waitFor(2);
      expect(got).toEqual(['one', 'two']);

      await cluster.nodes[1]!.stop();
      expect(cluster.nodes[1]!.running).toBe(false);
      const reply = await n3.request('t.cluster', new TextEncoder().encode('three'), { timeoutMs: 1000 });
      expect(new TextDecoder().decode(reply)).toBe('three');
      await n3.publish('t.cluster', new TextEncoder().encode('four'));
      await waitFor(4);
      expect(got).toEqual(['one', 'two', 'three', 'four']);
    } finally {
      await n1.close();
      await n3.close();
    }
  });
});
