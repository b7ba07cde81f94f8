'use strict';
/*
 * mget against a loop of get: for any batch, mget(keys) must return exactly
 * what keys.map((k) => get(k)) returns, whichever of its paths (one batch
 * string, Latin-1 or UTF-8; per-value decoding; joined or per-element keys)
 * the batch takes. Random batches over every value type, misses, expired
 * entries, repeated keys, and batches larger than the addon's scratch and
 * length array. Buffer values of a batch are views of one copy of its
 * bytes: each holds its own bytes, and no later call changes them.
 */
const test = require('node:test');
const assert = require('node:assert/strict');
const v8 = require('node:v8');
const { LarderCache, waitFor } = require('./helpers.js');

const SEED = Number(process.env.LARDER_NODE_SEED) || (Date.now() % 1e9) + 1;

function rng(seed) {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s % n;
  };
}

/* A value of every kind the binding stores; kind picks which. */
function valueOf(kind, i) {
  switch (kind) {
    case 0: return `ascii-${i}-${'x'.repeat(i % 70)}`;
    case 1: return `żółw-${i} 🐢 ${'é'.repeat(i % 9)}`;
    case 2: return '';
    case 3: return { i, s: `o${i}`, a: [i, 'ü', null], n: { t: true } };
    case 4: return i;
    case 5: return [`j${i}`, i % 2 === 0];
    case 6: return Buffer.from([i & 0xff, 0xf0, 0x9f, 0, 0x80, (i * 7) & 0xff]);
    case 7: return new Uint8Array([1, 2, i & 0xff]);
    case 8: return 'B'.repeat(70000 + i); // over the initial 64 KiB scratch
    default: return `k${i}`;
  }
}
const KINDS = 10;

function keyOf(i) {
  if (i % 11 === 0) return `ключ-${i}`; // not ASCII: the per-element key path
  return `key-${i}`;
}

/* mget(keys) deep-equals keys.map(get), element by element, with where it differs. */
function assertSameAsGets(c, keys, what) {
  const want = keys.map((k) => c.get(k));
  const got = c.mget(keys);
  assert.equal(got.length, keys.length, what);
  for (let i = 0; i < keys.length; i++) {
    assert.deepEqual(got[i], want[i], `${what}: key ${i} (${String(keys[i])}), seed ${SEED}`);
  }
}

test(`mget returns what a loop of get returns: every value type, misses, repeats (seed ${SEED})`, () => {
  const c = new LarderCache({ maxSize: 64 << 20 });
  const N = 3000;
  for (let i = 0; i < N; i++) {
    // Mostly text, so that many batches are all-text and take the one-string paths.
    const kind = i % 3 === 0 ? i % KINDS : i % 2;
    if (kind === 8 && i > 200) continue; // a few large values are enough
    c.set(keyOf(i), valueOf(kind, i));
  }
  const r = rng(SEED);
  for (let round = 0; round < 200; round++) {
    const n = [1, 2, 3, 17, 100, 1000, 1500][r(7)];
    const textOnly = r(3) === 0;
    const asciiOnly = r(4) === 0;
    const keys = [];
    for (let j = 0; j < n; j++) {
      let i = r(N + N / 10); // about 9% misses
      if (textOnly) i -= i % 3 === 0 ? 1 : 0;
      if (asciiOnly) i = i % 11 === 0 ? i + 1 : i;
      keys.push(r(50) === 0 && keys.length > 0 ? keys[r(keys.length)] : keyOf(i));
    }
    assertSameAsGets(c, keys, `round ${round}, ${n} keys`);
  }
  // Buffer keys beside string keys, and every key a miss.
  assertSameAsGets(c, [Buffer.from('key-1'), 'key-2', new Uint8Array(Buffer.from('key-4'))], 'view keys');
  assertSameAsGets(c, Array.from({ length: 1200 }, (_, i) => `absent-${i}`), 'all misses');
  c.close();
});

test('a batch string of strings alone is cut without parsing; with a JSON value among them, that one is parsed', () => {
  const c = new LarderCache({ maxSize: 16 << 20 });
  // Strings that are JSON texts must come back as those strings, in either batch string.
  const strings = ['{"a":1}', '[1,2]', '3', 'plain', '"q"', 'żółw {"b":2}', 'null'];
  strings.forEach((v, i) => c.set(`s${i}`, v));
  c.set('json', { a: 1 });
  c.set('jsonUtf8', { ż: 'ł' });
  const ascii = strings.slice(0, 5);
  const keys = (vs) => vs.map((v) => `s${strings.indexOf(v)}`);
  for (const vs of [ascii, strings]) {
    assert.deepEqual(c.mget([...keys(vs), 'missing']), [...vs, undefined]);
    assert.deepEqual(c.mget([...keys(vs), 'json']), [...vs, { a: 1 }]);
    assert.deepEqual(c.mget(['jsonUtf8', ...keys(vs)]), [{ ż: 'ł' }, ...vs]);
  }
  c.close();
});

test('Buffer values of a batch: views of one copy, each its own bytes, untouched by later calls', () => {
  const c = new LarderCache({ maxSize: 16 << 20 });
  const vals = [Buffer.from([1, 2, 3]), Buffer.alloc(0), Buffer.alloc(300, 9), new Uint8Array([7])];
  vals.forEach((v, i) => c.set(`b${i}`, v));
  c.set('s', 'str');
  c.set('j', { j: 1 });
  const keys = ['s', 'b0', 'missing', 'b1', 'j', 'b2', 'b3'];
  const want = ['str', Buffer.from([1, 2, 3]), undefined, Buffer.alloc(0), { j: 1 }, Buffer.alloc(300, 9), Buffer.from([7])];
  const first = c.mget(keys);
  assert.deepEqual(first, want);
  for (const i of [1, 3, 5, 6]) assert.ok(Buffer.isBuffer(first[i]));
  // Writing one value changes neither its neighbours nor the cache.
  first[1].fill(0xee);
  assert.deepEqual(first[5], Buffer.alloc(300, 9));
  assert.deepEqual(first[6], Buffer.from([7]));
  assert.deepEqual(c.get('b0'), Buffer.from([1, 2, 3]));
  // Later batches, gets and writes through the scratch leave them as they were.
  c.set('b2', Buffer.alloc(300, 1));
  assert.deepEqual(c.mget(['b2', 'b3', 'b0']), [Buffer.alloc(300, 1), Buffer.from([7]), Buffer.from([1, 2, 3])]);
  c.get('b2');
  assert.deepEqual(first[5], Buffer.alloc(300, 9));
  assert.deepEqual(first[6], Buffer.from([7]));
  c.close();
});

test('mget returns what get returns with the v8 serializer and a custom one', () => {
  for (const serializer of ['v8', { serialize: (v) => v8.serialize({ w: v }), deserialize: (b) => v8.deserialize(b).w }]) {
    const c = new LarderCache({ maxSize: 16 << 20, serializer });
    const keys = [];
    for (let i = 0; i < 400; i++) {
      const v = i % 4 === 0 ? new Map([[i, new Date(i)]]) : valueOf(i % KINDS, i);
      c.set(`s${i}`, v);
      keys.push(`s${i}`, `none${i}`);
    }
    assertSameAsGets(c, keys, 'serializer');
    c.close();
  }
});

test('mget never returns an expired entry, as get does not', async () => {
  const c = new LarderCache({ maxSize: 16 << 20 });
  const keys = [];
  for (let i = 0; i < 600; i++) {
    keys.push(`t${i}`);
    c.set(`t${i}`, valueOf(i % KINDS === 8 ? 0 : i % KINDS, i), { ttl: i % 2 ? 30 : 0 });
  }
  await waitFor(() => c.get('t1') === undefined && c.get('t599') === undefined, 'the 30 ms entries to expire');
  const got = c.mget(keys);
  for (let i = 0; i < keys.length; i++) {
    if (i % 2) assert.equal(got[i], undefined, `expired key ${i}`);
    else assert.notEqual(got[i], undefined, `live key ${i}`);
  }
  assertSameAsGets(c, keys, 'after expiry');
  c.close();
});

test('mget of keys whose total length passes V8\'s string limit: answered, or the maxKeyBytes RangeError', () => {
  const c = new LarderCache({ maxSize: 16 << 20, maxKeyBytes: 65535 });
  const k = 'k'.repeat(65535); // one string, referenced 9,000 times: 590 M units in all
  c.set(k, 'v');
  const got = c.mget(Array(9000).fill(k));
  assert.equal(got.length, 9000);
  assert.ok(got.every((v) => v === 'v'));
  const tooLong = 'z'.repeat(1 << 20);
  assert.throws(() => c.mget(Array(600).fill(tooLong)),
    { name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: /maxKeyBytes/ });
  c.close();
});
