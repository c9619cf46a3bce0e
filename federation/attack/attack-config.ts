import { InvalidArgumentError } from '../../src/errors/index.ts';

/** The simulated attacks: what a malicious site does to its update or its data. */
export const ATTACK_KINDS = Object.freeze(['sign-flip', 'scaling', 'label-flip'] as const);

/**
 * One of {@link ATTACK_KINDS}:
 * - `sign-flip` sends −factor·u instead of its honest update u (default factor 1);
 * - `scaling` sends factor·u (default factor 10), the model-replacement boost;
 * - `label-flip` trains honestly on labels mapped y ↦ classCount − 1 − y (data poisoning).
 */
export type AttackKind = (typeof ATTACK_KINDS)[number];

/** A simulated attack: which kind, on what share of the sites. */
export interface AttackConfig {
  readonly kind: AttackKind;
  /** Share of the sites that attack, in [0, 1]; round(fraction·siteCount) sites are chosen. */
  readonly fraction: number;
  /**
   * Multiplier of `sign-flip` (default 1) and `scaling` (default 10), finite and > 0; does not
   * apply to `label-flip`.
   */
  readonly factor?: number;
}

/** Default `factor` per update-poisoning kind. */
export const ATTACK_DEFAULT_FACTORS = Object.freeze({ 'sign-flip': 1, scaling: 10 });

const FIELDS: Readonly<Record<AttackKind, readonly string[]>> = {
  'sign-flip': ['kind', 'fraction', 'factor'],
  scaling: ['kind', 'fraction', 'factor'],
  'label-flip': ['kind', 'fraction'],
};

/**
 * Throws `INVALID_ARGUMENT` naming the field (`attack.fraction`) unless `attack` is a valid
 * {@link AttackConfig}: a known `kind`, only that kind's fields, `fraction` in [0, 1], `factor`
 * finite and > 0. Fields set to `undefined` count as absent.
 */
export function assertAttackConfig(attack: unknown): asserts attack is AttackConfig {
  if (typeof attack !== 'object' || attack === null) {
    throw new InvalidArgumentError(`attack must be an attack configuration object, got ${String(attack)}`, {
      details: { name: 'attack' },
    });
  }
  const fields = attack as Partial<Record<string, unknown>>;
  const kind = fields.kind;
  if (typeof kind !== 'string' || !(ATTACK_KINDS as readonly string[]).includes(kind)) {
    throw new InvalidArgumentError(
      `attack.kind is ${JSON.stringify(kind)}, must be one of ${ATTACK_KINDS.join(', ')}`,
      { details: { name: 'attack.kind', value: String(kind) } },
    );
  }
  const allowed = FIELDS[kind as AttackKind];
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && !allowed.includes(key)) {
      throw new InvalidArgumentError(
        `attack.${key} does not apply to ${kind} (allowed: ${allowed.join(', ')})`,
        {
          details: { name: `attack.${key}` },
        },
      );
    }
  }
  const fraction = fields.fraction;
  if (typeof fraction !== 'number' || !(fraction >= 0 && fraction <= 1)) {
    throw fieldError('attack.fraction', fraction, 'in [0, 1]');
  }
  const factor = fields.factor;
  if (factor !== undefined && (typeof factor !== 'number' || !Number.isFinite(factor) || !(factor > 0))) {
    throw fieldError('attack.factor', factor, 'finite and > 0');
  }
}

/** The multiplier an update-poisoning attack applies: `attack.factor` or its kind's default. */
export function attackFactor(attack: AttackConfig): number {
  if (attack.factor !== undefined) return attack.factor;
  return attack.kind === 'scaling' ? ATTACK_DEFAULT_FACTORS.scaling : ATTACK_DEFAULT_FACTORS['sign-flip'];
}

function fieldError(name: string, value: unknown, range: string): InvalidArgumentError {
  return new InvalidArgumentError(`${name} must be ${range}, got ${String(value)}`, {
    details: { name, value: String(value) },
  });
}
