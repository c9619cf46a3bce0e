import type { EnvelopeMakerLookup } from '../../crypto/kem/index.ts';
import type { CohortConfig } from '../config/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import type { RegistryView } from '../registry/index.ts';

/** Purpose bound into the envelope that carries the CKKS secret key to a site. */
export const CKKS_KEY_PURPOSE = 'ckks-secret-key';

/**
 * Purpose bound into the envelope that carries the federation data key (32 bytes, AES-256 key of
 * model snapshots; held by sites only) to a site.
 */
export const DATA_KEY_PURPOSE = 'federation-data-key';

/**
 * What a site trusts when it opens the envelopes of the shared secrets (`<site>.ckks.env`,
 * `<site>.data.env`): nothing in the envelope folder itself, only what it already trusts.
 */
export interface EnvelopeTrust {
  readonly federation: string;
  /** Who may make an envelope: a registered, unrevoked site, with one of its registered keys. */
  readonly makers: EnvelopeMakerLookup;
  /** The fingerprints the configuration pins (`members.keyFingerprints`), by purpose. */
  readonly fingerprints: Readonly<Partial<Record<string, string>>>;
}

/**
 * The makers a registry view admits: a site of the view (the pinned registry and the log's
 * changes), not revoked, signing with one of its registered keys (a key rotated away still counts:
 * what it signed before the rotation stays valid; revoke a compromised member, and pin the
 * fingerprints, `members.keyFingerprints`, so that no key can vouch for another secret). Any other
 * maker is refused with the reason.
 */
export function registryEnvelopeMakers(view: RegistryView): EnvelopeMakerLookup {
  return (maker, keyId) => {
    const m = view.member(maker);
    if (m === undefined) return `${maker} is not in the member registry`;
    if (m.role !== 'site')
      return `${maker} is the federation's ${m.role}; only sites hold the shared secrets`;
    if (m.revokedFrom !== undefined) {
      return `${maker} is revoked from round ${m.revokedFrom}: have another site wrap the secret again`;
    }
    const epoch = m.epochs.find((e) => e.signingKey.keyId === keyId);
    if (epoch === undefined) return `key ${keyId} is none of ${maker}'s registered signing keys`;
    return epoch.signingKey;
  };
}

/**
 * The envelope trust of a member: makers from its registry view ({@link registryEnvelopeMakers}),
 * fingerprints from its configuration's `members.keyFingerprints`. Pass it to `loadSiteKeyset`
 * and `loadSiteDataKey`.
 *
 * @throws InvalidArgumentError without a configuration or a registry view.
 */
export function envelopeTrust(member: {
  readonly config: CohortConfig;
  readonly registryView: RegistryView;
}): EnvelopeTrust {
  if (member?.config === undefined || member.registryView === undefined) {
    throw new InvalidArgumentError('member must have a config and a registryView', {
      details: { name: 'member' },
    });
  }
  const pins = member.config.members?.keyFingerprints;
  return {
    federation: member.config.federation.id,
    makers: registryEnvelopeMakers(member.registryView),
    fingerprints: {
      ...(pins?.ckks === undefined ? {} : { [CKKS_KEY_PURPOSE]: pins.ckks.toLowerCase() }),
      ...(pins?.data === undefined ? {} : { [DATA_KEY_PURPOSE]: pins.data.toLowerCase() }),
    },
  };
}
