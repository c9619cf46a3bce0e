import { createHash, randomBytes } from 'node:crypto';
import { type JetStreamClient, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type ObjectStore, Objm } from '@nats-io/obj';
import { connect, type NatsConnection, nuid, PermissionViolationError } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readObject, STORE_ERROR_CODES, StoreError } from '../../../src/services/store/index.ts';
import { objectStreamName, readOnlyStreamSubjects } from '../../../src/transport/index.ts';
import { renderAuthorization } from '../../../src/transport/permissions.ts';
import { rejection } from '../../helpers/error-code.ts';
import { type NatsServerHandle, startNatsServer } from '../../helpers/nats-server.ts';
import { nkeyUser } from '../../helpers/nkey-user.ts';

const storeError = (promise: Promise<unknown>) => rejection(promise, StoreError);

const BUCKET = 'reads';
const STREAM = objectStreamName(BUCKET);
const CHUNK = 1024;
const READER_INBOX = '_INBOX.reader';
const ADMIN = nkeyUser('admin', { allow: ['>'] }, { allow: ['>'] });
const READER = nkeyUser(
  'reader',
  { allow: readOnlyStreamSubjects(STREAM) },
  { allow: [`${READER_INBOX}.>`] },
);
const LIMIT = { maxBytes: 1 << 20, timeoutMs: 2000 };

const b64urlPadded = (s: string) =>
  Buffer.from(s, 'latin1').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
const digestOf = (data: Uint8Array) =>
  `SHA-256=${createHash('sha256').update(data).digest('base64').replace(/\+/g, '-').replace(/\//g, '_')}`;

/** Whether `err` or one of its causes is the server's permission violation. */
function isPermissionViolation(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (e instanceof PermissionViolationError || /permissions violation/i.test(e.message)) return true;
  }
  return false;
}

describe('readObject', () => {
  let server: NatsServerHandle;
  let admin: NatsConnection;
  let reader: NatsConnection;
  let js: JetStreamClient;
  let os: ObjectStore;

  const put = (name: string, data: Uint8Array, maxChunk = CHUNK) =>
    os.putBlob({ name, options: { max_chunk_size: maxChunk } }, data);

  /** Writes an object by hand: `chunks` as given, meta = the honest meta with `meta` merged over it. */
  async function craft(
    name: string,
    chunks: Uint8Array[],
    meta: Record<string, unknown> = {},
  ): Promise<void> {
    const id = nuid.next();
    for (const c of chunks) await js.publish(`$O.${BUCKET}.C.${id}`, c);
    const all = Buffer.concat(chunks);
    const honest = {
      name,
      bucket: BUCKET,
      nuid: id,
      size: all.length,
      chunks: chunks.length,
      digest: digestOf(all),
      deleted: false,
      mtime: new Date().toISOString(),
      options: { max_chunk_size: CHUNK },
    };
    await js.publish(`$O.${BUCKET}.M.${b64urlPadded(name)}`, JSON.stringify({ ...honest, ...meta }));
  }

  beforeAll(async () => {
    server = await startNatsServer({
      jetstream: true,
      users: [ADMIN.user, READER.user],
    });
    // The helper renders users with renderAuthorization; check it renders the reader as intended.
    expect(renderAuthorization([READER.user])).toContain('"$JS.API.STREAM.MSG.GET.OBJ_reads"');
    admin = await connect({ servers: server.url, authenticator: ADMIN.authenticator });
    reader = await connect({
      servers: server.url,
      authenticator: READER.authenticator,
      inboxPrefix: READER_INBOX,
    });
    js = jetstream(admin);
    os = await new Objm(admin).create(BUCKET);
  });

  afterAll(async () => {
    await reader?.close();
    await admin?.close();
    await server?.stop();
  });

  it('names the stream and the read-only subjects', () => {
    expect(STREAM).toBe('OBJ_reads');
    expect(readOnlyStreamSubjects('OBJ_x')).toEqual([
      '$JS.API.STREAM.INFO.OBJ_x',
      '$JS.API.STREAM.MSG.GET.OBJ_x',
    ]);
    expect(() => readOnlyStreamSubjects('OBJ.>')).toThrow(/stream/);
    expect(() => objectStreamName('a.b')).toThrow(/bucket/);
    expect(STORE_ERROR_CODES).toContain('OBJECT_CORRUPT');
  });

  it('reads objects of 0 bytes, one chunk and several chunks with read-only rights', async () => {
    const cases: [string, number][] = [
      ['empty', 0],
      ['one-byte', 1],
      ['one-chunk', 700],
      ['exact-chunk', CHUNK],
      ['four-chunks', 4 * CHUNK],
      ['many-chunks', 10 * CHUNK + 37],
    ];
    for (const [name, size] of cases) {
      const data = randomBytes(size);
      const info = await put(name, data);
      expect(info.chunks).toBe(Math.ceil(size / CHUNK));
      const got = await readObject(reader, BUCKET, name, LIMIT);
      expect(got, name).not.toBeNull();
      expect(Buffer.from(got!).equals(data), name).toBe(true);
    }
  });

  it('reads names that need base64 padding and non-ASCII Latin-1 names', async () => {
    for (const name of ['a', 'ab', 'abc', 'snapshots/round 7.bin', 'modèle-é']) {
      const data = randomBytes(1500);
      await put(name, data);
      expect(Buffer.from((await readObject(reader, BUCKET, name, LIMIT))!).equals(data), name).toBe(true);
    }
  });

  it('reads several objects whose chunks are interleaved in the stream, and the latest version', async () => {
    const objects = ['agg-1', 'agg-2', 'agg-3'].map((name) => ({ name, data: randomBytes(6 * CHUNK + 11) }));
    await Promise.all(objects.map((o) => put(o.name, o.data)));
    // Hand-written interleaving too, so the test does not depend on how concurrent puts schedule.
    const x = randomBytes(3 * CHUNK);
    const y = randomBytes(2 * CHUNK + 5);
    const idX = nuid.next();
    const idY = nuid.next();
    const xs = [0, 1, 2].map((i) => x.subarray(i * CHUNK, (i + 1) * CHUNK));
    const ys = [0, 1, 2].map((i) => y.subarray(i * CHUNK, Math.min(y.length, (i + 1) * CHUNK)));
    for (let i = 0; i < 3; i++) {
      await js.publish(`$O.${BUCKET}.C.${idX}`, xs[i]!);
      await js.publish(`$O.${BUCKET}.C.${idY}`, ys[i]!);
    }
    for (const [name, id, data] of [
      ['inter-x', idX, x],
      ['inter-y', idY, y],
    ] as const) {
      await js.publish(
        `$O.${BUCKET}.M.${b64urlPadded(name)}`,
        JSON.stringify({
          name,
          bucket: BUCKET,
          nuid: id,
          size: data.length,
          chunks: Math.ceil(data.length / CHUNK),
          digest: digestOf(data),
          options: { max_chunk_size: CHUNK },
        }),
      );
    }
    objects.push({ name: 'inter-x', data: x }, { name: 'inter-y', data: y });
    for (const o of objects) {
      expect(Buffer.from((await readObject(reader, BUCKET, o.name, LIMIT))!).equals(o.data), o.name).toBe(
        true,
      );
    }
    const v2 = randomBytes(2 * CHUNK + 1);
    await put('agg-2', v2);
    expect(Buffer.from((await readObject(reader, BUCKET, 'agg-2', LIMIT))!).equals(v2)).toBe(true);
  });

  it('returns null for a missing object and for a deleted one', async () => {
    expect(await readObject(reader, BUCKET, 'never-written', LIMIT)).toBeNull();
    await put('to-delete', randomBytes(3000));
    expect(await readObject(reader, BUCKET, 'to-delete', LIMIT)).not.toBeNull();
    await os.delete('to-delete');
    expect(await readObject(reader, BUCKET, 'to-delete', LIMIT)).toBeNull();
  });

  it('refuses an object above maxBytes before reading any chunk', async () => {
    const data = randomBytes(3 * CHUNK);
    await put('big', data);
    expect(await readObject(reader, BUCKET, 'big', { maxBytes: data.length })).not.toBeNull();
    const err = await storeError(readObject(reader, BUCKET, 'big', { maxBytes: data.length - 1 }));
    expect(err.code).toBe('OBJECT_TOO_LARGE');
    expect(err.message).toMatch(/"big".*reads.*3072 bytes.*3071/);
    // A meta that declares 5000 bytes with no chunk at all: only a reader that checks the size
    // first says TOO_LARGE (reading chunks would find them missing).
    await craft('huge-without-chunks', [], {
      size: 5000,
      chunks: Math.ceil(5000 / CHUNK),
      digest: digestOf(new Uint8Array(5000)),
    });
    expect(
      (await storeError(readObject(reader, BUCKET, 'huge-without-chunks', { maxBytes: 4999 }))).code,
    ).toBe('OBJECT_TOO_LARGE');
    expect(
      (await storeError(readObject(reader, BUCKET, 'huge-without-chunks', { maxBytes: 5000 }))).code,
    ).toBe('OBJECT_CORRUPT');
  });

  it('refuses corrupt objects with OBJECT_CORRUPT naming what was wrong', async () => {
    const c1 = randomBytes(CHUNK);
    const c2 = randomBytes(100);
    const honest = Buffer.concat([c1, c2]);
    await craft('honest', [c1, c2]);
    expect(Buffer.from((await readObject(reader, BUCKET, 'honest', LIMIT))!).equals(honest)).toBe(true);

    const flipped = Buffer.from(c2);
    flipped[7]! ^= 1;
    const cases: [string, Uint8Array[], Record<string, unknown>, RegExp][] = [
      // Chunk bytes changed after the digest was taken.
      ['bad-chunk', [c1, flipped], { digest: digestOf(honest) }, /SHA-256 of the chunks/],
      [
        'missing-chunk',
        [c1],
        { size: honest.length, chunks: 2, digest: digestOf(honest) },
        /chunk 2 of 2 is missing/,
      ],
      [
        'extra-chunk',
        [c1, c2, c2],
        { size: honest.length, chunks: 2, digest: digestOf(honest) },
        /beyond the 2/,
      ],
      ['oversized-chunk', [Buffer.concat([c1, c2])], { chunks: 2 }, /more than max_chunk_size/],
      ['past-size', [c1, c1], { size: CHUNK + 100, chunks: 2 }, /past its declared 1124 bytes/],
      [
        'short',
        [c1, c2.subarray(0, 50)],
        { size: honest.length, digest: digestOf(honest) },
        /hold 1074 bytes/,
      ],
      ['chunk-count', [c1, c2], { chunks: 3 }, /declares 3 chunks for 1124 bytes/],
      ['no-chunk-size', [c1, c2], { options: {} }, /max_chunk_size/],
      ['bad-size', [c1, c2], { size: -1 }, /size -1/],
      ['bad-nuid', [c1, c2], { nuid: '>' }, /nuid/],
      ['bad-digest', [c1, c2], { digest: 'MD5=abc' }, /digest "MD5=abc"/],
      ['wrong-name', [c1, c2], { name: 'someone-else' }, /names object "someone-else"/],
      ['wrong-bucket', [c1, c2], { bucket: 'other' }, /names bucket "other"/],
    ];
    for (const [name, chunks, meta, message] of cases) {
      await craft(name, chunks, meta);
      const err = await storeError(readObject(reader, BUCKET, name, LIMIT));
      expect(err.code, name).toBe('OBJECT_CORRUPT');
      expect(err.message, name).toMatch(message);
      expect(err.message, name).toContain(`"${name}" of bucket ${BUCKET}`);
      expect(err.details, name).toMatchObject({ bucket: BUCKET, object: name });
    }

    await js.publish(`$O.${BUCKET}.M.${b64urlPadded('not-json')}`, '{"name": "not-json", ');
    const notJson = await storeError(readObject(reader, BUCKET, 'not-json', LIMIT));
    expect(notJson.code).toBe('OBJECT_CORRUPT');
    expect(notJson.message).toMatch(/not JSON/);

    await js.publish(
      `$O.${BUCKET}.M.${b64urlPadded('a-link')}`,
      JSON.stringify({
        name: 'a-link',
        bucket: BUCKET,
        options: { link: { bucket: 'elsewhere', name: 'x' } },
      }),
    );
    expect((await storeError(readObject(reader, BUCKET, 'a-link', LIMIT))).code).toBe('OBJECT_UNSUPPORTED');
  });

  it('accepts the hex and unpadded digest forms other writers use', async () => {
    const c = randomBytes(600);
    const sha = createHash('sha256').update(c).digest();
    await craft('hex-digest', [c], { digest: `SHA-256=${sha.toString('hex')}` });
    await craft('unpadded-digest', [c], { digest: `SHA-256=${sha.toString('base64url')}` });
    for (const name of ['hex-digest', 'unpadded-digest']) {
      expect(Buffer.from((await readObject(reader, BUCKET, name, LIMIT))!).equals(c), name).toBe(true);
    }
  });

  it('lets the read-only user read but neither put, delete, purge nor create a consumer', async () => {
    const data = randomBytes(2 * CHUNK + 3);
    await put('guarded', data);
    expect(Buffer.from((await readObject(reader, BUCKET, 'guarded', LIMIT))!).equals(data)).toBe(true);

    const ros = await new Objm(jetstream(reader, { checkAPI: false, timeout: 2000 })).open(BUCKET, false);
    const putErr = await ros.putBlob({ name: 'guarded' }, randomBytes(10)).catch((e: unknown) => e);
    expect(isPermissionViolation(putErr), String(putErr)).toBe(true);
    const delErr = await ros.delete('guarded').catch((e: unknown) => e);
    expect(isPermissionViolation(delErr), String(delErr)).toBe(true);
    const getErr = await ros.get('guarded').catch((e: unknown) => e);
    expect(isPermissionViolation(getErr), String(getErr)).toBe(true);
    const jsm = await jetstreamManager(reader, { checkAPI: false, timeout: 2000 });
    const purgeErr = await jsm.streams.purge(STREAM).catch((e: unknown) => e);
    expect(isPermissionViolation(purgeErr), String(purgeErr)).toBe(true);
    const publishErr = await jetstream(reader, { timeout: 2000 })
      .publish(`$O.${BUCKET}.M.${b64urlPadded('guarded')}`, '{}')
      .catch((e: unknown) => e);
    expect(isPermissionViolation(publishErr), String(publishErr)).toBe(true);

    // Nothing changed, and the reader's connection still works.
    expect(Buffer.from((await readObject(reader, BUCKET, 'guarded', LIMIT))!).equals(data)).toBe(true);
    expect(Buffer.from((await readObject(admin, BUCKET, 'guarded', LIMIT))!).equals(data)).toBe(true);
  });

  it('reports another bucket the reader may not read as STORE_UNAVAILABLE with the cause chained', async () => {
    await new Objm(admin).create('private').then((p) => p.putBlob({ name: 'secret' }, randomBytes(10)));
    const err = await storeError(readObject(reader, 'private', 'secret', LIMIT));
    expect(err.code).toBe('STORE_UNAVAILABLE');
    expect(err.message).toMatch(/"secret" of bucket private/);
    expect(err.cause).toBeDefined();
  });

  it('reports a bucket that does not exist as BUCKET_NOT_FOUND', async () => {
    const err = await storeError(readObject(admin, 'no-such-bucket', 'x', LIMIT));
    expect(err.code).toBe('BUCKET_NOT_FOUND');
    expect(err.message).toMatch(/OBJ_no-such-bucket/);
  });

  it('refuses bad arguments naming them', async () => {
    await expect(readObject(reader, 'a.b', 'x', LIMIT)).rejects.toThrow(/bucket/);
    await expect(readObject(reader, BUCKET, '', LIMIT)).rejects.toThrow(/name/);
    await expect(readObject(reader, BUCKET, 'snow☃', LIMIT)).rejects.toThrow(/name/);
    await expect(readObject(reader, BUCKET, 'x', { maxBytes: -1 })).rejects.toThrow(/limits\.maxBytes/);
    await expect(readObject(reader, BUCKET, 'x', { maxBytes: 1, timeoutMs: 0 })).rejects.toThrow(
      /limits\.timeoutMs/,
    );
    await expect(readObject({} as NatsConnection, BUCKET, 'x', LIMIT)).rejects.toThrow(/nc/);
  });
});
