import { join } from 'node:path';
import type { Command } from 'commander';
import {
  loadSigningKeyPair,
  toPublicSigningKey,
  wipeSigningKeyPair,
} from '../../../crypto/signature/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import {
  publicKeyDir,
  type RegistryRole,
  registryFromPublicFiles,
  signRegistry,
  writeRegistry,
} from '../../registry/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

interface RegistryCreateFlags extends ConfigFlags {
  config: string;
  officerKey: string;
  out: string;
  publicDir?: string;
  exclude?: string[];
  validFrom: string;
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/**
 * `cohort registry create --config <federation.yaml> --officer-key <officer.key> --out registry.bin
 * [--public-dir <dir>] [--exclude <id>]… [--valid-from <round>]`: the registry officer builds the
 * member registry from the public files the members handed over (`<id>.pub`, `<id>.kem.pub` for
 * sites, `<id>.nk.pub`; in `--public-dir`, default the keys folder's `public/` folder), lists every
 * member of the configuration with its role (but the `--exclude`d: configured, enrolled later),
 * names its own public key as the officer, signs it (domain `registry`) and writes it. Prints the
 * file's SHA-256 and the `members.registry` lines that pin it. No secret but the officer's key is
 * read.
 */
export function registerRegistryCreateCommand(registry: Command, ctx: CliContext): void {
  addConfigOptions(
    registry
      .command('create')
      .description("officer: build and sign the member registry from the members' public files")
      .requiredOption('-c, --config <file>', 'federation YAML (federation id and members)')
      .requiredOption('--officer-key <file>', "the registry officer's signing key pair (.key, 0600)")
      .requiredOption('-o, --out <file>', 'registry file to write (e.g. keys/public/registry.bin)')
      .option(
        '--public-dir <dir>',
        'folder of the <id>.pub, <id>.kem.pub, <id>.nk.pub files (default: <keysDir>/public)',
      )
      .option('--exclude <id>', 'a configured member not enrolled yet (repeatable)', collect)
      .option('--valid-from <round>', 'first round the listed keys are valid for', '0'),
  ).action((flags: RegistryCreateFlags) => {
    // The one command that reads a configuration before its registry exists (it makes it).
    const config = loadConfigWithFlags(flags.config, flags, ctx, { unpinnedRegistry: true });
    const members = config.members;
    if (members === undefined) {
      throw new InvalidArgumentError(`${flags.config} has no members section`, {
        details: { name: 'config' },
      });
    }
    const validFromRound = Number(flags.validFrom);
    if (!Number.isSafeInteger(validFromRound) || validFromRound < 0) {
      throw new InvalidArgumentError(`--valid-from ${flags.validFrom} is not a round`, {
        details: { name: 'valid-from' },
      });
    }
    const exclude = new Set(flags.exclude ?? []);
    const all: { id: string; role: RegistryRole }[] = [
      { id: members.coordinator, role: 'coordinator' },
      ...members.aggregators.map((a) => ({ id: a.id, role: 'aggregator' as const })),
      ...members.sites.map((s) => ({ id: s.id, role: 'site' as const })),
      ...members.auditors.map((a) => ({ id: a.id, role: 'auditor' as const })),
    ];
    for (const id of exclude) {
      if (!all.some((m) => m.id === id)) {
        throw new InvalidArgumentError(`--exclude ${id} is not a member of ${flags.config}`, {
          details: { name: 'exclude' },
        });
      }
    }
    const officer = loadSigningKeyPair(flags.officerKey);
    let pin: { path: string; sha256: string };
    let count: number;
    try {
      const listed = all.filter((m) => !exclude.has(m.id));
      count = listed.length;
      const body = registryFromPublicFiles({
        federation: config.federation.id,
        members: listed,
        dir: flags.publicDir ?? publicKeyDir(members.keysDir),
        officerKey: toPublicSigningKey(officer),
        validFromRound,
      });
      pin = writeRegistry(flags.out, signRegistry(body, officer));
    } finally {
      wipeSigningKeyPair(officer);
    }
    ctx.stdout.write(
      `registry: ${pin.path} (${count} members, federation ${config.federation.id}, officer key ${officer.keyId})\n` +
        `sha256: ${pin.sha256}\n` +
        `pin it in every member's configuration:\n` +
        `members:\n  registry:\n    path: ${join(pin.path)}\n    sha256: ${pin.sha256}\n`,
    );
  });
}
