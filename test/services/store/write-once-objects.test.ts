// The write-once object streams (aggregates, snapshots) on a real nats-server (2.9.10 in CI): what
// the coordinator creates and refuses to use, what its writer and a read-only reader see, what the
// stream refuses to anyone (a second message on a subject, rollups, deletes, purges, oversized
// frames), and what the reader reports on objects crafted by hand with an all-powerful user.
import { createHash, randomBytes } from 'node:crypto';
import { DiscardPolicy, jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect, type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  aggregateStore,
  lazyWriteOnceStore,
  OBJECT_FRAME_BYTES,
  OBJECT_FRAME_HEADER_BYTES,
  readWriteOnceObject,
  StoreError,
  snapshotStore,
  writeOnceObjectWriter,
  writeOnceStoreSettings,
} from '../../../src/services/store/index.ts';
import { federationSubjects, readOnlyStreamSubjects } from '../../../src/transport/index.ts';
import { rejection } from '../../helpers/error-code.ts';
import { type NatsServerHandle, startNatsServer } from '../../helpers/nats-server.ts';
import { nkeyUser } from '../../helpers/nkey-user.ts';

const F = 'wonce';
const S = federationSubjects(F);
const AGG = aggregateStore(F);
const SNAP = snapshotStore(F);
const LIMIT = { maxBytes: 1 << 22, timeoutMs: 2000 };
const storeError = (p: Promise<unknown>) => rejection(p, StoreError);

const ADMIN = nkeyUser('admin', { allow: ['>'] }, { allow: ['>'] });
/** The coordinator's rights on the two streams, as federationUsers gives them. */
const WRITER = nkeyUser(
  'writer',
  {
    allow: [
      S.aggregates,
      S.snapshotStore,
      ...[S.aggregatesStream, S.snapshotsStream].flatMap((s) => [
        ...readOnlyStreamSubjects(s),
        `$JS.API.STREAM.CREATE.${s}`,
      ]),
    ],
  },
  { allow: ['_INBOX.writer.>'] },
);
/** A site's rights: read-only on both. */
const READER = nkeyUser(
  'reader',
  { allow: [...readOnlyStreamSubjects(S.aggregatesStream), ...readOnlyStreamSubjects(S.snapshotsStream)] },
  { allow: ['_INBOX.reader.>'] },
);

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const header = (object: string, size: number, frameBytes: number, digest: string, frames?: number) =>
  JSON.stringify({
    cohort: 'cohort/write-once-object/v1',
    object,
    size,
    frames: frames ?? Math.ceil(size / frameBytes),
    frameBytes,
    sha256: digest,
  });

describe('write-once object streams', () => {
  let server: NatsServerHandle;
  let admin: NatsConnection;
  let writer: NatsConnection;
  let reader: NatsConnection;

  beforeAll(async () => {
    server = await startNatsServer({ jetstream: true, users: [ADMIN.user, WRITER.user, READER.user] });
    admin = await connect({ servers: server.url, authenticator: ADMIN.authenticator });
    writer = await connect({
      servers: server.url,
      authenticator: WRITER.authenticator,
      inboxPrefix: '_INBOX.writer',
    });
    reader = await connect({
      servers: server.url,
      authenticator: READER.authenticator,
      inboxPrefix: '_INBOX.reader',
    });
  });
  afterAll(async () => {
    for (const nc of [reader, writer, admin]) await nc?.close();
    await server?.stop();
  });

  it('names its streams and subjects', () => {
    expect(AGG.stream).toBe('COHORT_WONCE_AGGREGATES');
    expect(SNAP.stream).toBe('COHORT_WONCE_SNAPSHOTS');
    expect(AGG.frameSubject('round-3-partial-agg-2', 0)).toBe(
      'cohort.wonce.aggregate.round-3-partial-agg-2.0',
    );
    expect(SNAP.frameSubject('height-4-site-1-0123456789abcdef', 7)).toBe(
      'cohort.wonce.snapshot-store.height-4-site-1-0123456789abcdef.7',
    );
    // Not under the sites' snapshot offer subjects, nor any other stream's.
    expect(SNAP.subjects).toBe('cohort.wonce.snapshot-store.>');
    for (const bad of ['a.b', '*', '>', '', 'x'.repeat(256), 'sp ace']) {
      expect(() => AGG.frameSubject(bad, 0)).toThrow(/object/);
    }
    expect(() => AGG.frameSubject('round-1', -1)).toThrow(/frame/);
  });

  it('the coordinator creates each stream write-once, rollup-free, capped at a frame, never expiring; a second call accepts it', async () => {
    for (const store of [AGG, SNAP]) {
      const objects = await lazyWriteOnceStore(writer, store, { replicas: 1, timeoutMs: 2000 })();
      expect(objects.store).toBe(store);
      const c = (await (await jetstreamManager(admin)).streams.info(store.stream)).config;
      expect(c).toMatchObject({
        subjects: [store.subjects],
        storage: 'file',
        retention: 'limits',
        discard: 'new',
        deny_delete: true,
        deny_purge: true,
        allow_rollup_hdrs: false,
        max_msgs_per_subject: 1,
        discard_new_per_subject: true,
        max_msg_size: OBJECT_FRAME_BYTES + OBJECT_FRAME_HEADER_BYTES,
        max_age: 0,
        max_msgs: -1,
        max_bytes: -1,
      });
      // A second writer (a restarted coordinator) finds it as it must be.
      await lazyWriteOnceStore(writer, store, { replicas: 1 })();
    }
    expect(writeOnceStoreSettings(AGG, { replicas: 3 })).toMatchObject({ replicas: 3, maxAgeMs: 0 });
  });

  it('an object is written in frames and read back by a read-only user; absent objects read as null', async () => {
    const objects = writeOnceObjectWriter(writer, AGG, { frameBytes: 1000 });
    const cases: [string, Uint8Array][] = [
      ['empty', new Uint8Array(0)],
      ['one-byte', Uint8Array.of(7)],
      ['exact', randomBytes(3000)],
      ['ragged', randomBytes(3001)],
      ['large', randomBytes(40_000)],
    ];
    for (const [name, bytes] of cases) await objects.put(name, bytes);
    for (const [name, bytes] of cases) {
      const got = await readWriteOnceObject(reader, AGG, name, LIMIT);
      expect(Buffer.from(got!).equals(bytes), name).toBe(true);
    }
    // Frame 0 the header, 1… the bytes.
    const jsm = await jetstreamManager(admin);
    const frames = (
      await jsm.streams.info(AGG.stream, {
        subjects_filter: AGG.frameSubject('ragged', 0).replace(/0$/, '*'),
      })
    ).state.subjects;
    expect(Object.keys(frames ?? {}).sort()).toEqual(
      [0, 1, 2, 3, 4].map((i) => AGG.frameSubject('ragged', i)).sort(),
    );
    expect(await readWriteOnceObject(reader, AGG, 'never-written', LIMIT)).toBeNull();
    // The default frame: one frame up to OBJECT_FRAME_BYTES.
    const big = randomBytes(OBJECT_FRAME_BYTES + 5);
    await writeOnceObjectWriter(writer, SNAP).put('height-1-site-1-00', big);
    expect(
      Buffer.from((await readWriteOnceObject(reader, SNAP, 'height-1-site-1-00', LIMIT))!).equals(big),
    ).toBe(true);
  });

  it('the same object again is a retry; other bytes under a stored name are refused OBJECT_EXISTS and nothing changes', async () => {
    const objects = writeOnceObjectWriter(writer, AGG, { frameBytes: 1000 });
    const first = randomBytes(2500);
    await objects.put('round-9', first);
    await objects.put('round-9', first);
    const other = Buffer.from(first);
    other[2400] = other[2400]! ^ 1;
    const err = await storeError(objects.put('round-9', other));
    expect(err.code).toBe('OBJECT_EXISTS');
    expect(err.message).toMatch(/never replaced/);
    // Another frame size is other frames: refused as well.
    expect((await storeError(writeOnceObjectWriter(writer, AGG).put('round-9', first))).code).toBe(
      'OBJECT_EXISTS',
    );
    expect(Buffer.from((await readWriteOnceObject(reader, AGG, 'round-9', LIMIT))!).equals(first)).toBe(true);
  });

  it('a write cut short (frames without their header) reads as absent, and the retry completes it', async () => {
    const bytes = randomBytes(2500);
    const js = jetstream(writer, { checkAPI: false });
    await js.publish(AGG.frameSubject('cut-short', 1), bytes.subarray(0, 1000));
    expect(await readWriteOnceObject(reader, AGG, 'cut-short', LIMIT)).toBeNull();
    await writeOnceObjectWriter(writer, AGG, { frameBytes: 1000 }).put('cut-short', bytes);
    expect(Buffer.from((await readWriteOnceObject(reader, AGG, 'cut-short', LIMIT))!).equals(bytes)).toBe(
      true,
    );
  });

  it('the stream refuses to anyone a second message on a subject, rollups, deletes, purges and oversized frames (measured)', async () => {
    const bytes = randomBytes(2000);
    await writeOnceObjectWriter(writer, AGG, { frameBytes: 1000 }).put('kept', bytes);
    const jsm = await jetstreamManager(admin);
    const before = (await jsm.streams.info(AGG.stream)).state.messages;
    const js = jetstream(admin);
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => 'stored',
        (e: Error) => e.message,
      );
    const rollup = (kind: string) => {
      const h = natsHeaders();
      h.set('Nats-Rollup', kind);
      return h;
    };
    // Without an expectation (the server's own rules only).
    expect(await refusal(js.publish(AGG.frameSubject('kept', 0), 'x'))).toMatch(
      /maximum messages per subject exceeded/,
    );
    expect(await refusal(js.publish(AGG.frameSubject('kept', 1), 'x'))).toMatch(
      /maximum messages per subject exceeded/,
    );
    for (const kind of ['all', 'sub']) {
      expect(await refusal(js.publish(AGG.frameSubject('kept', 0), 'x', { headers: rollup(kind) }))).toMatch(
        /rollup not permitted/,
      );
      expect(await refusal(js.publish(AGG.frameSubject('fresh', 0), 'x', { headers: rollup(kind) }))).toMatch(
        /rollup not permitted/,
      );
    }
    expect(await refusal(jsm.streams.deleteMessage(AGG.stream, 1))).toMatch(/delete/i);
    expect(await refusal(jsm.streams.purge(AGG.stream))).toMatch(/purge/i);
    expect(await refusal(jsm.streams.purge(AGG.stream, { filter: AGG.frameSubject('kept', 0) }))).toMatch(
      /purge/i,
    );
    expect(
      await refusal(
        js.publish(
          AGG.frameSubject('huge', 1),
          new Uint8Array(OBJECT_FRAME_BYTES + OBJECT_FRAME_HEADER_BYTES + 1),
        ),
      ),
    ).toMatch(/message size exceeds maximum allowed/);
    expect((await jsm.streams.info(AGG.stream)).state.messages).toBe(before);
    expect(Buffer.from((await readWriteOnceObject(reader, AGG, 'kept', LIMIT))!).equals(bytes)).toBe(true);
    // A read-only user may not write at all.
    expect(
      await refusal(
        jetstream(reader, { checkAPI: false, timeout: 2000 }).publish(AGG.frameSubject('r', 0), 'x'),
      ),
    ).not.toBe('stored');
  });

  it('frames added later beyond an object’s header are never read', async () => {
    const bytes = randomBytes(1500);
    await writeOnceObjectWriter(writer, AGG, { frameBytes: 1000 }).put('extended', bytes);
    const js = jetstream(admin);
    for (const i of [3, 4, 99]) await js.publish(AGG.frameSubject('extended', i), randomBytes(1000));
    expect(Buffer.from((await readWriteOnceObject(reader, AGG, 'extended', LIMIT))!).equals(bytes)).toBe(
      true,
    );
  });

  it('a reader refuses an object larger than its cap before any frame, and one whose header or frames do not hold', async () => {
    const js = jetstream(admin);
    const bytes = randomBytes(2500);
    await writeOnceObjectWriter(writer, AGG, { frameBytes: 1000 }).put('capped', bytes);
    expect((await storeError(readWriteOnceObject(reader, AGG, 'capped', { maxBytes: 2499 }))).code).toBe(
      'OBJECT_TOO_LARGE',
    );
    // A header declaring 4 GB and no frame at all: too large, not corrupt (no frame is read).
    await js.publish(AGG.frameSubject('huge-header', 0), header('huge-header', 4e9, 1000, sha(bytes)));
    expect((await storeError(readWriteOnceObject(reader, AGG, 'huge-header', LIMIT))).code).toBe(
      'OBJECT_TOO_LARGE',
    );
    const crafted: [string, string, Uint8Array[], RegExp][] = [
      ['not-json', '{', [], /not JSON/],
      [
        'other-name',
        header('someone-else', 10, 1000, sha(new Uint8Array(10))),
        [new Uint8Array(10)],
        /names object/,
      ],
      ['no-tag', JSON.stringify({ object: 'no-tag' }), [], /header/],
      ['bad-count', header('bad-count', 2500, 1000, sha(bytes), 2), [], /declares 2 frames/],
      [
        'missing',
        header('missing', 2500, 1000, sha(bytes)),
        [bytes.subarray(0, 1000)],
        /frame 2 of 3 is missing/,
      ],
      [
        'short',
        header('short', 2500, 1000, sha(bytes)),
        [bytes.subarray(0, 1000), bytes.subarray(1000, 1900), bytes.subarray(2000)],
        /frame 2 of 3 is 900 bytes, expected 1000/,
      ],
      [
        'digest',
        header('digest', 2500, 1000, sha(randomBytes(4))),
        [bytes.subarray(0, 1000), bytes.subarray(1000, 2000), bytes.subarray(2000)],
        /SHA-256/,
      ],
    ];
    for (const [name, head, frames, why] of crafted) {
      for (let i = 0; i < frames.length; i++) await js.publish(AGG.frameSubject(name, i + 1), frames[i]!);
      await js.publish(AGG.frameSubject(name, 0), head);
      const err = await storeError(readWriteOnceObject(reader, AGG, name, LIMIT));
      expect(err.code, name).toBe('OBJECT_CORRUPT');
      expect(err.message, name).toMatch(why);
    }
  });

  it('a stream with weaker settings is refused STREAM_MISMATCH, naming each; a missing stream reads BUCKET_NOT_FOUND', async () => {
    const weak = aggregateStore('weakfed');
    const jsm = await jetstreamManager(admin);
    await jsm.streams.add({
      name: weak.stream,
      subjects: [weak.subjects],
      storage: StorageType.Memory,
      discard: DiscardPolicy.Old,
      allow_rollup_hdrs: true,
      max_age: 60_000_000_000,
    });
    const err = await storeError(lazyWriteOnceStore(admin, weak, { replicas: 1 })());
    expect(err.code).toBe('STREAM_MISMATCH');
    for (const setting of [
      'storage',
      'deny_delete',
      'deny_purge',
      'discard',
      'max_age',
      'allow_rollup_hdrs',
      'max_msgs_per_subject',
      'discard_new_per_subject',
      'max_msg_size',
    ]) {
      expect(err.message).toContain(setting);
    }
    const missing = await storeError(readWriteOnceObject(admin, snapshotStore('nofed'), 'x', LIMIT));
    expect(missing.code).toBe('BUCKET_NOT_FOUND');
    // No right to read: unavailable, not absent.
    const denied = await storeError(readWriteOnceObject(reader, aggregateStore('other'), 'x', LIMIT));
    expect(denied.code).toBe('STORE_UNAVAILABLE');
  });

  it('frames fit a server max_payload smaller than a frame', async () => {
    const objects = await lazyWriteOnceStore(writer, AGG, { replicas: 1, maxPayload: 4096 })();
    const bytes = randomBytes(10_000);
    await objects.put('small-payload', bytes);
    const frames = (
      await (
        await jetstreamManager(admin)
      ).streams.info(AGG.stream, {
        subjects_filter: 'cohort.wonce.aggregate.small-payload.*',
      })
    ).state.subjects;
    expect(Object.keys(frames ?? {}).length).toBe(1 + Math.ceil(10_000 / (4096 - OBJECT_FRAME_HEADER_BYTES)));
    expect(Buffer.from((await readWriteOnceObject(reader, AGG, 'small-payload', LIMIT))!).equals(bytes)).toBe(
      true,
    );
  });

  it('refuses malformed arguments', async () => {
    await expect(readWriteOnceObject(reader, AGG, 'a.b', LIMIT)).rejects.toThrow(/name/);
    await expect(readWriteOnceObject(reader, AGG, 'x', { maxBytes: -1 })).rejects.toThrow(/limits\.maxBytes/);
    await expect(readWriteOnceObject({} as NatsConnection, AGG, 'x', LIMIT)).rejects.toThrow(/nc/);
    await expect(writeOnceObjectWriter(writer, AGG).put('a b', new Uint8Array(1))).rejects.toThrow(/name/);
    expect(() => writeOnceObjectWriter(writer, AGG, { frameBytes: OBJECT_FRAME_BYTES + 1 })).toThrow(
      /frameBytes/,
    );
  });
});
