#!/usr/bin/env node
// Cohort command-line entry. Plain ESM JavaScript so that a too-old Node fails here with a
// clear message instead of a syntax error in the TypeScript sources, which Node >= 22.18
// runs directly in a checkout (type stripping, no build step); a package made by `npm pack`
// runs the compiled JavaScript instead.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `cohort: Node.js >= 22.18 is required (this is ${process.version}).\n` +
      'From the repository root, `bash .ci/setup` (as root) installs Node 22 as /usr/local/bin/node;\n' +
      '`. .ci/node22.sh` puts it on PATH for this shell only. Then retry.\n',
  );
  process.exit(1);
}
// From a checkout the TypeScript sources run as they are; an installed package (Node strips no
// types under node_modules) ships them compiled under build/package, with no .ts beside.
const { existsSync } = await import('node:fs');
const main = ['../src/cli/main.ts', '../build/package/src/cli/main.js', '../src/cli/main.js']
  .map((path) => new URL(path, import.meta.url))
  .find((url) => existsSync(url));
if (main === undefined) {
  process.stderr.write('cohort: neither src/cli/main.ts nor its compiled build/package is here\n');
  process.exit(1);
}
await import(main.href);
