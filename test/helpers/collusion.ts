// One site colluding with every aggregator and the coordinator against another site's update,
// under threshold keys: the aggregators' wire gives the victim's ciphertexts, the coordinator's
// store the round's share bundles, the colluding site its own key file and the data key that opens
// them. Shared by the threshold round suite and the hostile-site suite.
import { join } from 'node:path';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  combineShares,
  commonRandomPoly,
  loadThresholdKey,
  mulAddInto,
  type RnsPoly,
  type ThresholdLaneContext,
  unpackWords,
  wipeThresholdKey,
  zeroPoly,
} from '../../crypto/threshold/index.ts';
import {
  decodeBlockBody,
  FRAME_KIND,
  openControl,
  payloadPositionLabel,
  unframe,
} from '../../src/protocol/index.ts';
import {
  decodeAggregateObject,
  decodeSharesObject,
  openShareBundle,
  shareContextOf,
  sharesObjectName,
} from '../../src/round/index.ts';
import { loadSiteDataKey } from '../../src/services/index.ts';
import { aggregateStore, readWriteOnceObject } from '../../src/services/store/index.ts';
import type { Federation } from './federation.ts';

/**
 * Share of decoded slots that hold a non-negative integer below 2^42 (to within 0.05): every slot
 * of a correct decryption (packed integer lanes plus a little flooding), next to none of a wrong one.
 */
export function laneLike(slots: Float64Array): number {
  let n = 0;
  for (const v of slots) if (v > -0.05 && v < 2 ** 42 && Math.abs(v - Math.round(v)) < 0.05) n++;
  return n / slots.length;
}

/** Update blocks captured on the wire: round → signing site → block index → payload. */
export type TappedUpdates = Map<number, Map<string, Map<number, Uint8Array>>>;

/**
 * Taps every aggregator's update subject with that aggregator's own connection (it may subscribe
 * there; the tap never replies, the aggregator service does) and keeps the blocks of the rounds
 * `keep` selects. Call the returned `stop` once enough is captured.
 */
export async function tapAggregatorWire(
  f: Federation,
  keep: (round: number) => boolean,
): Promise<{ readonly tapped: TappedUpdates; stop(): void }> {
  const tapped: TappedUpdates = new Map();
  const subs: Subscription[] = [];
  for (const a of f.dep.aggregators) {
    const wire: NatsConnection = (await f.member(a)).transport.connection;
    subs.push(
      wire.subscribe(f.coord.subjects.updatesFor(a), {
        callback: (_err, m) => {
          try {
            const block = decodeBlockBody(unframe(m.data, FRAME_KIND.block));
            if (!keep(block.round)) return;
            const round = tapped.get(block.round) ?? new Map<string, Map<number, Uint8Array>>();
            tapped.set(block.round, round);
            const site = round.get(block.signer) ?? new Map<number, Uint8Array>();
            site.set(block.blockIndex, block.ciphertext.slice());
            round.set(block.signer, site);
          } catch {
            // a manifest, or a chunk of a larger message
          }
        },
      }),
    );
    await wire.flush(); // the server has the tap before the caller goes on
  }
  return {
    tapped,
    stop: () => {
      for (const s of subs) s.unsubscribe();
    },
  };
}

/** A stored object of the aggregates store, as a site or the coordinator reads it. */
export async function readStoredAggregate(f: Federation, name: string): Promise<Uint8Array> {
  return (await readWriteOnceObject(
    f.coord.transport.connection,
    aggregateStore(f.dep.config.federation.id),
    name,
    { maxBytes: 64 * 1024 * 1024, timeoutMs: 5000 },
  ))!;
}

/** Round `round`'s stored shares: the coordinator's share request (opened) and the t bundles. */
export async function storedShares(f: Federation, round: number) {
  const { request, bundles } = decodeSharesObject(await readStoredAggregate(f, sharesObjectName(round)));
  return { body: openControl(request, 'share-request', f.coord.keys).body, bundles };
}

/** What the colluders read of each captured block of the victims' updates (laneLike of each try). */
export interface CollusionReading {
  /** Victim blocks tried. */
  readonly blocks: number;
  /** The highest laneLike of a victim block decrypted with the colluding site's own secret. */
  readonly withOwnSecret: number;
  /** The highest laneLike of a victim block decrypted with the round's t opened shares. */
  readonly withRoundShares: number;
  /** The lowest laneLike of the round's aggregate decrypted with the same shares (1: the check sees success). */
  readonly aggregateWithShares: number;
}

/**
 * `colluder` (a site: its threshold key file and its data key) with every aggregator's wire
 * (`tapped`, round `round`) and the coordinator's stores tries to read every other site's update of
 * that committed round: with its own secret, as it would under a shared key, and with the round's
 * t share bundles, which it opens with the data key. The same shares on the stored aggregate show
 * the tries could succeed where anything is there to read.
 */
export async function colludeOnRound(
  f: Federation,
  input: { readonly colluder: string; readonly round: number; readonly tapped: TappedUpdates },
): Promise<CollusionReading> {
  const F = f.dep.config.federation.id;
  const lanes = f.coord.ckks as ThresholdLaneContext;
  const tc = lanes.tc;
  const keys = f.dep.config.members!.keysDir;
  const site = input.colluder;
  const material = loadThresholdKey(tc, join(keys, site, `${site}.threshold`), F);
  const dataKey = loadSiteDataKey(keys, site, F);
  try {
    const decision = (await f.decisions()).find((x) => x.round === input.round && x.commit);
    if (decision === undefined) throw new Error(`round ${input.round} is not committed`);
    const { body, bundles } = await storedShares(f, input.round);
    const context = shareContextOf(body);
    const opened = body.decrypting.map((x, k) =>
      openShareBundle(bundles[k]!, { lanes, context, site: x.site, key: f.coord.keys(x.site)!, dataKey }),
    );
    const aggregate = decodeAggregateObject(await readStoredAggregate(f, decision.aggregate!.object));
    const label = payloadPositionLabel({ federation: F, round: input.round, attempt: body.attempt });
    const victims = [...(input.tapped.get(input.round) ?? new Map()).entries()].filter(([s]) => s !== site);
    let blocks = 0;
    let withOwnSecret = 0;
    let withRoundShares = 0;
    let aggregateWithShares = 1;
    for (const [, captured] of victims) {
      for (const [b, payload] of captured) {
        const c0 = unpackWords(tc, payload);
        const shares = opened.map((o) => o[b]!);
        const own: RnsPoly = zeroPoly(tc);
        mulAddInto(tc, own, commonRandomPoly(tc, material.epochId, label, b), material.secret);
        withOwnSecret = Math.max(withOwnSecret, laneLike(combineShares(tc, c0, [own])));
        withRoundShares = Math.max(withRoundShares, laneLike(combineShares(tc, c0, shares)));
        aggregateWithShares = Math.min(
          aggregateWithShares,
          laneLike(combineShares(tc, unpackWords(tc, aggregate[b]!), shares)),
        );
        blocks++;
      }
    }
    return { blocks, withOwnSecret, withRoundShares, aggregateWithShares };
  } finally {
    dataKey.fill(0);
    wipeThresholdKey(material);
  }
}
