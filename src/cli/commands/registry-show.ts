import { createHash } from 'node:crypto';
import type { Command } from 'commander';
import { encodeKemPublicKey } from '../../../crypto/kem/index.ts';
import { loadRegistry } from '../../registry/index.ts';
import type { CliContext } from '../context/cli-context.ts';

interface RegistryShowFlags {
  sha256?: string;
  json?: boolean;
}

/**
 * `cohort registry show <registry.bin> [--sha256 <pin>] [--json]`: verifies the registry file (the
 * officer's signature; its SHA-256 against `--sha256` when given) and prints its SHA-256, the
 * federation, the officer's key id and each member: role, signing algorithm and key id, the KEM
 * key's fingerprint (SHA-256 of its `.kem.pub` encoding, as `sha256sum` shows), NKEY and the round
 * its key is valid from.
 */
export function registerRegistryShowCommand(registry: Command, ctx: CliContext): void {
  registry
    .command('show')
    .description('verify a registry file and print it with its SHA-256')
    .argument('<file>', 'registry file (registry.bin)')
    .option('--sha256 <hex>', 'refuse the file unless its SHA-256 is this pin')
    .option('--json', 'print JSON')
    .action((file: string, flags: RegistryShowFlags) => {
      const verified = loadRegistry(file, flags.sha256);
      const r = verified.registry;
      const members = r.members.map((m) => ({
        id: m.id,
        role: m.role,
        algorithm: m.signingKey.algorithm,
        keyId: m.signingKey.keyId,
        kem:
          m.kemKey === undefined
            ? null
            : createHash('sha256').update(encodeKemPublicKey(m.kemKey)).digest('hex'),
        nkey: m.nkey ?? null,
        validFromRound: m.validFromRound,
      }));
      if (flags.json === true) {
        ctx.stdout.write(
          `${JSON.stringify({
            file,
            sha256: verified.sha256,
            federation: r.federation,
            officer: { algorithm: r.officerKey.algorithm, keyId: r.officerKey.keyId },
            issuedUnixMs: r.issuedUnixMs,
            members,
          })}\n`,
        );
        return;
      }
      const lines = [
        `registry: ${file}`,
        `sha256: ${verified.sha256}`,
        `federation: ${r.federation}`,
        `officer: ${r.officerKey.algorithm} ${r.officerKey.keyId}`,
        `issued: ${new Date(r.issuedUnixMs).toISOString()}`,
        `members: ${members.length}`,
        ...members.map(
          (m) =>
            `  ${m.id} ${m.role} ${m.algorithm} ${m.keyId}${m.kem === null ? '' : ` kem ${m.kem.slice(0, 16)}`}${m.nkey === null ? '' : ` nkey ${m.nkey}`} from round ${m.validFromRound}`,
        ),
      ];
      ctx.stdout.write(`${lines.join('\n')}\n`);
    });
}
