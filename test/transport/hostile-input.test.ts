// Hostile input at the transport: cache poisoning, predictable ids, oversize and flooding senders,
// absurd chunk counts. Each test drives a real nats-server with raw, hand-framed messages.
import { connect, headers, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectTransport,
  crcHex,
  FRAME_HEADERS,
  type NatsTransport,
  TRANSPORT_DROP_REASONS,
  type TransportDropReason,
  TransportError,
} from '../../src/transport/index.ts';
import { type NatsServerHandle, startNatsServer } from '../helpers/nats-server.ts';

const MAX_PAYLOAD = 262_144;
const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

async function until(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await sleep(10);
}

interface RawFrame {
  readonly id: string;
  readonly data: Uint8Array;
  readonly index?: number;
  readonly count?: number;
  readonly length?: number;
  readonly crc?: string;
}

function frameHeaders(f: RawFrame) {
  const h = headers();
  h.set(FRAME_HEADERS.id, f.id);
  h.set(FRAME_HEADERS.chunk, `${f.index ?? 0}/${f.count ?? 1}`);
  h.set(FRAME_HEADERS.length, String(f.length ?? f.data.length));
  h.set(FRAME_HEADERS.crc, f.crc ?? crcHex(f.data));
  return h;
}

function publishRaw(nc: NatsConnection, subject: string, f: RawFrame): void {
  nc.publish(subject, f.data, { headers: frameHeaders(f) });
}

function requestRaw(nc: NatsConnection, subject: string, f: RawFrame): Promise<Msg> {
  return nc.request(subject, f.data, { timeout: 2000, headers: frameHeaders(f) });
}

function remoteErrorOf(m: Msg): string {
  return m.headers?.get(FRAME_HEADERS.error) ?? '';
}

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

describe('transport under hostile input', () => {
  let server: NatsServerHandle;
  let a: NatsTransport;
  let b: NatsTransport;
  let hostile: NatsConnection;
  let honest: NatsConnection;

  beforeAll(async () => {
    server = await startNatsServer({ config: `max_payload: ${MAX_PAYLOAD}` });
    a = await connectTransport({ servers: [server.url], name: 'a', timeoutMs: 1000, maxRetry: 1 });
    b = await connectTransport({
      servers: [server.url],
      name: 'b',
      timeoutMs: 1000,
      reassemblyTimeoutMs: 300,
    });
    hostile = await connect({ servers: server.url, name: 'hostile' });
    honest = await connect({ servers: server.url, name: 'honest' });
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await hostile?.close();
    await honest?.close();
    await server?.stop();
  });

  it('exports a frozen list of stable drop reasons', () => {
    expect(Object.isFrozen(TRANSPORT_DROP_REASONS)).toBe(true);
    expect([...TRANSPORT_DROP_REASONS]).toEqual(
      expect.arrayContaining([
        'FRAME_MALFORMED',
        'CRC_MISMATCH',
        'CHUNK_MISMATCH',
        'OVERSIZE',
        'REASSEMBLY_TIMEOUT',
        'REASSEMBLY_MEMORY',
        'RATE_LIMITED',
        'DUPLICATE',
      ]),
    );
  });

  it('a pre-poisoned message id neither blocks nor answers the honest request', async () => {
    const seen: string[] = [];
    const sub = b.subscribe('t.h.poison', async (m) => {
      seen.push(text(m.data));
      if (!text(m.data).startsWith('honest')) throw new TransportError('TRANSPORT_CHUNK', 'refused');
      if (text(m.data) !== 'honest') throw new TransportError('TRANSPORT_REMOTE', 'tampered');
      return bytes(`ok:${m.messageId}`);
    });
    await sub.ready();
    const X = 'victim0000000000000001';
    // The hostile member learnt X and sends junk under it first: the handler refuses it.
    const junk = await requestRaw(hostile, 't.h.poison', { id: X, data: bytes('junk') });
    expect(remoteErrorOf(junk)).toMatch(/^TRANSPORT_CHUNK /);
    // The honest request under X reaches the handler and gets its own reply, not the cached refusal.
    const real = await requestRaw(honest, 't.h.poison', { id: X, data: bytes('honest') });
    expect(remoteErrorOf(real)).toBe('');
    expect(real.string()).toBe(`ok:${X}`);
    // Its retry (same subject, id and bytes) is answered from the cache without running the handler.
    const retry = await requestRaw(honest, 't.h.poison', { id: X, data: bytes('honest') });
    expect(retry.string()).toBe(`ok:${X}`);
    // A tampered message re-sent under the honest id is handled, not acknowledged from the cache.
    const tampered = await requestRaw(hostile, 't.h.poison', { id: X, data: bytes('honest!') });
    expect(remoteErrorOf(tampered)).toMatch(/^TRANSPORT_REMOTE /);
    expect(seen).toEqual(['junk', 'honest', 'honest!']);
    expect(sub.stats()).toMatchObject({ delivered: 3, duplicates: 1 });
    expect(sub.stats().dropped.DUPLICATE).toBe(1);
    await sub.unsubscribe();
  });

  it('uses 128-bit random message ids, reply tokens and inbox bases', async () => {
    const ids: string[] = [];
    const replies: string[] = [];
    const spy = hostile.subscribe('t.h.ids', {
      callback: (_e, m) => {
        ids.push(m.headers?.get(FRAME_HEADERS.id) ?? '');
        if (m.reply) replies.push(m.reply);
      },
    });
    const sub = b.subscribe('t.h.ids', async () => bytes('ok'));
    await sub.ready();
    await hostile.flush();
    const site = await connectTransport({
      servers: [server.url],
      name: 'site',
      inboxPrefix: '_INBOX.f1.site-a',
    });
    try {
      for (let i = 0; i < 4; i++) await a.publish('t.h.ids', bytes('p'));
      for (let i = 0; i < 4; i++) await a.request('t.h.ids', bytes(`r${i}`));
      for (let i = 0; i < 2; i++) await b.request('t.h.ids', bytes(`b${i}`));
      for (let i = 0; i < 2; i++) await site.request('t.h.ids', bytes(`s${i}`));
      await until(() => ids.length >= 12);
    } finally {
      await site.close();
    }
    expect(ids).toHaveLength(12);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(new Set(ids).size).toBe(12);
    for (let i = 0; i < ids.length; i++) {
      for (let j = i + 1; j < ids.length; j++) expect(commonPrefix(ids[i]!, ids[j]!)).toBeLessThan(8);
    }
    expect(replies).toHaveLength(8);
    const parsed = replies.map((r) => r.split('.'));
    // _INBOX.<base>.<token> for a and b; the site keeps its member prefix _INBOX.f1.site-a.
    for (const p of parsed.slice(0, 6)) expect(p).toHaveLength(3);
    for (const p of parsed.slice(6)) expect(p.slice(0, 3)).toEqual(['_INBOX', 'f1', 'site-a']);
    for (const p of parsed.slice(6)) expect(p).toHaveLength(5);
    const tokens = parsed.map((p) => p.at(-1)!);
    const bases = [parsed[0]!.at(-2)!, parsed[4]!.at(-2)!, parsed[6]!.at(-2)!];
    for (const t of [...tokens, ...bases]) expect(t).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const all = [...tokens, ...bases];
    for (let i = 0; i < all.length; i++) {
      for (let j = i + 1; j < all.length; j++) expect(commonPrefix(all[i]!, all[j]!)).toBeLessThan(8);
    }
    spy.unsubscribe();
    await sub.unsubscribe();
  });

  it('drops a message declaring more than the cap as OVERSIZE on its first chunk, unbuffered and unchecked', async () => {
    const drops: [TransportDropReason, string][] = [];
    const got: number[] = [];
    const handler = async (m: { data: Uint8Array }) => {
      got.push(m.data.length);
    };
    const onDrop = (r: TransportDropReason, s: string) => drops.push([r, s]);
    const big = b.subscribe('t.h.big', handler, { onDrop });
    const small = b.subscribe('t.h.small', handler, { onDrop, maxMessageBytes: 4096 });
    await big.ready();
    await small.ready();
    const data = new Uint8Array(64 * 1024).fill(7);
    // One chunk declaring 100 MiB (over the transport default), with a wrong CRC: OVERSIZE, not CRC_MISMATCH.
    publishRaw(hostile, 't.h.big', { id: 'big1', data, length: 100 * MiB, crc: '00000000' });
    // The first chunk of a 100 MiB message with a correct CRC: OVERSIZE, nothing buffered.
    publishRaw(hostile, 't.h.big', { id: 'big2', data, count: 1600, length: 100 * MiB });
    // A heartbeat-sized subscription refuses 10 KiB on its first chunk.
    publishRaw(hostile, 't.h.small', {
      id: 'small1',
      data: data.subarray(0, 4096),
      count: 3,
      length: 10_240,
    });
    publishRaw(hostile, 't.h.small', { id: 'small2', data: data.subarray(0, 4000) });
    await hostile.flush();
    await until(() => drops.length >= 3 && got.length >= 1);
    await sleep(50);
    expect(got).toEqual([4000]);
    expect(drops).toEqual([
      ['OVERSIZE', 't.h.big'],
      ['OVERSIZE', 't.h.big'],
      ['OVERSIZE', 't.h.small'],
    ]);
    expect(big.stats().dropped).toMatchObject({ OVERSIZE: 2, CRC_MISMATCH: 0 });
    expect(big.stats().pendingBytes).toBe(0);
    expect(small.stats().dropped.OVERSIZE).toBe(1);
    expect(small.stats().pendingBytes).toBe(0);
    expect(b.stats().dropped.OVERSIZE).toBeGreaterThanOrEqual(3);
    expect(() => b.subscribe('t.h.x', handler, { maxMessageBytes: -1 })).toThrow(/maxMessageBytes/);
    await big.unsubscribe();
    await small.unsubscribe();
  });

  it('rate-limits a flooding sender per chunk, before the CRC check, while another sender gets through', async () => {
    const got: string[] = [];
    const drops: TransportDropReason[] = [];
    const sub = b.subscribe(
      't.h.rate.*',
      async (m) => {
        got.push(m.subject);
      },
      { rateLimit: { perSecond: 0.01, burst: 5 }, onDrop: (r) => drops.push(r) },
    );
    await sub.ready();
    for (let i = 0; i < 30; i++)
      publishRaw(hostile, 't.h.rate.s1', { id: `flood${i}`, data: bytes(`m${i}`) });
    for (let i = 0; i < 10; i++) {
      publishRaw(hostile, 't.h.rate.s1', { id: `bad${i}`, data: bytes('x'), crc: '00000000' });
    }
    await hostile.flush();
    await until(() => drops.length >= 35);
    publishRaw(honest, 't.h.rate.s2', { id: 'fine1', data: bytes('hello') });
    await honest.flush();
    await until(() => got.length >= 6);
    await sleep(50);
    expect(got.filter((s) => s === 't.h.rate.s1')).toHaveLength(5);
    expect(got.filter((s) => s === 't.h.rate.s2')).toHaveLength(1);
    expect(sub.stats().dropped).toMatchObject({ RATE_LIMITED: 35, CRC_MISMATCH: 0 });
    expect(() => b.subscribe('t.h.y', async () => {}, { rateLimit: { perSecond: 0, burst: 1 } })).toThrow(
      /perSecond/,
    );
    await sub.unsubscribe();
  });

  it('never allocates from a declared chunk count', async () => {
    const t = await connectTransport({ servers: [server.url], name: 'heap', reassemblyTimeoutMs: 60_000 });
    try {
      const drops: TransportDropReason[] = [];
      const sub = t.subscribe('t.h.heap', async () => {}, { onDrop: (r) => drops.push(r) });
      await sub.ready();
      const data = new Uint8Array(1024).fill(1);
      const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < 4; i++) {
        publishRaw(hostile, 't.h.heap', { id: `huge${i}`, data, count: 10_000_000, length: 60 * MiB });
      }
      publishRaw(hostile, 't.h.heap', { id: 'huge-x', data, count: 999_999_999, length: 60 * MiB });
      // A count that fits the length but not the size of chunk 0 (ceil(10240 / 1024) = 10, not 5).
      publishRaw(hostile, 't.h.heap', { id: 'odd', data, count: 5, length: 10_240 });
      // A consistent declaration is buffered chunk by chunk, never up front.
      publishRaw(hostile, 't.h.heap', { id: 'fine', data, count: 61_440, length: 60 * MiB });
      await hostile.flush();
      await until(() => drops.length >= 6 && sub.stats().pendingBytes > 0);
      const grown = process.memoryUsage().heapUsed - before;
      expect(grown).toBeLessThan(64 * MiB);
      expect(sub.stats().dropped).toMatchObject({ FRAME_MALFORMED: 5, CHUNK_MISMATCH: 1 });
      expect(sub.stats().pendingMessages).toBe(1);
      expect(sub.stats().pendingBytes).toBeGreaterThanOrEqual(1024);
      expect(sub.stats().pendingBytes).toBeLessThan(4096);
    } finally {
      await t.close();
    }
  });

  it('reassembles per sender: the same id from two subjects does not collide', async () => {
    const got: [string, string][] = [];
    const sub = b.subscribe('t.h.ra.*', async (m) => {
      got.push([m.subject, crcHex(m.data)]);
    });
    await sub.ready();
    const one = new Uint8Array(2048).fill(1);
    const two = new Uint8Array(3072).fill(2);
    const chunk = (d: Uint8Array, i: number) => d.subarray(i * 1024, (i + 1) * 1024);
    const Y = 'shared0000000000000001';
    publishRaw(hostile, 't.h.ra.s1', { id: Y, data: chunk(one, 0), index: 0, count: 2, length: 2048 });
    for (let i = 0; i < 3; i++) {
      publishRaw(honest, 't.h.ra.s2', { id: Y, data: chunk(two, i), index: i, count: 3, length: 3072 });
    }
    await honest.flush();
    publishRaw(hostile, 't.h.ra.s1', { id: Y, data: chunk(one, 1), index: 1, count: 2, length: 2048 });
    await hostile.flush();
    await until(() => got.length >= 2);
    expect(got.sort()).toEqual([
      ['t.h.ra.s1', crcHex(one)],
      ['t.h.ra.s2', crcHex(two)],
    ]);
    expect(sub.stats().dropped.CHUNK_MISMATCH).toBe(0);
    await sub.unsubscribe();
  });

  it('gives each sender its own share of the reassembly buffer: a flood evicts only its own', async () => {
    const got: [string, string][] = [];
    const sub = b.subscribe(
      't.h.share.*',
      async (m) => {
        got.push([m.subject, crcHex(m.data)]);
      },
      { maxMessageBytes: 4096, rateLimit: { perSecond: 1000, burst: 1000 } },
    );
    await sub.ready();
    const honestData = new Uint8Array(2048).fill(9);
    publishRaw(honest, 't.h.share.s2', {
      id: 'in-progress',
      data: honestData.subarray(0, 1024),
      index: 0,
      count: 2,
      length: 2048,
    });
    await honest.flush();
    // 200 first chunks the flooding sender never finishes: far beyond the 64 of all senders.
    for (let i = 0; i < 200; i++) {
      publishRaw(hostile, 't.h.share.s1', {
        id: `never-${i}`,
        data: new Uint8Array(1024),
        index: 0,
        count: 2,
        length: 2048,
      });
    }
    await hostile.flush();
    await until(() => sub.stats().dropped.REASSEMBLY_SENDER_SHARE >= 192);
    publishRaw(honest, 't.h.share.s2', {
      id: 'in-progress',
      data: honestData.subarray(1024),
      index: 1,
      count: 2,
      length: 2048,
    });
    await honest.flush();
    await until(() => got.length >= 1);
    expect(got).toEqual([['t.h.share.s2', crcHex(honestData)]]);
    expect(sub.stats().dropped).toMatchObject({ REASSEMBLY_SENDER_SHARE: 192, REASSEMBLY_MEMORY: 0 });
    expect(sub.stats().pendingMessages).toBe(8); // the flooding sender's default share
    await sub.unsubscribe();
  });

  it('counts every drop with its reason, per subscription and per transport', async () => {
    const drops: [TransportDropReason, string][] = [];
    const errors: TransportError[] = [];
    const sub = b.subscribe('t.h.count', async () => {}, {
      maxPendingMessages: 2,
      onDrop: (r, s) => drops.push([r, s]),
      onError: (e) => errors.push(e),
    });
    await sub.ready();
    const before = b.stats().dropped;
    const d = new Uint8Array(1024).fill(3);
    const h = headers();
    h.set(FRAME_HEADERS.id, 'noframe');
    hostile.publish('t.h.count', d, { headers: h }); // FRAME_MALFORMED
    publishRaw(hostile, 't.h.count', { id: 'crc', data: d, crc: 'ffffffff' }); // CRC_MISMATCH
    publishRaw(hostile, 't.h.count', { id: 'len', data: d, length: 1000 + d.length, count: 1 }); // CHUNK_MISMATCH
    for (let i = 0; i < 3; i++) {
      // three partial messages, two may wait: one REASSEMBLY_MEMORY, then two REASSEMBLY_TIMEOUT
      publishRaw(hostile, 't.h.count', { id: `part${i}`, data: d, count: 2, length: 2048 });
    }
    publishRaw(hostile, 't.h.count', { id: 'part2', data: d, count: 2, length: 2048 }); // DUPLICATE chunk
    await hostile.flush();
    await until(() => drops.length >= 7, 2000);
    const counts = sub.stats().dropped;
    expect(counts).toMatchObject({
      FRAME_MALFORMED: 1,
      CRC_MISMATCH: 1,
      CHUNK_MISMATCH: 1,
      REASSEMBLY_MEMORY: 1,
      REASSEMBLY_TIMEOUT: 2,
      DUPLICATE: 1,
      RATE_LIMITED: 0,
      OVERSIZE: 0,
    });
    expect(Object.keys(counts).sort()).toEqual([...TRANSPORT_DROP_REASONS].sort());
    expect(drops.every(([, s]) => s === 't.h.count')).toBe(true);
    expect(errors.map((e) => e.code)).toEqual(['TRANSPORT_CHUNK', 'TRANSPORT_CHUNK', 'TRANSPORT_CHUNK']);
    expect(sub.stats()).toMatchObject({ chunkErrors: 3, expired: 3, pendingMessages: 0, pendingBytes: 0 });
    const after = b.stats().dropped;
    for (const r of TRANSPORT_DROP_REASONS) expect(after[r] - before[r]).toBe(counts[r]);
    await sub.unsubscribe();
    // The transport keeps counting after the subscription ended.
    expect(b.stats().dropped.REASSEMBLY_TIMEOUT - before.REASSEMBLY_TIMEOUT).toBe(2);
  });

  it('counts a reply for no pending request as UNSOLICITED', async () => {
    const replies: string[] = [];
    const spy = hostile.subscribe('t.h.late', {
      callback: (_e, m) => {
        replies.push(m.reply ?? '');
      },
    });
    const sub = b.subscribe('t.h.late', async () => bytes('ok'));
    await sub.ready();
    await hostile.flush();
    await a.request('t.h.late', bytes('q'));
    await until(() => replies.length >= 1);
    const before = a.stats().dropped.UNSOLICITED;
    publishRaw(hostile, replies[0]!, { id: 'late', data: bytes('forged') });
    publishRaw(hostile, `${replies[0]!.slice(0, replies[0]!.lastIndexOf('.'))}.other`, {
      id: 'late2',
      data: bytes('forged'),
    });
    await hostile.flush();
    await until(() => a.stats().dropped.UNSOLICITED - before >= 2);
    expect(a.stats().dropped.UNSOLICITED - before).toBe(2);
    spy.unsubscribe();
    await sub.unsubscribe();
  });
});
