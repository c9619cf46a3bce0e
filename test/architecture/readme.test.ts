// The README is a front door, not the manual: at most 200 lines, with a quickstart of one set-up
// command and then `npm run demo` and `npm test` as they are typed in a new shell (nothing
// sourced), and CI (`.ci/run`) runs exactly that test command after the same set-up.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The commands of the `sh` code blocks of `markdown`'s section `heading`, comments dropped. */
function commands(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) return [];
  const end = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
    m[1]!
      .split('\n')
      .map((l) => l.replace(/#.*$/, '').trim())
      .filter((l) => l !== ''),
  );
}

/** The commands `.ci/run` runs, comments and shell plumbing dropped. */
function ciCommands(script: string): string[] {
  return script
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^(bash|npm|node|\.) /.test(l) || l === 'npm test');
}

describe('README.md', () => {
  const readme = read('README.md');

  it('is at most 200 lines', () => {
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(200);
  });

  it('starts with one set-up command, then `npm run demo` and `npm test`, nothing sourced', () => {
    expect(commands(readme, 'Quickstart')).toEqual(['bash .ci/setup', 'npm run demo', 'npm test']);
  });

  it('CI runs the same set-up and exactly the README’s test command', () => {
    expect(ciCommands(read('.ci/run'))).toEqual(['bash .ci/setup', 'npm test']);
  });

  it('the checks fail on a README that sources a script or has no quickstart', () => {
    const sourced =
      '# x\n\n## Quickstart\n\n```sh\nbash .ci/setup\n```\n\n```sh\n. .ci/node22.sh && npm test\n```\n';
    expect(commands(sourced, 'Quickstart')).not.toEqual(['bash .ci/setup', 'npm run demo', 'npm test']);
    expect(commands('# x\n\n## Run it\n\n```sh\nnpm test\n```\n', 'Quickstart')).toEqual([]);
    expect(ciCommands('bash .ci/setup\n. .ci/node22.sh\nnpm test\n')).not.toEqual([
      'bash .ci/setup',
      'npm test',
    ]);
  });
});
