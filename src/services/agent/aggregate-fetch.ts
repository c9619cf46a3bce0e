import { bytesEqual, sha256 } from '../../../crypto/digest/index.ts';
import { decodeAggregateObject } from '../../round/index.ts';
import { aggregateStore, readWriteOnceObject, type WriteOnceStore } from '../store/index.ts';
import type { AgentCore } from './agent-core.ts';
import { AgentError } from './agent-error.ts';
import { retryUnavailable } from './read-retry.ts';
import { VoteNo } from './voter-error.ts';

/**
 * Reads object `name` of the write-once stream `store` (aggregates or snapshots) with the site's
 * read-only JetStream access, at most `maxBytes` (checked before any data frame is read). A read
 * the store cannot answer now (`STORE_UNAVAILABLE`: a timeout, a stalled server) is tried again up
 * to `nats.maxRetry` times with backoff, as a request is. `REPLAY_UNAVAILABLE` when it still
 * cannot be read, or is not stored.
 */
export async function fetchObject(
  core: AgentCore,
  store: WriteOnceStore,
  name: string,
  maxBytes: number,
): Promise<Uint8Array> {
  const { timeoutMs } = core.ctx.config.nats;
  let bytes: Uint8Array | null;
  try {
    // A server that stalls for a moment (a loaded host) costs a retry, not a NO vote; an object
    // refused as corrupt or too large is final.
    bytes = await retryUnavailable(core, () =>
      readWriteOnceObject(core.ctx.transport.connection, store, name, { maxBytes, timeoutMs }),
    );
  } catch (cause) {
    throw new AgentError(
      'REPLAY_UNAVAILABLE',
      `cannot read ${store.stream}/${name}: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  if (bytes === null) throw new AgentError('REPLAY_UNAVAILABLE', `${store.stream}/${name} is not stored`);
  return bytes;
}

/**
 * The ciphertexts of a round's stored aggregate (object `name` of the aggregates stream): read,
 * hashed against `digest` (the one PREPARE or the log names) and split. A digest mismatch is a
 * {@link VoteNo} on PREPARE (`onMismatch: 'vote-no'`) and `REPLAY_MISMATCH` on catch-up.
 */
export async function fetchAggregate(
  core: AgentCore,
  name: string,
  totalParams: number,
  digest: Uint8Array,
  onMismatch: 'vote-no' | 'REPLAY_MISMATCH',
): Promise<Uint8Array[]> {
  const bytes = await fetchObject(
    core,
    aggregateStore(core.ctx.config.federation.id),
    name,
    aggregateLimit(core, totalParams),
  );
  if (!bytesEqual(sha256(bytes), digest)) {
    const problem = `aggregate ${name} does not hash to the digest ${onMismatch === 'vote-no' ? 'PREPARE' : 'the log'} names`;
    throw onMismatch === 'vote-no' ? new VoteNo(problem) : new AgentError('REPLAY_MISMATCH', problem);
  }
  return decodeAggregateObject(bytes);
}

/** Largest stored aggregate of `params` parameters: its full ciphertexts and their length prefixes. */
function aggregateLimit(core: AgentCore, params: number): number {
  const ckks = core.ctx.config.crypto.ckks;
  const perBlock = core.ctx.ckks.slots; // at least one parameter per slot
  const blocks = Math.ceil(params / perBlock) + 1;
  return 65_536 + blocks * (2 * ckks.polyModulusDegree * 8 * ckks.coeffModulus.length + 1024);
}
