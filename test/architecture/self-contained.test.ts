// Nothing in the repository points outside it: no tracked text file names a path in a sibling
// folder (`../shared/`) or cites the design or style document that lived there (the all-caps name
// of either, as in "<NAME> §2"); what they said is in docs/ and ARCHITECTURE.md. And every
// relative link of every markdown file (README.md, ARCHITECTURE.md, docs/…) reaches a tracked file
// or folder of the repository. This file names the patterns it looks for, so it does not check
// itself.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const SELF = relative(ROOT, import.meta.filename)
  .split('\\')
  .join('/');
const TEXT = /\.(?:ts|js|md|ya?ml|py|json|sh|proto|html|css)$/;
/** Outside pointers: a sibling folder's path, or the citation of a document kept there. */
const OUTSIDE: readonly RegExp[] = [/\.\.\/shared\//, /\bDESIGN\b/, /\bSTYLE\b\s*§/];

/** Tracked files (repository-relative, `/`-separated) that still exist in the working tree. */
function tracked(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\0')
    .filter((f) => f !== '' && existsSync(join(ROOT, f)));
}

/** Tracked text files: by extension, plus the extensionless scripts under `.ci/`. */
function textFiles(): string[] {
  return tracked().filter(
    (f) =>
      f !== SELF &&
      !f.endsWith('package-lock.json') &&
      (TEXT.test(f) || (f.startsWith('.ci/') && !f.split('/').pop()!.includes('.'))),
  );
}

/** `path:line: text` for every line of `text` that points outside the repository. */
function outsideReferences(path: string, text: string): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (OUTSIDE.some((re) => re.test(line))) out.push(`${path}:${i + 1}: ${line.trim()}`);
  });
  return out;
}

/** `text` with fenced code blocks and inline code blanked out, line breaks kept. */
function withoutCode(text: string): string {
  const blank = (s: string): string => s.replace(/[^\n]/g, ' ');
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, blank).replace(/`[^`\n]*`/g, blank);
}

// `](target)` or `](target "title")`, the link text possibly spanning lines; images too.
const LINK = /\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;

/**
 * The relative links of the markdown `text`, each with its line: http(s):, mailto: and other
 * schemes, pure `#anchor` links and anything in code are left out.
 */
function relativeLinks(text: string): { target: string; line: number }[] {
  const body = withoutCode(text);
  const out: { target: string; line: number }[] = [];
  for (const m of body.matchAll(LINK)) {
    const target = m[1]!;
    if (target.startsWith('#') || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    out.push({ target, line: body.slice(0, m.index).split('\n').length });
  }
  return out;
}

/**
 * `path:line: target` for every relative link in the markdown `text` of `path` whose target
 * (without `#anchor` or `?query`) is not a file or folder of the repository (`exists` is asked
 * with a repository-relative, `/`-separated path).
 */
function brokenLinks(path: string, text: string, exists: (repoPath: string) => boolean): string[] {
  return relativeLinks(text)
    .filter(({ target }) => {
      const file = decodeURIComponent(target.replace(/[?#].*$/, ''));
      const resolved = normalize(join(dirname(path), file))
        .split('\\')
        .join('/')
        .replace(/\/$/, '');
      return resolved.startsWith('../') || !exists(resolved);
    })
    .map(({ target, line }) => `${path}:${line}: ${target}`);
}

/** Whether `repoPath` is a tracked file, a folder holding one, or the root (`.`). */
function inRepository(files: readonly string[]): (repoPath: string) => boolean {
  const known = new Set<string>(['.']);
  for (const f of files) {
    const parts = f.split('/');
    for (let i = 1; i <= parts.length; i++) known.add(parts.slice(0, i).join('/'));
  }
  return (repoPath) => known.has(repoPath);
}

describe('the repository is self-contained', () => {
  it('no tracked text file points outside it', () => {
    const files = textFiles();
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((f) => outsideReferences(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(found).toEqual([]);
  });

  it("every relative link of the markdown files reaches the repository's own files", () => {
    const files = tracked();
    const docs = files.filter((f) => f.endsWith('.md'));
    expect(docs).toEqual(expect.arrayContaining(['README.md', 'ARCHITECTURE.md', 'docs/round-protocol.md']));
    const texts = docs.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')] as const);
    expect(texts.flatMap(([, text]) => relativeLinks(text)).length).toBeGreaterThan(0);
    const exists = inRepository(files);
    expect(texts.flatMap(([f, text]) => brokenLinks(f, text, exists))).toEqual([]);
  });

  it('both checks report what they are for', () => {
    const source = '// ok\n// see DESIGN §2 step 7\n// and ../shared/x.md\n/** per STYLE §1.2 */\n';
    expect(outsideReferences('a.ts', source)).toEqual([
      'a.ts:2: // see DESIGN §2 step 7',
      'a.ts:3: // and ../shared/x.md',
      'a.ts:4: /** per STYLE §1.2 */',
    ]);
    expect(outsideReferences('a.ts', '// DESIGNS, design, DESIGN_X are words, not citations\n')).toEqual([]);

    const exists = (p: string): boolean => ['docs/a.md', 'docs/b.md', 'README.md', 'docs'].includes(p);
    const md = [
      'See [b](b.md#top), [home](../README.md?x=1), [the folder](./), [web](https://x.org/y.md),',
      '[mail](mailto:a@b.c) and [here](#anchor), `[code](nowhere.md)`, and',
      '[a link over',
      'two lines](missing.md) and ![an image](img/gone.svg "title") and [out](../../elsewhere.md).',
      '```',
      '[fenced](nowhere.md)',
      '```',
    ].join('\n');
    expect(brokenLinks('docs/a.md', md, exists)).toEqual([
      'docs/a.md:4: missing.md',
      'docs/a.md:4: img/gone.svg',
      'docs/a.md:4: ../../elsewhere.md',
    ]);
  });
});
