/**
 * Variables of the agent's environment a trainer inherits: what locates programs, the home and
 * temporary folders, and the locale. Nothing else: the agent's environment can hold secrets (key
 * passphrases, NATS credentials), and the trainer is code the federation does not vet.
 */
export const INHERITED_ENV = Object.freeze([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
]);

/**
 * The trainer's environment: {@link INHERITED_ENV} and every `LC_*` variable from `parent`, then
 * `extra` on top (an entry of `extra` replaces the inherited one).
 */
export function trainerEnv(
  parent: Readonly<Record<string, string | undefined>>,
  extra: Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(parent)) {
    if (value !== undefined && (INHERITED_ENV.includes(key) || key.startsWith('LC_'))) env[key] = value;
  }
  return { ...env, ...extra };
}
