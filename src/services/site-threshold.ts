import { join } from 'node:path';
import {
  loadThresholdKey,
  PositionLedger,
  SiteSecret,
  type ThresholdKeyMaterial,
  type ThresholdLaneContext,
  ThresholdLaneKeyset,
  wipeThresholdKey,
} from '../../crypto/threshold/index.ts';
import { CryptoError } from '../errors/index.ts';
import { memberKeyDir } from '../registry/index.ts';
import { thresholdFiles } from './threshold-dealing.ts';

/** What a site holds under threshold keys: its key material, its position ledger and its keyset. */
export interface SiteThreshold {
  /** Its secret and one share of every roster site's secret, for the epoch. */
  readonly material: ThresholdKeyMaterial;
  /** Its record of the positions it encrypted at and the shares it made (this epoch's folder). */
  readonly ledger: PositionLedger;
  /** Encrypts under its own secret, each position claimed in the ledger first. */
  readonly keyset: ThresholdLaneKeyset;
  /** Wipes the secret and the shares, closes the ledger. */
  close(): void;
}

/**
 * Opens a site's threshold keys: its key file (`<keysDir>/<site>/<site>.threshold`, owner-only),
 * checked against the configuration's epoch pin when given, and its position ledger in
 * `<dataDir>/<site>/threshold/<epoch id>/` (kept with the site's store, never with its keys: a
 * key folder restored from a backup must not forget a position).
 *
 * @throws CryptoError `KEY_FILE_*`, `KEY_INVALID`, `THRESHOLD_EPOCH_INVALID` (another epoch than
 *   the pinned one), `LEDGER_UNAVAILABLE`.
 */
export function openSiteThreshold(input: {
  readonly lanes: ThresholdLaneContext;
  readonly keysDir: string;
  readonly dataDir: string;
  readonly site: string;
  readonly federation: string;
  readonly pin?: string;
}): SiteThreshold {
  const { lanes, site } = input;
  const path = join(memberKeyDir(input.keysDir, site), thresholdFiles.key(site));
  const material = loadThresholdKey(lanes.tc, path, input.federation);
  const epoch = Buffer.from(material.epochId).toString('hex');
  let ledger: PositionLedger | undefined;
  try {
    if (material.self !== site)
      throw new CryptoError('KEY_INVALID', `${path} is ${material.self}'s, not ${site}'s`);
    if (input.pin !== undefined && epoch !== input.pin) {
      throw new CryptoError(
        'THRESHOLD_EPOCH_INVALID',
        `${path} is for key epoch ${epoch}, the configuration pins ${input.pin}`,
        { details: { path } },
      );
    }
    ledger = PositionLedger.open(join(input.dataDir, site, 'threshold', epoch));
    const keyset = new ThresholdLaneKeyset(
      lanes,
      SiteSecret.fromWords(lanes.tc, material.secret),
      material.epochId,
      ledger,
    );
    const opened = ledger;
    return {
      material,
      ledger: opened,
      keyset,
      close() {
        keyset.delete();
        wipeThresholdKey(material);
        opened.close();
      },
    };
  } catch (err) {
    ledger?.close();
    wipeThresholdKey(material);
    throw err;
  }
}
