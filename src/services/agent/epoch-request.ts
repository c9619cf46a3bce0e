import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadKemKeyPair, wipeKemKeyPair } from '../../../crypto/kem/index.ts';
import { readKeyFile, writeKeyFile } from '../../../crypto/signature/key-file-io.ts';
import {
  epochSeed,
  loadThresholdKey,
  type RnsPoly,
  saveThresholdKey,
  type ThresholdLaneContext,
  type ThresholdRoster,
  wipe,
  wipeThresholdKey,
} from '../../../crypto/threshold/index.ts';
import { type ControlBodies, openControl, sealControl } from '../../protocol/index.ts';
import { memberKeyDir } from '../../registry/index.ts';
import { dealMaxBytes, epochDealObjectName, epochRoster } from '../../round/index.ts';
import { failpoint } from '../failpoint.ts';
import { saveEpochDataKey } from '../site-threshold.ts';
import { aggregateStore } from '../store/index.ts';
import { assembleEpoch, makeDeal, policyThreshold, thresholdFiles } from '../threshold-dealing.ts';
import type { AgentCore } from './agent-core.ts';
import { fetchObject } from './aggregate-fetch.ts';
import { describe } from './voter.ts';

/**
 * Threshold keys: an `epoch-request` from the coordinator (already verified as its): a re-sharing
 * of the key epoch (docs/threshold-ckks.md, "Re-sharing"). A site of the new roster answers on
 * `cohort.F.epoch.<site>`:
 *
 * - `deal`: it draws a fresh secret, keeps it owner-only in its store
 *   (`<dataDir>/<site>/threshold/deal-<seed>/`, with the deal's bytes, so that a request asked
 *   again is answered with the same deal) and sends its deal.
 * - `collect`: it reads every roster site's stored deal, opens the shares dealt to it (each sealed
 *   by its dealer, for this roster), writes its key file of the generation
 *   (`<site>.g<generation>.threshold`, 0600), erases the pending secret and sends its signed ready
 *   for the epoch id. Asked again, it sends the same ready.
 *
 * The keys are used only once the log holds the epoch (a RoundOpen names it). Returns what it
 * refused, or undefined.
 */
export async function onEpochRequest(
  core: AgentCore,
  r: ControlBodies['epoch-request'],
): Promise<string | undefined> {
  const { ctx, member } = core;
  const log = ctx.log.child({ generation: r.generation, phase: r.phase });
  const refuse = (reason: string) => {
    log.warn({ reason }, 'epoch request refused');
    return reason;
  };
  if (!r.sites.some((s) => s.id === member)) return undefined;
  if (failpoint('agent.epoch-request') === 'skip') return undefined; // a site that never re-shares
  if (Date.now() > r.deadlineUnixMs) return refuse('its deadline passed');
  // The coordinator asks every heartbeat until it has the answer: one acknowledged answer is enough.
  const asked = `${r.generation}:${r.phase}`;
  if (core.epochAnswers.has(asked)) return undefined;
  const lanes = ctx.ckks as ThresholdLaneContext;
  let roster: ThresholdRoster;
  try {
    roster = epochRoster(ctx.config.federation.id, r);
  } catch (err) {
    return refuse(`its roster: ${describe(err)}`);
  }
  if (!roster.paramsId.every((b, i) => b === lanes.tc.paramsId[i]))
    return refuse('it names other threshold parameters');
  // The coordinator picks the roster and t; neither may weaken the federation: every roster site
  // is a configured site enrolled and unrevoked at the epoch's first round, and t is at least the
  // threshold of the whole enrolled membership (a roster of accomplices, or t = 1, would open a
  // site's update to fewer sites than the federation promises).
  const view = ctx.registryView;
  const enrolled = (id: string) =>
    ctx.members.sites.some((s) => s.id === id) &&
    view.role(id) === 'site' &&
    !view.isRevoked(id, r.fromRound);
  const stranger = roster.sites.find((s) => !enrolled(s.id));
  if (stranger !== undefined) return refuse(`${stranger.id} is not a configured, enrolled, unrevoked site`);
  const minimum = policyThreshold({
    sites: ctx.members.sites.map((s) => s.id),
    enrolled,
    ...(ctx.config.crypto.threshold.sites === undefined
      ? {}
      : { threshold: ctx.config.crypto.threshold.sites }),
    minContributors: ctx.config.round.minContributors,
  });
  if (roster.threshold < minimum) {
    return refuse(`its threshold ${roster.threshold} is below the federation's ${minimum}`);
  }
  const pending = join(
    ctx.config.paths.dataDir,
    member,
    'threshold',
    `deal-${roster.generation}-${Buffer.from(epochSeed(roster)).toString('hex').slice(0, 32)}`,
  );
  try {
    const answer =
      r.phase === 'deal' ? deal(core, roster, pending) : await collect(core, roster, pending, r.fromRound);
    await ctx.transport.request(ctx.subjects.epoch(member), answer);
    core.epochAnswers.add(asked);
    log.info('epoch request answered');
    return undefined;
  } catch (err) {
    return refuse(describe(err));
  }
}

/** The site's deal for `roster`, drawn once and kept with its secret in `pending`. */
function deal(core: AgentCore, roster: ThresholdRoster, pending: string): Uint8Array {
  const { ctx, member } = core;
  const dealFile = join(pending, 'deal');
  if (existsSync(dealFile)) return readFileSync(dealFile);
  const view = ctx.registryView;
  const made = makeDeal({
    site: member,
    roster,
    ctx: (ctx.ckks as ThresholdLaneContext).tc,
    signingKey: ctx.signing,
    kemKeys: (id) => view.currentKemKey(id),
  });
  try {
    const body: ControlBodies['epoch-deal'] = {
      federation: roster.federation,
      generation: roster.generation,
      site: member,
      publicShare: made.publicShare,
      envelopes: made.envelopes.map((e) => ({ recipient: e.recipient, envelope: e.envelope })),
      dataCommitment: made.dataCommitment,
    };
    const bytes = sealControl('epoch-deal', body, member, ctx.signing);
    mkdirSync(pending, { recursive: true, mode: 0o700 });
    // The secret first: a deal sent without its secret kept would leave shares no one can match.
    writeKeyFile(
      join(pending, 'secret'),
      new Uint8Array(made.secret.buffer, made.secret.byteOffset, made.secret.byteLength),
      true,
    );
    writeKeyFile(dealFile, bytes, false);
    return bytes;
  } finally {
    wipe(made.secret);
  }
}

/** The site's ready for `roster`: its key file assembled from the stored deals (once). */
async function collect(
  core: AgentCore,
  roster: ThresholdRoster,
  pending: string,
  fromRound: number,
): Promise<Uint8Array> {
  const { ctx, member } = core;
  const tc = (ctx.ckks as ThresholdLaneContext).tc;
  const keyFile = join(memberKeyDir(ctx.keysDir, member), thresholdFiles.key(member, roster.generation));
  const ready = (epochId: Uint8Array) =>
    sealControl(
      'epoch-ready',
      { federation: roster.federation, generation: roster.generation, site: member, epochId, fromRound },
      member,
      ctx.signing,
    );
  if (existsSync(keyFile)) {
    const held = loadThresholdKey(tc, keyFile, roster.federation);
    try {
      return ready(held.epochId);
    } finally {
      wipeThresholdKey(held);
    }
  }
  const store = aggregateStore(roster.federation);
  // One sealed share per roster site, a public share and signatures: what the coordinator caps a deal at.
  const maxBytes = dealMaxBytes(tc.polyBytes, roster.sites.length);
  const deals = new Map<string, ControlBodies['epoch-deal']>();
  for (const s of roster.sites) {
    const bytes = await fetchObject(core, store, epochDealObjectName(roster.generation, s.id), maxBytes);
    const body = openControl(bytes, 'epoch-deal', ctx.keys, { signer: s.id }).body;
    if (
      body.federation !== roster.federation ||
      body.generation !== roster.generation ||
      body.site !== s.id
    ) {
      throw new Error(`the stored deal of ${s.id} is for another re-sharing`);
    }
    deals.set(s.id, body);
  }
  const secretPath = join(pending, 'secret');
  let secret: RnsPoly | undefined;
  let kem: ReturnType<typeof loadKemKeyPair> | undefined;
  try {
    const { material, dataKey } = assembleEpoch({
      site: member,
      roster,
      ctx: tc,
      registry: ctx.registryView,
      secret: () => {
        const bytes = readKeyFile(secretPath, true);
        secret = new BigUint64Array(bytes.slice().buffer);
        bytes.fill(0);
        return secret;
      },
      kemSecretKey: () => {
        kem = loadKemKeyPair(join(memberKeyDir(ctx.keysDir, member), `${member}.kem`));
        return kem.secretKey;
      },
      publicShareOf: (dealer) => ({ bytes: deals.get(dealer)!.publicShare, name: `the deal of ${dealer}` }),
      dataCommitmentOf: (dealer) => deals.get(dealer)!.dataCommitment,
      envelopeOf: (dealer) => {
        const e = deals.get(dealer)!.envelopes.find((x) => x.recipient === member);
        if (e === undefined) throw new Error(`the deal of ${dealer} seals no share to ${member}`);
        return { bytes: e.envelope, name: `the deal of ${dealer}` };
      },
    });
    try {
      // The epoch's data key first: a key file without it could not open the epoch's shares.
      saveEpochDataKey(ctx.keysDir, member, material.epochId, dataKey);
      core.epochDataKeys.set(Buffer.from(material.epochId).toString('hex'), dataKey.slice());
      saveThresholdKey(tc, keyFile, material);
      // The key file holds the secret now: the pending copy goes.
      writeKeyFile(secretPath, new Uint8Array(tc.polyBytes), true);
      rmSync(pending, { recursive: true, force: true });
      return ready(material.epochId);
    } finally {
      wipeThresholdKey(material);
      dataKey.fill(0);
    }
  } finally {
    if (secret !== undefined) wipe(secret);
    if (kem !== undefined) wipeKemKeyPair(kem);
  }
}
