import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** The `version` field of Cohort's package.json. */
export function packageVersion(): string {
  if (cached === undefined) {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    cached = typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  }
  return cached;
}
