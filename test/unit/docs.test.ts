import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const root = process.cwd();
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const markdown = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');

const anchorsIn = (text: string) => new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1])));

/** Every `[text](target)` outside code blocks, with the line it is on. */
function linksIn(text: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) return;
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) links.push({ target: m[1], line: i + 1 });
  });
  return links;
}

describe('the documentation', () => {
  it('keeps the README a guide: at most 200 lines, dated figures in docs/benchmark.md', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    // A measurement churns with every run; the guide should not (docs/benchmark.md keeps them).
    expect(readme).not.toMatch(/\b(req\/s|measured on|\d+ min \d+ s)\b/);
  });

  it.each(markdown)('%s links only to files and headings that exist', (file) => {
    const problems: string[] = [];
    for (const { target, line } of linksIn(read(file))) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto: (outside this repository)
      const [path, anchor] = target.split('#');
      const resolved = path ? relative(root, join(root, dirname(file), path)) : file;
      if (!existsSync(join(root, resolved))) {
        problems.push(`${file}:${line}: ${target} (no ${resolved})`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && statSync(join(root, resolved)).isFile() && !anchorsIn(read(resolved)).has(anchor)) {
        problems.push(`${file}:${line}: ${target} (no heading #${anchor} in ${resolved})`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('the README links every document in docs/', () => {
    const readme = read('README.md');
    const unlinked = markdown.filter((f) => f.startsWith('docs/') && !readme.includes(`](${f})`));
    expect(unlinked).toEqual([]);
  });
});
