'use strict';
/*
 * bench/instr.js - the driver bench/instr.sh runs under callgrind: N L2 gets
 * (or N mget keys in batches of 1,000) over table 2's working set (10,000
 * keys of 16 bytes made as bench.js makes them, 64-byte ASCII string values,
 * uniform random keys from a fixed seed), after 300,000 untimed ones so that
 * V8 has tiered the code up. Nothing is timed: instr.sh counts the
 * instructions of two runs with different N and divides the difference.
 *
 *   node bench/instr.js get|mget|getbuf|getutf8|null|mnull N
 *   (null, mnull: the driver's loop alone, for get and for mget)
 *
 * LARDER_INSTR_KEYS=100000 counts over 10^5 keys instead (table 3's larger
 * working set, where mget's 5x goal is measured).
 */
const { LarderCache } = require('..');

const [mode, nArg] = process.argv.slice(2);
const N = Number(nArg);
const KEYS = Number(process.env.LARDER_INSTR_KEYS) || 10000;
const BATCH = 1000;
const WARM = 300000;
const keys = Array.from({ length: KEYS }, (_, i) => `k${String(i).padStart(15, '0')}`);
const value = mode === 'getbuf' ? Buffer.alloc(64, 7) : mode === 'getutf8' ? `é${'v'.repeat(63)}` : 'v'.repeat(64);
const cache = new LarderCache({ maxSize: 64 << 20, max: KEYS * 2 });
for (const k of keys) cache.set(k, value);

// The key sequence, made before either run (xorshift32, fixed seed), so
// the loops below only index it.
const SEQ_MASK = (1 << 16) - 1;
const seq = new Uint32Array(SEQ_MASK + 1);
for (let i = 0, s = 2463534242; i <= SEQ_MASK; i++) {
  s ^= s << 13; s >>>= 0;
  s ^= s >>> 17;
  s ^= s << 5; s >>>= 0;
  seq[i] = s % KEYS;
}

let sink = 0;
let at = 0;
function gets(n) {
  for (let i = 0; i < n; i++, at++) if (cache.get(keys[seq[at & SEQ_MASK]]) !== undefined) sink++;
}
const batch = new Array(BATCH);
function mgets(n) {
  for (let done = 0; done < n; done += BATCH) {
    for (let i = 0; i < BATCH; i++, at++) batch[i] = keys[seq[at & SEQ_MASK]];
    sink += cache.mget(batch).length;
  }
}
function mnulls(n) {
  for (let done = 0; done < n; done += BATCH) {
    for (let i = 0; i < BATCH; i++, at++) batch[i] = keys[seq[at & SEQ_MASK]];
    sink += batch.length;
  }
}
function nulls(n) {
  for (let i = 0; i < n; i++, at++) if (keys[seq[at & SEQ_MASK]] !== undefined) sink++;
}
const run = { mget: mgets, null: nulls, mnull: mnulls }[mode] || gets;
run(WARM);
run(N);
if (sink !== WARM + N) throw new Error(`expected ${WARM + N} hits, got ${sink}`);
cache.close();
