import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { bytesEqual } from '../../../crypto/digest/index.ts';
import { loadKemKeyPair, sealEnvelope, wipeKemKeyPair } from '../../../crypto/kem/index.ts';
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
import { CryptoError } from '../../errors/index.ts';
import { type ControlBodies, sealControl } from '../../protocol/index.ts';
import { memberKeyDir } from '../../registry/index.ts';
import {
  envelopeMaxBytes,
  epochDealObjectName,
  epochRoster,
  epochShareObjectName,
  PUBLIC_SHARE_CERT_MAX_BYTES,
} from '../../round/index.ts';
import { failpoint } from '../failpoint.ts';
import { loadEpochDataKeys, saveEpochDataKey } from '../site-threshold.ts';
import { aggregateStore } from '../store/index.ts';
import {
  assembleEpoch,
  dataKeyConfirmation,
  envelopeContents,
  holdersProblem,
  makeDeal,
  policyThreshold,
  sharePurpose,
  thresholdFiles,
} from '../threshold-dealing.ts';
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
 * - `collect`: it reads every roster site's stored public share certificate and the envelopes sealed
 *   to it (each by its dealer, for this roster: a share from every dealer when it holds, a data
 *   contribution from every holder), writes its key file of the generation
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
    core.counters.epochRequestsRefused++;
    log.warn({ reason }, 'epoch request refused');
    return reason;
  };
  if (!r.sites.some((s) => s.id === member)) return undefined;
  if (failpoint('agent.epoch-request') === 'skip') return undefined; // a site that never re-shares
  if (Date.now() > r.deadlineUnixMs) return refuse('its deadline passed');
  const lanes = ctx.ckks as ThresholdLaneContext;
  let roster: ThresholdRoster;
  try {
    roster = epochRoster(ctx.config.federation.id, r);
  } catch (err) {
    return refuse(`its roster: ${describe(err)}`);
  }
  // The coordinator asks every heartbeat until it has the answer: one acknowledged answer is
  // enough (per roster: a generation tried again with another roster is another request).
  const asked = `${r.generation}:${Buffer.from(epochSeed(roster)).toString('hex')}:${r.phase}`;
  if (core.epochAnswers.has(asked)) return undefined;
  if (!roster.paramsId.every((b, i) => b === lanes.tc.paramsId[i]))
    return refuse('it names other threshold parameters');
  // The coordinator picks the roster, its holders and t; none may weaken the federation: every
  // roster site is a configured site enrolled and unrevoked at the epoch's first round, the holders
  // are the configured ones (a committee of accomplices would read everything), and t is at least
  // the threshold of the whole enrolled membership (t = 1 would open a site's update to fewer
  // sites than the federation promises).
  const view = ctx.registryView;
  const enrolled = (id: string) =>
    ctx.members.sites.some((s) => s.id === id) &&
    view.role(id) === 'site' &&
    !view.isRevoked(id, r.fromRound);
  const stranger = roster.sites.find((s) => !enrolled(s.id));
  if (stranger !== undefined) return refuse(`${stranger.id} is not a configured, enrolled, unrevoked site`);
  const configuredHolders = ctx.config.crypto.threshold.holders;
  const wrongHolders = holdersProblem(roster, configuredHolders);
  if (wrongHolders !== undefined) return refuse(wrongHolders);
  const minimum = policyThreshold(ctx.config, enrolled);
  if (roster.threshold < minimum) {
    return refuse(`its threshold ${roster.threshold} is below the federation's ${minimum}`);
  }
  const pending = join(
    ctx.config.paths.dataDir,
    member,
    'threshold',
    `deal-${roster.generation}-${Buffer.from(epochSeed(roster)).toString('hex').slice(0, 32)}`,
  );
  let answer: Uint8Array;
  try {
    answer =
      r.phase === 'deal' ? deal(core, roster, pending) : await collect(core, roster, pending, r.fromRound);
  } catch (err) {
    const dealer = dealerAtFault(err);
    if (dealer === undefined) return refuse(describe(err));
    // What the dealer signed does not open: say so, naming it, rather than only stay silent and
    // be left out in its place.
    core.counters.complaintsSent++;
    log.warn({ err, dealer }, 'complaining about a dealer');
    answer = sealControl(
      'epoch-complaint',
      {
        federation: roster.federation,
        generation: roster.generation,
        site: member,
        dealer,
        reason: describe(err).slice(0, 512),
        fromRound: r.fromRound,
      },
      member,
      ctx.signing,
    );
  }
  try {
    await ctx.transport.request(ctx.subjects.epoch(member), answer);
    core.epochAnswers.add(asked);
    log.info('epoch request answered');
    return undefined;
  } catch (err) {
    return refuse(describe(err));
  }
}

/** The dealer an `assembleEpoch` refusal blames (`DEAL_INVALID`), if any. */
function dealerAtFault(err: unknown): string | undefined {
  if (!(err instanceof CryptoError) || err.code !== 'DEAL_INVALID') return undefined;
  const dealer = err.details?.['dealer'];
  return typeof dealer === 'string' ? dealer : undefined;
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
  // A dealer that seals garbage, signed, to the first other recipient (the complaint tests).
  const victim =
    failpoint('agent.epoch-deal-garbage') === 'skip'
      ? made.envelopes.findIndex((e) => e.recipient !== member)
      : -1;
  if (victim >= 0) {
    const recipient = made.envelopes[victim]!.recipient;
    (made.envelopes as { recipient: string; envelope: Uint8Array }[])[victim] = {
      recipient,
      envelope: sealEnvelope(
        { id: member, key: ctx.signing },
        view.currentKemKey(recipient)!,
        new Uint8Array(64),
        {
          federation: roster.federation,
          recipient,
          purpose: sharePurpose(roster, member),
        },
      ),
    };
  }

  try {
    const body: ControlBodies['epoch-deal'] = {
      federation: roster.federation,
      generation: roster.generation,
      site: member,
      publicShare: made.publicShare,
      envelopes: made.envelopes.map((e) => ({ recipient: e.recipient, envelope: e.envelope })),
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
  const ready = (epochId: Uint8Array, dataKey: Uint8Array) =>
    sealControl(
      'epoch-ready',
      {
        federation: roster.federation,
        generation: roster.generation,
        site: member,
        epochId,
        fromRound,
        keyConfirmation: dataKeyConfirmation(dataKey, epochId),
      },
      member,
      ctx.signing,
    );
  if (existsSync(keyFile)) {
    const held = loadThresholdKey(tc, keyFile, roster.federation);
    // A key file of this generation made for another roster: an attempt the coordinator tried
    // again after a restart, never logged (a logged generation is never asked again), so never
    // used. It is erased and this roster's collected instead.
    if (!bytesEqual(epochSeed(held.roster), epochSeed(roster))) {
      const logged = [core.thresholdGenesis, ...core.follower.history.thresholdEpochs].some(
        (e) => e !== null && e !== undefined && bytesEqual(e.epochId, held.epochId),
      );
      if (logged) {
        wipeThresholdKey(held);
        throw new Error(
          `${keyFile} holds a logged epoch of generation ${roster.generation}, not this roster`,
        );
      }
      wipeThresholdKey(held);
      writeKeyFile(keyFile, new Uint8Array(statSync(keyFile).size), true);
      rmSync(keyFile);
    } else {
      try {
        const id = Buffer.from(held.epochId).toString('hex');
        const dataKey = core.epochDataKeys.get(id) ?? loadEpochDataKeys(ctx.keysDir, member).get(id);
        if (dataKey === undefined) throw new Error(`no data key of epoch ${id} beside ${keyFile}`);
        return ready(held.epochId, dataKey);
      } finally {
        wipeThresholdKey(held);
      }
    }
  }
  const store = aggregateStore(roster.federation);
  // Every site's certificate (under a kilobyte: the epoch id needs each digest) and only the
  // envelopes sealed to this site: linear in the roster, whatever the number of holders.
  const certs = new Map<string, Uint8Array>();
  const envelopes = new Map<string, Uint8Array>();
  for (const s of roster.sites) {
    const name = epochDealObjectName(roster, s.id);
    certs.set(s.id, await fetchObject(core, store, name, PUBLIC_SHARE_CERT_MAX_BYTES));
    const c = envelopeContents(roster, s.id, member);
    if (!c.share && !c.contribution) continue;
    const shareName = epochShareObjectName(roster, s.id, member);
    envelopes.set(s.id, await fetchObject(core, store, shareName, envelopeMaxBytes(tc.polyBytes)));
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
      publicShareOf: (dealer) => ({
        bytes: certs.get(dealer)!,
        name: `object ${epochDealObjectName(roster, dealer)}`,
      }),
      envelopeOf: (dealer) => ({
        bytes: envelopes.get(dealer)!,
        name: `object ${epochShareObjectName(roster, dealer, member)}`,
      }),
    });
    try {
      // The epoch's data key first: a key file without it could not open the epoch's shares.
      saveEpochDataKey(ctx.keysDir, member, material.epochId, dataKey);
      core.epochDataKeys.set(Buffer.from(material.epochId).toString('hex'), dataKey.slice());
      saveThresholdKey(tc, keyFile, material);
      // The key file holds the secret now: the pending copy goes.
      writeKeyFile(secretPath, new Uint8Array(tc.polyBytes), true);
      rmSync(pending, { recursive: true, force: true });
      return ready(material.epochId, dataKey);
    } finally {
      wipeThresholdKey(material);
      dataKey.fill(0);
    }
  } finally {
    if (secret !== undefined) wipe(secret);
    if (kem !== undefined) wipeKemKeyPair(kem);
  }
}
