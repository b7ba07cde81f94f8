'use strict';
/*
 * bench/ab.js - two builds of the addon (say, the engine before and after a
 * change) timed against each other in one process: table 3's mget of 1,000
 * keys and its loop of gets, 64-byte string values, rounds alternating A and
 * B (each round's order swapped every other round), each timed by the
 * process's CPU time (process.cpuUsage), which leaves out the time other
 * jobs hold the core but counts V8's helper threads (parallel scavenges),
 * so its ns per key run above table 3's wall-clock ones: the ratios are
 * the result. On the shared build machine wall-clock ratios of two
 * processes swing 2x-13x; these per-round ratios stayed within 0.79-1.27
 * for one build against itself (median 1.01, 41 rounds, load average 15).
 *
 *   node bench/ab.js A.node B.node [keys=100000] [rounds=41]
 *   AB_BATCHES=200 (the default): batches of 1,000 keys per round
 *
 * Prints the medians (min-max) of ns per key for each, the median of B/A
 * over the rounds, and each build's loop of gets over its mget (the issue's
 * ratio, goal >= 5). Each addon is loaded from a private copy, so one file
 * may be given twice to see the noise.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const [fileA, fileB] = process.argv.slice(2, 4);
if (!fileA || !fileB) {
  console.error('usage: node bench/ab.js A.node B.node [keys] [rounds]');
  process.exit(2);
}
const N = Number(process.argv[4] || 100000);
const ROUNDS = Number(process.argv[5] || 41);
const BATCHES = Number(process.env.AB_BATCHES || 200);
const SIZE = 1000;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'larder-ab-'));
function load(file, name) {
  const copy = path.join(tmp, name);
  fs.copyFileSync(file, copy);
  process.env.LARDER_NODE_ADDON = copy;
  const index = require.resolve('..');
  delete require.cache[index]; // a second instance of index.js, bound to this copy
  return require(index).LarderCache;
}
const CacheA = load(fileA, 'a.node');
const CacheB = load(fileB, 'b.node');

const keys = Array.from({ length: N }, (_, i) => `k${String(i).padStart(15, '0')}`); // as bench.js
const V64 = 'v'.repeat(64);
const a = new CacheA({ maxSize: 256 << 20, max: N * 2 });
const b = new CacheB({ maxSize: 256 << 20, max: N * 2 });
for (const k of keys) {
  a.set(k, V64);
  b.set(k, V64);
}
const batches = [];
for (let i = 0, s = 12345; i < BATCHES; i++) {
  const bt = new Array(SIZE);
  for (let j = 0; j < SIZE; j++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    bt[j] = keys[s % N];
  }
  batches.push(bt);
}

let sink = 0; // keeps the results alive
const cpuNs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
};
function mget(c) {
  const t0 = cpuNs();
  for (const bt of batches) sink += c.mget(bt).length;
  return (cpuNs() - t0) / (BATCHES * SIZE);
}
function loop(c) {
  const t0 = cpuNs();
  for (const bt of batches) for (const k of bt) if (c.get(k) !== undefined) sink++;
  return (cpuNs() - t0) / (BATCHES * SIZE);
}
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const cell = (xs, d = 1) => `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)})`;

for (const c of [a, b]) {
  if (c.mget(batches[0]).includes(undefined)) throw new Error('a key was missed: maxSize too small?');
}
mget(a); mget(b); loop(a); loop(b); // warm-up: V8 tiers both up
const r = { ma: [], mb: [], la: [], lb: [], ratio: [] };
for (let i = 0; i < ROUNDS; i++) {
  let ta;
  let tb;
  if (i & 1) {
    tb = mget(b);
    ta = mget(a);
  } else {
    ta = mget(a);
    tb = mget(b);
  }
  r.ma.push(ta);
  r.mb.push(tb);
  r.ratio.push(tb / ta);
  if (i % 3 === 0) {
    r.la.push(loop(a));
    r.lb.push(loop(b));
  }
}
console.log(`${N.toLocaleString('en')} keys, batches of ${SIZE}, ${ROUNDS} rounds, CPU time, load average ${os.loadavg()[0].toFixed(1)}`);
console.log(`mget ns per key: A ${cell(r.ma)}, B ${cell(r.mb)}; B/A by round ${cell(r.ratio, 3)}`);
console.log(`loop of gets ns per key: A ${cell(r.la)}, B ${cell(r.lb)}; loop / mget: A ${(median(r.la) / median(r.ma)).toFixed(2)}x, B ${(median(r.lb) / median(r.mb)).toFixed(2)}x`);
a.close();
b.close();
fs.rmSync(tmp, { recursive: true, force: true });
