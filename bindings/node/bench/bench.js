'use strict';
/*
 * bench/bench.js - the Node binding's six benchmark tables, larder beside
 * Map and lru-cache (the npm devDependency) in the same run:
 *
 *   npm run bench                     (= node --expose-gc bench/bench.js)
 *   node --expose-gc bench/bench.js --quick     (smoke: 1 round, small)
 *   node --expose-gc bench/bench.js --only 1,2  (some tables)
 *   node --expose-gc bench/bench.js --only 4 --gc 4a  (some of table 4's variants)
 *   node --expose-gc bench/bench.js --rounds 3        (rounds per cell; default 5)
 *
 * Tables 1-3 run in this process, engines interleaved round by round; tables
 * 4-6 run each engine in a fresh child process per round (heap, GC and RSS
 * figures would otherwise carry over), alternating engines. Every cell is
 * the median of the rounds with the min-max range; ratios compare medians of
 * the same run. Warm-up: each timed loop runs once untimed first, and every
 * entry is written (pages faulted in) before timing starts.
 */
const { execFileSync } = require('node:child_process');
const { PerformanceObserver, performance } = require('node:perf_hooks');
const { Worker, isMainThread, workerData, parentPort } = require('node:worker_threads');
const path = require('node:path');
const { LarderCache } = require('..');
const { LRUCache } = require('lru-cache');

const args = process.argv.slice(2);
const QUICK = args.includes('--quick');
const onlyArg = args.indexOf('--only');
const ONLY = onlyArg >= 0 ? args[onlyArg + 1].split(',').map(Number) : [1, 2, 3, 4, 5, 6];
const roundsArg = args.indexOf('--rounds');
const ROUNDS = roundsArg >= 0 ? Number(args[roundsArg + 1]) : QUICK ? 1 : 5;
const gcArg = args.indexOf('--gc');
const GC_VARIANTS = gcArg >= 0 ? args[gcArg + 1].split(',') : ['4a', '4b', '4c', '4d'];

/* ---- helpers --------------------------------------------------------------- */

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function cell(xs, digits = 1) {
  const m = median(xs);
  if (xs.length === 1) return m.toFixed(digits);
  return `${m.toFixed(digits)} (${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)})`;
}

function table(title, header, rows) {
  console.log(`\n${title}\n`);
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

function key16(i) {
  return `k${String(i).padStart(15, '0')}`; // 16 bytes
}

/* xorshift32, so every engine sees the same key sequence */
function keySequence(n, range, seed) {
  const out = new Uint32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    out[i] = s % range;
  }
  return out;
}

/* Runs fn(ops) once untimed, then rounds times; returns ns per op per round. */
function timeRounds(fns, ops, rounds) {
  const res = fns.map(() => []);
  for (const f of fns) f.fn(ops);
  for (let r = 0; r < rounds; r++) {
    fns.forEach((f, i) => {
      const t0 = process.hrtime.bigint();
      f.fn(ops);
      res[i].push(Number(process.hrtime.bigint() - t0) / ops);
    });
  }
  return res;
}

const V64 = 'v'.repeat(64);

/* ---- 1. set throughput ------------------------------------------------------ */

function table1() {
  const CAP = 10000;
  const KEYS = 20000;
  const OPS = QUICK ? 50000 : 400000;
  const keys = Array.from({ length: KEYS }, (_, i) => key16(i));
  const seq = keySequence(OPS, KEYS, 1);
  const map = new Map();
  const lru = new LRUCache({ max: CAP });
  const l1 = new LarderCache({ max: CAP, l1: { max: 1000 } });
  const l2 = new LarderCache({ max: CAP });
  const loop = (c) => (n) => { for (let i = 0; i < n; i++) c.set(keys[seq[i]], V64); };
  const engines = [
    { name: 'Map (unbounded: holds all 20,000)', fn: loop(map) },
    { name: 'lru-cache', fn: loop(lru) },
    { name: 'larder L1+L2', fn: loop(l1) },
    { name: 'larder L2 only', fn: loop(l2) },
  ];
  const res = timeRounds(engines, OPS, ROUNDS);
  const lruMed = median(res[1]);
  table('1. set throughput: capacity 10,000 entries, 20,000 distinct 16-byte keys (evicting), 64-byte string values',
    ['engine', 'M sets/s', 'ns per set', 'time / lru-cache'],
    engines.map((e, i) => [e.name, cell(res[i].map((ns) => 1000 / ns), 2), cell(res[i]), `${(median(res[i]) / lruMed).toFixed(2)}x`]));
  console.log(`\nlarder entries after the run: L1+L2 ${l1.size}, L2 only ${l2.size} (max 10,000; the engine bounds bytes, max steers them)`);
  l1.close();
  l2.close();
}

/* ---- 2. get throughput, 100% hits ------------------------------------------- */

function table2() {
  const N = 10000;
  const OPS = QUICK ? 200000 : 2000000;
  const keys = Array.from({ length: N }, (_, i) => key16(i));
  const seq = keySequence(OPS, N, 2);
  const map = new Map();
  const lru = new LRUCache({ max: N });
  const withL1 = new LarderCache({ maxSize: 64 << 20, l1: { max: N } });
  const policies = ['s3fifo-tuned', 's3fifo', 'fifo', 'lru', 'wtinylfu', 'wtinylfu-tuned', 'arc'];
  const l2 = policies.map((policy) => new LarderCache({ maxSize: 64 << 20, policy, max: N * 2 }));
  const buf = new LarderCache({ maxSize: 64 << 20 });
  const B64 = Buffer.alloc(64, 7);
  for (const k of keys) {
    map.set(k, V64);
    lru.set(k, V64);
    withL1.set(k, V64);
    withL1.get(k);
    for (const c of l2) c.set(k, V64);
    buf.set(k, B64);
  }
  let sink = 0;
  const loop = (get) => (n) => {
    for (let i = 0; i < n; i++) if (get(keys[seq[i]]) !== undefined) sink++;
  };
  l2[0].get(keys[0]); // leaves a 64-byte string value in the scratch for probe
  const engines = [
    { name: 'Map', fn: loop((k) => map.get(k)) },
    { name: 'lru-cache', fn: loop((k) => lru.get(k)) },
    { name: 'larder L1 hit', fn: loop((k) => withL1.get(k)) },
    ...policies.map((p, i) => ({ name: `larder L2 hit, ${p}${i === 0 ? ' (default)' : ''}`, fn: loop((k) => l2[i].get(k)) })),
    { name: 'larder L2 hit, 64-byte Buffer value', fn: loop((k) => buf.get(k)) },
    { name: 'crossing only (probe: same call, no engine)', fn: loop((k) => l2[0].probe(k, 65)) },
  ];
  const res = timeRounds(engines, OPS, ROUNDS);
  const engineOnly = [];
  for (let r = 0; r < ROUNDS; r++) engineOnly.push(l2[0].engineLoop(keys, seq));
  engines.push({ name: 'engine alone: larder_get in a C loop, same keys and order (default policy)' });
  res.push(engineOnly);
  const lruMed = median(res[1]);
  table('2. get throughput, 100% hits: 10,000 keys of 16 bytes, 64-byte string values, uniform random keys',
    ['engine', 'M gets/s', 'ns per get', 'time / lru-cache'],
    engines.map((e, i) => [e.name, cell(res[i].map((ns) => 1000 / ns), 2), cell(res[i]), `${(median(res[i]) / lruMed).toFixed(2)}x`]));
  const l2Med = median(res[3]);
  const probeMed = median(res[res.length - 2]);
  const cMed = median(engineOnly);
  console.log(`\nL2 get (default policy) ${l2Med.toFixed(1)} ns = crossing ${probeMed.toFixed(1)} ns ` +
    `(N-API call, key encoding, string result) + engine ${(l2Med - probeMed).toFixed(1)} ns (larder_get and its copy); ` +
    `the same larder_get in a C loop takes ${cMed.toFixed(1)} ns, so V8's work between gets adds ` +
    `${(l2Med - probeMed - cMed).toFixed(1)} ns of cache misses to the engine's share`);
  withL1.close();
  for (const c of l2) c.close();
  buf.close();
  return sink;
}

/* ---- 3. batches --------------------------------------------------------------- */

function table3() {
  const rows = [];
  const splits = [];
  for (const n of [10000, 100000]) table3For(n, rows, splits);
  table('3. batches: 16-byte keys, 64-byte string values, random keys per batch, two working sets',
    ['keys in cache', 'keys per batch', 'engine', 'ns per key', 'speed vs larder loop'], rows);
  console.log(`\nWhere mget's time goes (medians):\n${splits.join('\n')}`);
}

function table3For(N, rows, splits) {
  const keys = Array.from({ length: N }, (_, i) => key16(i));
  const lru = new LRUCache({ max: N });
  const c = new LarderCache({ maxSize: 256 << 20, max: N * 2 });
  for (const k of keys) {
    lru.set(k, V64);
    c.set(k, V64);
  }
  for (const size of [100, 1000]) {
    const BATCHES = QUICK ? 200 : 2000;
    const seq = keySequence(BATCHES * size, N, 3 + size);
    const batches = [];
    for (let b = 0; b < BATCHES; b++) batches.push(Array.from(seq.subarray(b * size, (b + 1) * size), (i) => keys[i]));
    let sink = 0;
    const engines = [
      { name: 'lru-cache loop', fn: () => { for (const bt of batches) for (const k of bt) if (lru.get(k) !== undefined) sink++; } },
      { name: 'larder loop of get', fn: () => { for (const bt of batches) for (const k of bt) if (c.get(k) !== undefined) sink++; } },
      { name: 'larder mget', fn: () => { for (const bt of batches) sink += c.mget(bt).length; } },
    ];
    // Where mget's time goes: the JavaScript it runs around the native call
    // (index.js's key check, lengths and the keys' rope before it; one slice per
    // value after it, here over a string of the same shape as the native
    // call returns), and the engine's batch alone in C. The rest of mget is
    // the native call's own work: flattening and reading the keys' rope, copying values
    // into the scratch, making the result string.
    const lens = new Int32Array(size);
    const shape = `A${V64}`.repeat(size);
    engines.push({ name: "mget's JavaScript alone (lengths and the keys' rope before, a slice per value after)", fn: () => {
      for (const bt of batches) {
        let rope = '';
        for (let i = 0; i < size; i++) {
          lens[i] = bt[i].length;
          rope += bt[i];
        }
        sink += rope.length;
        const out = new Array(size);
        for (let i = 0, off = 0; i < size; i++, off += 65) out[i] = shape.slice(off + 1, off + 65);
        sink += out.length;
      }
    } });
    const res = timeRounds(engines, BATCHES * size, ROUNDS);
    // The bound on mget's gain: the engine's own work per key, with no crossing at all.
    const engineOnly = [];
    const engineBatch = [];
    for (let r = 0; r < ROUNDS; r++) {
      engineOnly.push(c.engineLoop(keys, seq));
      engineBatch.push(c.engineLoop(keys, seq, size));
    }
    engines.push({ name: 'engine alone: larder_get in a C loop over the same keys' });
    res.push(engineOnly);
    engines.push({ name: `engine alone: larder_get_batch of ${size} in a C loop over the same keys` });
    res.push(engineBatch);
    const loopMed = median(res[1]);
    engines.forEach((e, i) => rows.push([N.toLocaleString('en'), String(size), e.name, cell(res[i]),
      `${(loopMed / median(res[i])).toFixed(2)}x`]));
    const [mg, js, eb] = [median(res[2]), median(res[3]), median(engineBatch)];
    splits.push(`${N.toLocaleString('en')} keys, batches of ${size}: mget ${mg.toFixed(1)} ns per key = ` +
      `JavaScript ${js.toFixed(1)} + engine batch ${eb.toFixed(1)} + the native call's own work ` +
      `${(mg - js - eb).toFixed(1)} (loop of gets ${loopMed.toFixed(1)})`);
  }
  c.close();
}

/* ---- child processes for 4-6 ----------------------------------------------- */

function child(scenario, engine, extra = []) {
  const flags = QUICK ? ['--quick'] : [];
  const out = execFileSync(process.execPath, ['--expose-gc', __filename, ...flags, '--child', scenario, engine, ...extra],
    { encoding: 'utf8', maxBuffer: 1 << 20 });
  return JSON.parse(out.trim().split('\n').pop());
}

/* perf_hooks' gc entry kinds (detail.kind) and its forced flag (detail.flags). */
const { constants: PERF } = require('node:perf_hooks');
const GC_KINDS = {
  [PERF.NODE_PERFORMANCE_GC_MINOR]: 'minor', [PERF.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [PERF.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [PERF.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

function gcObserver() {
  const pauses = [];
  const take = (e) => pauses.push({ ms: e.duration, kind: GC_KINDS[e.detail?.kind] || String(e.detail?.kind),
    forced: (e.detail?.flags & PERF.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0, at: e.startTime });
  const obs = new PerformanceObserver((list) => { for (const e of list.getEntries()) take(e); });
  obs.observe({ entryTypes: ['gc'] });
  return {
    /* gc entries reach observers from the event loop: let it run first. */
    async stop(t0) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const e of obs.takeRecords()) take(e);
      obs.disconnect();
      const byMs = pauses.slice().sort((a, b) => b.ms - a.ms);
      // The three longest pauses, with their kind and when they came (ms into the timed loop).
      const top = byMs.slice(0, 3).map((p) => ({ ms: p.ms, kind: p.kind, forced: p.forced, atMs: p.at - t0 }));
      return { count: pauses.length, total: pauses.reduce((a, p) => a + p.ms, 0), worst: byMs.length ? byMs[0].ms : 0, top };
    },
  };
}

/*
 * Table 4 mirrors the GC benchmark the OffHeap add-on publishes (its
 * benchmarks/gc_pressure_child.js, one child process per engine): 500,000
 * keys `key-<i>`, preloaded with ~550-byte objects; then 1,000,000
 * operations on uniformly random keys, a set of a new object on every 10th
 * and a get otherwise, each timed with performance.now(); every 200
 * operations the program allocates 300 short-lived request objects, and
 * every 10,000 it forces a full collection with global.gc() (100 in all:
 * the add-on's "sync GC sweep checks", which its published pause totals are
 * made of). PerformanceObserver counts every collection, forced or not.
 * Both caches hand back what the add-on's get hands back: the object (lru-
 * cache the one it holds, larder a copy parsed from JSON, as the add-on's
 * unwrapValue does). The add-on ran with a 10,000-entry L1, so larder does
 * both with and without one. Variants, labelled: values kept and returned as
 * JSON strings (no parse on either side), and no forced collections (only
 * those V8 starts itself). Where this differs from the add-on's script: the
 * key order and the pseudo-random fields come from a seeded xorshift, not
 * Math.random(), so that every engine sees the same operations; the
 * add-on's compression row is larder's own LZ4 (compression: true), whose
 * sizes differ from the add-on's codec. Each operation makes its key string
 * (`key-${i}`, a 10-character flat string) before it is timed; variant 4d
 * keeps the earlier harness's table of all 500,000 key strings instead,
 * whose 20 MB every forced collection marks (childGc).
 */
function gcPayload(id, r) {
  return {
    id,
    title: `Product Details Model #${id}`,
    price: (r % 50000) / 100,
    active: true,
    tags: ['electronics', 'retail', 'promo', 'imported'],
    description: 'a'.repeat(400),
  };
}

/* The add-on's allocateRequestGarbage(): 300 request objects that die at once. */
function requestGarbage(r) {
  const list = [];
  for (let i = 0; i < 300; i++) {
    list.push({
      requestId: r + i,
      route: `/api/v1/products/${(r + i) % 1000}`,
      timestamp: Date.now(),
      meta: { ua: 'Mozilla/5.0', ip: '127.0.0.1', method: 'GET' },
    });
  }
  return list.length;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p / 100))];
}

/*
 * engine: none | lru-cache | larder | larder-l1 | larder-z; values: object |
 * string; gcMode: forced | natural; keyMode: made (each operation makes its
 * key string, as a request handler gets it) | table (the harness holds all
 * 500,000 key strings in an array for the whole run, as table 4 did before:
 * 20 MB of the program's heap that every forced collection marks, and that
 * costs lru-cache nothing, since its Map holds the same strings, while it
 * is most of the heap a larder run has).
 */
async function childGc(engine, values, gcMode, keyMode) {
  const KEYS = QUICK ? 50000 : 500000;
  const OPS = QUICK ? 100000 : 1000000;
  const GARBAGE_EVERY = 200;
  const FORCE_EVERY = gcMode === 'forced' ? 10000 : 0;
  const table = keyMode === 'table' ? Array.from({ length: KEYS }, (_, i) => `key-${i}`) : null;
  const keyOf = table !== null ? (i) => table[i] : (i) => `key-${i}`;
  const seq = keySequence(OPS, KEYS, 4);
  const rnd = keySequence(OPS, 2 ** 31, 5);
  const encode = values === 'string' ? (v) => JSON.stringify(v) : (v) => v;
  const valueBytes = JSON.stringify(gcPayload(KEYS - 1, rnd[0])).length;
  global.gc();
  const rss0 = process.memoryUsage().rss;
  let cache = null;
  if (engine === 'lru-cache') cache = new LRUCache({ max: KEYS });
  if (engine === 'larder') cache = new LarderCache({ max: KEYS, maxSize: 1024 * 1024 * 1024 });
  if (engine === 'larder-l1') cache = new LarderCache({ max: KEYS, maxSize: 1024 * 1024 * 1024, l1: { max: 10000 } });
  if (engine === 'larder-z') cache = new LarderCache({ max: KEYS, maxSize: 1024 * 1024 * 1024, compression: true });
  if (cache !== null) for (let i = 0; i < KEYS; i++) cache.set(keyOf(i), encode(gcPayload(i, rnd[i % OPS])));
  global.gc();
  const lat = new Float64Array(OPS);
  let hits = 0;
  let junk = 0;
  const obs = gcObserver();
  const t0 = performance.now();
  for (let i = 0; i < OPS; i++) {
    const key = keyOf(seq[i]);
    const s = performance.now();
    if (cache === null) {
      if (i % 10 !== 0) hits++; // the program alone: the same loop, no cache
    } else if (i % 10 === 0) {
      cache.set(key, encode(gcPayload(i, rnd[i])));
    } else if (cache.get(key) !== undefined) {
      hits++;
    }
    lat[i] = performance.now() - s;
    if (i % GARBAGE_EVERY === 0) junk += requestGarbage(rnd[i]);
    if (FORCE_EVERY !== 0 && i % FORCE_EVERY === 0) global.gc();
  }
  const ms = performance.now() - t0;
  const gc = await obs.stop(t0);
  global.gc();
  const mem = process.memoryUsage();
  if (engine.startsWith('larder')) cache.close();
  lat.sort();
  let sum = 0;
  for (let i = 0; i < OPS; i++) sum += lat[i];
  return { ms, avgUs: sum / OPS * 1000, p99Us: percentile(lat, 99) * 1000, gc, heapMb: mem.heapUsed / 2 ** 20,
    rssDeltaMb: (mem.rss - rss0) / 2 ** 20, valueBytes, keys: KEYS, ops: OPS, hits, junk };
}

const GC_ENGINES = {
  none: 'no cache (the program alone)',
  'lru-cache': 'lru-cache',
  larder: 'larder (L2 only)',
  'larder-l1': 'larder with a 10,000-entry L1 (as the add-on ran)',
  'larder-z': 'larder (L2 only), compression: true',
};

function table4() {
  const variants = [
    { id: '4a', values: 'object', gcMode: 'forced', engines: ['none', 'lru-cache', 'larder', 'larder-l1', 'larder-z'],
      title: 'the add-on\'s methodology: objects in and out, a forced full GC every 10,000 ops' },
    { id: '4b', values: 'string', gcMode: 'forced', engines: ['none', 'lru-cache', 'larder'],
      title: 'variant: values kept and returned as JSON strings (no parse on either side), forced GCs as in 4a' },
    { id: '4c', values: 'object', gcMode: 'natural', engines: ['none', 'lru-cache', 'larder'],
      title: 'variant: objects in and out as in 4a, no forced GC (only the collections V8 starts)' },
    { id: '4d', values: 'object', gcMode: 'forced', keyMode: 'table', engines: ['none', 'lru-cache', 'larder'],
      title: 'the earlier harness: 4a with every key string held in an array by the program for the whole run' },
  ];
  for (const v of variants.filter((x) => GC_VARIANTS.includes(x.id))) {
    const res = Object.fromEntries(v.engines.map((e) => [e, []]));
    for (let r = 0; r < ROUNDS; r++) for (const e of v.engines) res[e].push(child('gc', e, [v.values, v.gcMode, v.keyMode || 'made']));
    const rows = v.engines.map((e) => {
      const rs = res[e];
      const valueMb = e === 'none' ? 0 : rs[0].keys * rs[0].valueBytes / 2 ** 20;
      return [GC_ENGINES[e], cell(rs.map((x) => x.ms), 0), cell(rs.map((x) => x.avgUs), 2), cell(rs.map((x) => x.p99Us), 1),
        cell(rs.map((x) => x.gc.count), 0), cell(rs.map((x) => x.gc.total), 1), cell(rs.map((x) => x.gc.worst), 2),
        cell(rs.map((x) => x.heapMb), 1), cell(rs.map((x) => x.rssDeltaMb), 0),
        cell(rs.map((x) => (x.rssDeltaMb - valueMb) * 2 ** 20 / x.keys), 0)];
    });
    const s = res['lru-cache'][0];
    table(`${v.id}. GC pressure, ${v.title}: ${s.keys.toLocaleString('en')} keys preloaded, ${s.ops.toLocaleString('en')} ops ` +
      `(90% get, 10% set) on random keys, ~${s.valueBytes}-byte JSON values, 300 request objects allocated every 200 ops`,
    ['engine', 'total ms', 'avg op us', 'p99 op us', 'GC count', 'total GC pause ms', 'worst GC pause ms',
      'heap used at end MB', 'RSS delta MB', 'RSS delta beyond the value bytes, per key B'], rows);
    const l = (e, f) => median(res[e].map(f));
    for (const e of v.engines.filter((x) => x.startsWith('larder'))) {
      console.log(`\n${GC_ENGINES[e]} vs lru-cache: total GC pause ${(l('lru-cache', (x) => x.gc.total) / l(e, (x) => x.gc.total)).toFixed(1)}x less, ` +
        `worst pause ${(l('lru-cache', (x) => x.gc.worst) / l(e, (x) => x.gc.worst)).toFixed(1)}x shorter, ` +
        `duration ${(l(e, (x) => x.ms) / l('lru-cache', (x) => x.ms)).toFixed(2)}x lru-cache's; GC pause added to the program alone: ` +
        `lru-cache ${(l('lru-cache', (x) => x.gc.total) - l('none', (x) => x.gc.total)).toFixed(0)} ms, ` +
        `this ${(l(e, (x) => x.gc.total) - l('none', (x) => x.gc.total)).toFixed(0)} ms`);
    }
    // Where the worst pause comes from: each round's three longest pauses (kind, forced, when).
    for (const e of v.engines) {
      console.log(`\n${v.id} ${GC_ENGINES[e]}, longest pauses per round (ms kind[forced] @ms into the loop):`);
      for (const x of res[e]) {
        console.log('  ' + x.gc.top.map((p) => `${p.ms.toFixed(2)} ${p.kind}${p.forced ? '[forced]' : ''} @${p.atMs.toFixed(0)}`).join(', '));
      }
    }
  }
}

function childBuffers(engine) {
  const KEYS = QUICK ? 50000 : 500000;
  const VB = 500;
  global.gc();
  const m0 = process.memoryUsage();
  const cache = engine === 'lru-cache' ? new LRUCache({ max: KEYS })
    : new LarderCache({ max: KEYS, maxSize: 1024 * 1024 * 1024 });
  for (let i = 0; i < KEYS; i++) {
    const b = Buffer.allocUnsafe(VB);
    b.fill(i & 255);
    cache.set(key16(i), b);
  }
  global.gc();
  const m1 = process.memoryUsage();
  const res = { keys: KEYS, valueBytes: VB, heapDeltaMb: (m1.heapUsed - m0.heapUsed) / 2 ** 20,
    externalDeltaMb: (m1.external + m1.arrayBuffers - m0.external - m0.arrayBuffers) / 2 ** 20,
    rssDeltaMb: (m1.rss - m0.rss) / 2 ** 20 };
  if (engine !== 'lru-cache') res.calculated = cache.calculatedSize;
  return res;
}

function table5() {
  const res = { 'lru-cache': [], larder: [] };
  for (let r = 0; r < ROUNDS; r++) for (const e of Object.keys(res)) res[e].push(child('buffers', e));
  const rows = Object.entries(res).map(([e, rs]) => {
    const keys = rs[0].keys;
    const valueMb = keys * rs[0].valueBytes / 2 ** 20;
    return [e, cell(rs.map((x) => x.heapDeltaMb), 1), cell(rs.map((x) => x.rssDeltaMb), 0),
      cell(rs.map((x) => (x.rssDeltaMb - valueMb) * 2 ** 20 / keys), 0)];
  });
  table(`5. Buffers: ${res.larder[0].keys.toLocaleString('en')} keys of 16 bytes with 500-byte Buffer values`,
    ['engine', 'V8 heap used, delta MB', 'RSS delta MB', 'RSS per entry beyond the value bytes, B'], rows);
}

/* A 500-character string (a cached page fragment), different per key. */
function stringValue(i) {
  const head = `<li id="item-${i}">`;
  return head + 'x'.repeat(500 - head.length);
}

/* Table 6: a child per (engine, workers); its workers read for a fixed time. */
async function childWorkers(engine, workersArg) {
  const WORKERS = Number(workersArg);
  const KEYS = QUICK ? 20000 : 100000;
  const MS = QUICK ? 300 : 1000;
  const name = 'bench-shared';
  const m0 = process.memoryUsage().rss;
  let shared = null;
  if (engine === 'larder') {
    shared = new LarderCache({ name, max: KEYS, maxSize: 512 << 20 });
    for (let i = 0; i < KEYS; i++) shared.set(key16(i), stringValue(i));
  }
  const ws = [];
  const exited = [];
  for (let w = 0; w < WORKERS; w++) {
    const worker = new Worker(__filename, { workerData: { engine, name, KEYS, MS, w } });
    exited.push(new Promise((resolve) => worker.once('exit', resolve)));
    ws.push(worker);
  }
  const ready = ws.map((w) => new Promise((resolve) => w.once('message', resolve)));
  await Promise.all(ready); // every worker filled (lru-cache) or opened (larder)
  const rss = process.memoryUsage().rss;
  const done = ws.map((w) => new Promise((resolve) => w.once('message', resolve)));
  for (const w of ws) w.postMessage('go');
  const counts = await Promise.all(done);
  await Promise.all(exited);
  if (shared) shared.close();
  const gets = counts.reduce((a, b) => a + b.gets, 0);
  return { getsPerSec: gets / (MS / 1000), rssMb: (rss - m0) / 2 ** 20, bad: counts.reduce((a, b) => a + b.bad, 0) };
}

function workerMain() {
  const { engine, name, KEYS, MS, w } = workerData;
  let cache;
  if (engine === 'larder') {
    cache = new LarderCache({ name });
  } else {
    cache = new LRUCache({ max: KEYS });
    for (let i = 0; i < KEYS; i++) cache.set(key16(i), stringValue(i));
  }
  const keys = Array.from({ length: 4096 }, (_, i) => key16((i * 7919 + w * 104729) % KEYS));
  let bad = 0;
  const readFor = (ms) => {
    let gets = 0;
    const end = performance.now() + ms;
    while (performance.now() < end) {
      for (let i = 0; i < 4096; i++) {
        const v = cache.get(keys[i]);
        if (v === undefined || v.length !== 500) bad++;
      }
      gets += 4096;
    }
    return gets;
  };
  readFor(100); // warm-up: the JIT settles before the timed phase
  global.gc();
  parentPort.postMessage('ready');
  parentPort.once('message', () => {
    const gets = readFor(MS);
    if (engine === 'larder') cache.close();
    parentPort.postMessage({ gets, bad });
  });
}

function table6() {
  const rows = [];
  const rounds = QUICK ? 1 : 3;
  for (const n of [1, 2, 4]) {
    const res = { 'lru-cache': [], larder: [] };
    for (let r = 0; r < rounds; r++) for (const e of Object.keys(res)) res[e].push(child('workers', e, [String(n)]));
    for (const [e, rs] of Object.entries(res)) {
      if (rs.some((x) => x.bad)) throw new Error(`table 6: ${e} read a bad value`);
      rows.push([String(n), e === 'lru-cache' ? 'lru-cache, one per worker' : 'larder, one shared cache',
        cell(rs.map((x) => x.getsPerSec / 1e6), 2), cell(rs.map((x) => x.rssMb), 0)]);
    }
  }
  table(`6. worker threads reading 500-byte string values of ${QUICK ? '20,000' : '100,000'} keys (${rounds} rounds; 2 cores, so 4 workers share them)`,
    ['workers', 'engine', 'M gets/s, all workers', 'RSS after load MB (caches + workers)'], rows);
}

/* ---- main ---------------------------------------------------------------- */

async function main() {
  if (!isMainThread) return workerMain();
  const ci = args.indexOf('--child');
  if (ci >= 0) {
    const [scenario, engine, ...extra] = args.slice(ci + 1);
    const fn = { gc: childGc, buffers: childBuffers, workers: childWorkers }[scenario];
    const res = await fn(engine, ...extra);
    process.stdout.write(`${JSON.stringify(res)}\n`);
    return undefined;
  }
  console.log(`larder Node.js binding benchmarks: node ${process.version}, ${ROUNDS} round(s), ` +
    `medians (min-max); ${new Date().toISOString()}`);
  const tables = { 1: table1, 2: table2, 3: table3, 4: table4, 5: table5, 6: table6 };
  for (const t of ONLY) await tables[t]();
  return undefined;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
