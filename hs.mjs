import { readFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const self = new Map(); const incl = new Map();
let total = 0;
const walk = (node, stack) => {
  const f = node.callFrame;
  const key = `${f.functionName || '(anon)'} ${f.url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, 'dist/')}:${f.lineNumber + 1}`;
  const size = node.selfSize;
  total += size;
  self.set(key, (self.get(key) ?? 0) + size);
  const pkgs = new Set();
  for (const k of [...stack, key]) { const m = /^(\S+) (@[^/]+\/[^/]+|[^/ ]+)\//.exec(k); }
  for (const c of node.children) walk(c, [...stack, key]);
};
walk(p.head, []);
console.log('total sampled MB', (total / 1e6).toFixed(1));
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.argv[3] ?? 40))) console.log((v / 1e6).toFixed(2).padStart(8), k);
