// FINDINGS of the structure-aware fuzzer (test/adversarial/fuzz-live.test.ts), not fixed yet. Each
// test is a focused reproduction that FAILS on the current code and states what should hold
// instead. They are skipped in the default suite; run them with
//
//   COHORT_FUZZ_FINDINGS=1 npx vitest run test/adversarial/fuzz-findings.test.ts
//
// and remove the skip (or the test, once its property is tested where the fix lands) when fixed.
import protobuf from 'protobufjs';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPair } from '../../crypto/signature/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import {
  type ControlBodies,
  FRAME_KIND,
  frame,
  openControl,
  PROTO_PATH,
  sealControl,
} from '../../src/protocol/index.ts';
import { type AgentService, startAgent } from '../../src/services/agent/index.ts';
import type { RoundSummary } from '../../src/services/coordinator/index.ts';
import type { MemberContext } from '../../src/services/index.ts';
import { Federation, waitFor } from '../helpers/federation.ts';

const FINDINGS = process.env['COHORT_FUZZ_FINDINGS'] === '1';
const ENVELOPE = protobuf.loadSync(PROTO_PATH).lookupType('cohort.v1.SignedEnvelope');

describe.skipIf(!FINDINGS)('fuzzer findings (each fails until fixed; COHORT_FUZZ_FINDINGS=1)', () => {
  // Fuzzer run: `aggregator-heartbeat`, envelope mutation "body: empty (41 → 0 bytes)", old
  // signature kept → the coordinator answered `INVALID_ARGUMENT` and counted it under that code.
  // protobufjs gives an absent `bytes` field of a decoded envelope as a plain empty array, and
  // `verify` refuses a non-Uint8Array argument as a caller's bug: a refusal of hostile input is
  // reported under a code meant for programming errors. Expected: a stable refusal code of input
  // (`BLOCK_MALFORMED`, or `BLOCK_BAD_SIGNATURE`).
  it('a control envelope without its body or signature field is refused as input, not INVALID_ARGUMENT', () => {
    const key = generateSigningKeyPair('falcon-512');
    const heartbeat: ControlBodies['heartbeat'] = {
      federation: 'f',
      member: 'site-1',
      role: 'site',
      sentUnixMs: 1,
      head: new Uint8Array(0),
      examples: 1,
      state: 'IDLE',
      height: 0,
    };
    const sealed = sealControl('heartbeat', heartbeat, 'site-1', key);
    for (const field of ['body', 'signature']) {
      const env = ENVELOPE.toObject(ENVELOPE.decode(sealed.subarray(12))) as Record<string, unknown>;
      delete env[field];
      const bytes = frame(FRAME_KIND.control, ENVELOPE.encode(ENVELOPE.fromObject(env)).finish());
      let code = 'opened';
      try {
        openControl(bytes, 'heartbeat', () => key, { signer: 'site-1' });
      } catch (err) {
        code = (err as { code?: string }).code ?? 'ERROR';
      }
      expect(code, `an envelope without ${field}`).toMatch(/^BLOCK_(MALFORMED|BAD_SIGNATURE)$/);
    }
  });

  // Fuzzer run: `vote` of site-5, "modelHash: other-round (32 → 32 bytes)", re-signed with
  // site-5's own key, sent before site-5's own vote → accepted; the round aborted with "votes name
  // different model hashes" and its decision struck no one (`judgeVotes` aborts on a YES that names
  // another commit hash, model hash, strategy state or evaluation totals than the first YES, and
  // `decide` strikes only NO voters, silent voters and culprits). So one site can abort every round
  // it votes in, for ever: it stays a voter, and the circuit breaker does not count it either.
  // Expected: the YES voter that disagrees with the others (or the round's voters, until the
  // culprit is narrowed down) gains a strike, so that honest rounds commit again.
  describe('a site whose YES votes name another model hash', () => {
    let f: Federation | undefined;
    let agent: AgentService | undefined;
    afterAll(async () => {
      await agent?.stop();
      await f?.stop();
    });

    it('is struck, and honest rounds commit again', async () => {
      const overrides: Partial<CohortConfigInput> = {
        round: { heartbeatMs: 200, missedHeartbeats: 5, deadlineMs: 6000, voteTimeoutMs: 6000 },
        learning: { model: 'logreg', trainLimit: 800, testLimit: 100, epochs: 1, batchSize: 20 },
        log: { level: 'error' },
      };
      f = await Federation.create('fuzzfind', { aggregators: 1, sites: 4, overrides });
      await f.startAggregator('agg-1');
      for (const site of ['site-1', 'site-2', 'site-3']) await f.startAgent(site);
      // site-4 runs its own agent, but every YES it sends names a model hash one bit off.
      const own = await f.member('site-4');
      agent = await startAgent(lyingVotes(own));
      const decided: RoundSummary[] = [];
      f.startCoordinator({
        rounds: 100_000, // until the test stops it
        switchWaitMs: 2000,
        onEvent: (e) => {
          if (e.type === 'decision') decided.push(e.summary);
        },
      });
      await waitFor('six decided rounds', () => decided.length >= 6, 120_000);
      const decisions = await f.decisions();
      const struck = decisions.some((d) => d.exclusions.some((x) => x.site === 'site-4'));
      const aborted = decided.filter((d) => /votes name different model hashes/.test(d.reason)).length;
      expect({ struck, aborted, commits: decided.filter((d) => d.commit).length }).toMatchObject({
        struck: true,
      });
      expect(
        decided.slice(-2).some((d) => d.commit),
        'a round commits after site-4 is struck',
      ).toBe(true);
    }, 180_000);
  });
});

/** `ctx` whose YES votes name another model hash (one bit flipped), re-signed with its own key. */
function lyingVotes(ctx: MemberContext): MemberContext {
  const transport = ctx.transport;
  const request = (subject: string, data: Uint8Array, ...rest: unknown[]) => {
    let out = data;
    if (subject === ctx.subjects.vote(ctx.member)) {
      const vote = openControl(data, 'vote', ctx.keys, { signer: ctx.member }).body;
      if (vote.yes && vote.modelHash.length > 0) {
        const modelHash = vote.modelHash.slice();
        modelHash[0]! ^= 1;
        out = sealControl('vote', { ...vote, modelHash }, ctx.member, ctx.signing);
      }
    }
    return (transport.request as (...a: unknown[]) => Promise<Uint8Array>).call(
      transport,
      subject,
      out,
      ...rest,
    );
  };
  const proxy = new Proxy(transport, {
    get: (target, prop) => {
      if (prop === 'request') return request;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const descriptors: PropertyDescriptorMap = Object.getOwnPropertyDescriptors(ctx);
  descriptors['transport'] = { value: proxy, enumerable: true };
  return Object.defineProperties({}, descriptors) as MemberContext;
}
