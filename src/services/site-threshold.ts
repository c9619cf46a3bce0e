import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readKeyFile, writeKeyFile } from '../../crypto/signature/key-file-io.ts';
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
  /** The configuration's pin of the key ceremony's epoch (checked for generation 0 only). */
  readonly pin?: string;
  /** The epoch's generation (default 0, the key ceremony's). */
  readonly generation?: number;
}): SiteThreshold {
  const { lanes, site } = input;
  const generation = input.generation ?? 0;
  const path = join(memberKeyDir(input.keysDir, site), thresholdFiles.key(site, generation));
  const material = loadThresholdKey(lanes.tc, path, input.federation);
  const epoch = Buffer.from(material.epochId).toString('hex');
  let ledger: PositionLedger | undefined;
  try {
    if (material.self !== site)
      throw new CryptoError('KEY_INVALID', `${path} is ${material.self}'s, not ${site}'s`);
    if (material.roster.generation !== generation) {
      throw new CryptoError(
        'KEY_INVALID',
        `${path} is of generation ${material.roster.generation}, not ${generation}`,
      );
    }
    if (generation === 0 && input.pin !== undefined && epoch !== input.pin) {
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

/** Generations of the threshold key files in a site's key folder, newest first. */
export function thresholdKeyGenerations(keysDir: string, site: string): number[] {
  const dir = memberKeyDir(keysDir, site);
  if (!existsSync(dir)) return [];
  const out: number[] = [];
  for (const name of readdirSync(dir)) {
    if (name === thresholdFiles.key(site, 0)) out.push(0);
    const m = /^(.+)\.g(\d{1,10})\.threshold$/.exec(name);
    if (m !== null && m[1] === site) out.push(Number(m[2]));
  }
  return out.sort((a, b) => b - a);
}

/**
 * Erases (overwrites with zeros, then removes) the site's threshold key files of generations
 * before `generation`: once a re-shared epoch is in force, a key file stolen later opens nothing
 * encrypted under an earlier one that the thief did not already hold.
 */
export function eraseOlderThresholdKeys(keysDir: string, site: string, generation: number): void {
  for (const g of thresholdKeyGenerations(keysDir, site)) {
    if (g >= generation) continue;
    const path = join(memberKeyDir(keysDir, site), thresholdFiles.key(site, g));
    writeKeyFile(path, new Uint8Array(statSync(path).size), true);
    rmSync(path);
  }
}

/**
 * Erases the site's pending deals (`<dataDir>/<site>/threshold/deal-<generation>-…`, each holding
 * a secret drawn for a re-sharing) of generations up to `generation`: once that epoch is in force,
 * an attempt that did not become it never will.
 */
export function erasePendingDeals(dataDir: string, site: string, generation: number): void {
  const dir = join(dataDir, site, 'threshold');
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const m = /^deal-(\d{1,10})-[0-9a-f]+$/.exec(name);
    if (m === null || Number(m[1]) > generation) continue;
    const secret = join(dir, name, 'secret');
    if (existsSync(secret)) writeKeyFile(secret, new Uint8Array(statSync(secret).size), true);
    rmSync(join(dir, name), { recursive: true, force: true });
  }
}

/** The site's file of its re-shared epochs' data keys: `<site>.epoch-keys`, owner-only. */
function epochKeysPath(keysDir: string, site: string): string {
  return join(memberKeyDir(keysDir, site), `${site}.epoch-keys`);
}

/**
 * The data keys of the re-shared epochs the site was in, by epoch id (hex): records of epoch id
 * (32 bytes) ‖ key (32 bytes). Kept for as long as the site keeps its history (a site replaying a
 * round of an epoch opens its share bundles with that epoch's key).
 *
 * @throws CryptoError `KEY_FILE_*` (unreadable, readable by others), `KEY_INVALID` (not whole records).
 */
export function loadEpochDataKeys(keysDir: string, site: string): Map<string, Uint8Array> {
  const path = epochKeysPath(keysDir, site);
  const out = new Map<string, Uint8Array>();
  if (!existsSync(path)) return out;
  const bytes = readKeyFile(path, true);
  try {
    if (bytes.length % 64 !== 0)
      throw new CryptoError('KEY_INVALID', `${path}: not whole records of 64 bytes`);
    for (let at = 0; at < bytes.length; at += 64) {
      out.set(Buffer.from(bytes.subarray(at, at + 32)).toString('hex'), bytes.slice(at + 32, at + 64));
    }
    return out;
  } finally {
    bytes.fill(0);
  }
}

/** Adds (or replaces) the data key of epoch `epochId` in the site's file (rewritten whole, 0600). */
export function saveEpochDataKey(keysDir: string, site: string, epochId: Uint8Array, key: Uint8Array): void {
  const keys = loadEpochDataKeys(keysDir, site);
  keys.set(Buffer.from(epochId).toString('hex'), key.slice());
  const bytes = new Uint8Array(keys.size * 64);
  let at = 0;
  for (const [id, k] of keys) {
    bytes.set(Buffer.from(id, 'hex'), at);
    bytes.set(k, at + 32);
    at += 64;
    k.fill(0);
  }
  try {
    writeKeyFile(epochKeysPath(keysDir, site), bytes, true);
  } finally {
    bytes.fill(0);
  }
}
