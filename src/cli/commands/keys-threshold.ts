import type { Command } from 'commander';
import { loadSigningKeyPair, wipeSigningKeyPair } from '../../../crypto/signature/index.ts';
import {
  DEFAULT_THRESHOLD_PARAMS,
  getThresholdContext,
  holds,
  rosterHolders,
} from '../../../crypto/threshold/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import { memberSigningKeyFile, publicKeyDir, RegistryView } from '../../registry/index.ts';
import { loadPinnedRegistry } from '../../services/member-context.ts';
import {
  collectThresholdShares,
  dealRecipients,
  dealThresholdShares,
  thresholdFiles,
  thresholdRosterOf,
  writeThresholdEpoch,
} from '../../services/threshold-dealing.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

interface ThresholdFlags extends ConfigFlags {
  config: string;
  member: string;
}

/** The site's view of the ceremony: its configuration, the roster, the registry and the context. */
async function setup(flags: ThresholdFlags, ctx: CliContext) {
  const config = loadConfigWithFlags(flags.config, flags, ctx);
  const members = config.members;
  if (members === undefined) {
    throw new InvalidArgumentError(`${flags.config} has no members section: no sites to deal to`, {
      details: { name: 'config' },
    });
  }
  if (config.crypto.keys !== 'threshold') {
    throw new InvalidArgumentError(`${flags.config} sets crypto.keys: ${config.crypto.keys}, not threshold`, {
      details: { name: 'config' },
    });
  }
  if (!members.sites.some((s) => s.id === flags.member)) {
    throw new InvalidArgumentError(`--member ${flags.member} is not one of the configuration's sites`, {
      details: { name: 'member' },
    });
  }
  const signed = loadPinnedRegistry(config);
  if (signed === undefined) {
    throw new InvalidArgumentError(`${flags.config} pins no member registry (members.registry)`, {
      details: { name: 'config' },
    });
  }
  const registry = RegistryView.fromRegistry(signed.registry);
  const tc = await getThresholdContext(DEFAULT_THRESHOLD_PARAMS);
  const roster = thresholdRosterOf({
    federation: config.federation.id,
    paramsId: tc.paramsId,
    sites: members.sites.map((s) => s.id),
    enrolled: (id) => {
      const m = registry.member(id);
      return m !== undefined && m.role === 'site' && m.revokedFrom === undefined;
    },
    threshold: config.crypto.threshold.sites,
    holders: config.crypto.threshold.holders,
    minContributors: config.round.minContributors,
  });
  if (!roster.sites.some((s) => s.id === flags.member)) {
    throw new InvalidArgumentError(`--member ${flags.member} is not an enrolled site of the registry`, {
      details: { name: 'member' },
    });
  }
  return { config, keysDir: members.keysDir, registry, tc, roster };
}

/**
 * `cohort keys threshold deal|collect --config <federation.yaml> --member <site>`: the threshold
 * key ceremony (docs/key-ceremony.md, "Threshold keys"), run by each site where its keys are. The
 * roster comes from the configuration's sites and the pinned registry, the same at every site.
 */
export function registerKeysThresholdCommand(keys: Command, ctx: CliContext): void {
  const threshold = keys
    .command('threshold')
    .description(
      'threshold CKKS keys (crypto.keys: threshold): each site draws its own secret and deals Shamir shares of it',
    );
  addConfigOptions(
    threshold
      .command('deal')
      .description(
        "step 1 at a site: draw its secret (kept in its own folder), publish its signed public share and seal one share to every site's ML-KEM key",
      )
      .requiredOption('-c, --config <file>', 'the federation configuration (members, pinned registry)')
      .requiredOption('-m, --member <site>', 'the site dealing (its own keys folder holds its signing key)'),
  ).action(async (flags: ThresholdFlags) => {
    const { keysDir, registry, tc, roster } = await setup(flags, ctx);
    const signingKey = loadSigningKeyPair(memberSigningKeyFile(keysDir, flags.member));
    let fingerprint: string;
    try {
      fingerprint = dealThresholdShares({
        dir: keysDir,
        site: flags.member,
        roster,
        ctx: tc,
        signingKey,
        kemKeys: (id) => registry.currentKemKey(id),
      });
    } finally {
      wipeSigningKeyPair(signingKey);
    }
    const shared = publicKeyDir(keysDir);
    ctx.stdout.write(
      `roster: ${roster.sites.map((s) => `${s.id}@${s.point}${holds(roster, s.id) ? '' : ' (not a holder)'}`).join(', ')}; any ${roster.threshold} of the ${rosterHolders(roster).length} key holders decrypt\n` +
        `public share: ${shared}/${thresholdFiles.publicShare(flags.member)} (fingerprint ${fingerprint})\n` +
        `envelopes sealed: ${shared}/${thresholdFiles.share(flags.member, '<site>')} (${dealRecipients(roster, flags.member).length} files)\n` +
        `pending secret: its own folder, ${thresholdFiles.pendingSecret(flags.member)} (0600; erased by collect)\n` +
        'hand the public share and the sealed shares to every site; each runs `cohort keys threshold collect` once all have dealt\n',
    );
  });
  addConfigOptions(
    threshold
      .command('collect')
      .description(
        'step 2 at a site, once every site has dealt: check every public share, open the shares dealt to it, write its key file and the epoch file',
      )
      .requiredOption('-c, --config <file>', 'the federation configuration (members, pinned registry)')
      .requiredOption('-m, --member <site>', 'the site collecting'),
  ).action(async (flags: ThresholdFlags) => {
    const { keysDir, registry, tc, roster } = await setup(flags, ctx);
    const epoch = collectThresholdShares({ dir: keysDir, site: flags.member, roster, ctx: tc, registry });
    const file = writeThresholdEpoch(keysDir, { roster, epochId: epoch.epochId });
    const id = Buffer.from(epoch.epochId).toString('hex');
    ctx.stdout.write(
      `key file: ${epoch.keyFile} (0600: its secret and one share of every site's)\n` +
        `epoch file: ${file}\n` +
        `epoch id: ${id} (members.keyFingerprints.threshold; every site must print the same)\n` +
        epoch.publicShares.map((p) => `  ${p.site} public share ${p.fingerprint}\n`).join(''),
    );
  });
}
