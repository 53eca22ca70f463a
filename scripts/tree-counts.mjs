#!/usr/bin/env node
/**
 * Counts how the tree reads: comment lines per package (of non-blank lines in product `.ts`/`.tsx`
 * under `src/`, generated files left out), file headers longer than 10 lines, conditional spreads, citations of
 * `bench/HISTORY.md` and committed bench results. Prints a Markdown table; exits 0 whatever it finds.
 * Usage: `node scripts/tree-counts.mjs`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter(Boolean);
/** Generated files (openapi-typescript's schema, Prisma's client) say so in their first lines. */
const generated = (path) =>
  path.includes('/generated/') || /do not edit/i.test(readFileSync(join(root, path), 'utf8').slice(0, 300));
const product = tracked.filter(
  (path) => /^(apps|packages)\/[^/]+\/src\/.*\.tsx?$/.test(path) && !generated(path),
);

/** Comment and code lines of one TypeScript source: `//` lines and the lines of `/* … *\/` blocks. */
function countLines(text) {
  let comment = 0;
  let code = 0;
  let inBlock = false;
  let header = 0;
  let headerDone = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const isComment = inBlock || line.startsWith('//') || line.startsWith('/*');
    if (line.startsWith('/*') && !line.includes('*/')) inBlock = true;
    else if (inBlock && line.includes('*/')) inBlock = false;
    if (isComment) comment += 1;
    else code += 1;
    if (!headerDone) {
      if (isComment) header += 1;
      // The header is the first comment block alone: a docstring right after it is another's.
      if (!isComment || (!inBlock && !line.startsWith('//'))) headerDone = true;
    }
  }
  return { comment, code, header };
}

const byPackage = new Map();
const longHeaders = [];
let spreads = 0;
for (const path of product) {
  const text = readFileSync(join(root, path), 'utf8');
  const { comment, code, header } = countLines(text);
  const name = path.split('/').slice(0, 2).join('/');
  const total = byPackage.get(name) ?? { comment: 0, code: 0 };
  byPackage.set(name, { comment: total.comment + comment, code: total.code + code });
  if (header > 10) longHeaders.push(`${path} (${header})`);
  spreads += (text.match(/\.\.\.\([^()]*(?:===|!==) undefined \? \{\} :/g) ?? []).length;
}

const citations = tracked
  .filter((path) => /\.(ts|tsx|md|mjs|yaml|json)$/.test(path) && path !== 'scripts/tree-counts.mjs')
  .filter((path) => readFileSync(join(root, path), 'utf8').includes('HISTORY.md')).length;
const results = tracked.filter((path) => path.startsWith('bench/results/')).length;

console.log('| package | comment lines | of non-blank lines |');
console.log('|---|---|---|');
let all = { comment: 0, code: 0 };
for (const [name, { comment, code }] of [...byPackage].sort()) {
  all = { comment: all.comment + comment, code: all.code + code };
  console.log(`| ${name} | ${comment} | ${((100 * comment) / (comment + code)).toFixed(1)}% |`);
}
console.log(`| all | ${all.comment} | ${((100 * all.comment) / (all.comment + all.code)).toFixed(1)}% |`);
console.log('');
console.log(
  `- file headers over 10 lines: ${longHeaders.length}${longHeaders.length ? ` (${longHeaders.slice(0, 10).join(', ')}${longHeaders.length > 10 ? ', …' : ''})` : ''}`,
);
console.log(`- conditional spreads \`...(x === undefined ? {} : …)\`: ${spreads}`);
console.log(`- files citing bench/HISTORY.md: ${citations}`);
console.log(`- committed bench results files: ${results}`);
