// Debian's chromium for the dashboard's browser tests, driven by playwright-core: found as
// src/transport/nats-process.ts finds nats-server ($COHORT_CHROMIUM, else PATH, else /usr/bin),
// never downloaded. Tests skip with NO_CHROMIUM where it is missing (CI installs it).
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

function findChromium(): string | undefined {
  const fromEnv = process.env['COHORT_CHROMIUM'];
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), '/usr/bin', '/usr/local/bin'];
  const candidates = fromEnv
    ? [fromEnv]
    : dirs.filter((d) => d !== '').flatMap((d) => [join(d, 'chromium'), join(d, 'chromium-browser')]);
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // try the next one
    }
  }
  return undefined;
}

/** Where chromium is, or undefined. */
export const CHROMIUM: string | undefined = findChromium();

/** Why a browser test is skipped. */
export const NO_CHROMIUM =
  'chromium is not installed (looked at $COHORT_CHROMIUM, on PATH and in /usr/bin): apt-get install chromium; .ci/setup does';

/**
 * Headless chromium. `--no-sandbox`: CI runs the tests as root, where chromium's sandbox refuses
 * to start; the browser only ever loads the test's own local page.
 */
export async function launchChromium(): Promise<Browser> {
  if (CHROMIUM === undefined) throw new Error(NO_CHROMIUM);
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless=new'] });
}

/** What a page reported that a test must fail on: uncaught errors and console errors (CSP violations included). */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  return errors;
}
