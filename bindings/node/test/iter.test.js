'use strict';
/*
 * keys(), values(), entries(), forEach() and for-of over the engine's
 * cursor: every entry once, across several native chunks; keys that are
 * not UTF-8 come back as Buffers; a walk ended early, abandoned or cut by
 * close() leaves nothing open and never crashes.
 */
const test = require('node:test');
const assert = require('node:assert/strict');
const { LarderCache } = require('./helpers.js');

function filled(n, options = {}) {
  const c = new LarderCache({ maxSize: 64 << 20, ...options });
  for (let i = 0; i < n; i++) c.set(`key-${i}`, i % 3 === 0 ? { i } : `value-${i}`);
  return c;
}

function expected(i) {
  return i % 3 === 0 ? { i } : `value-${i}`;
}

test('entries, keys, values, forEach and for-of visit every entry once (several chunks)', () => {
  const n = 5000; // more than one chunk of 1,024 records
  const c = filled(n);
  const seen = new Map();
  for (const [k, v] of c.entries()) {
    assert.ok(!seen.has(k), `${k} returned twice`);
    seen.set(k, v);
  }
  assert.equal(seen.size, n);
  for (let i = 0; i < n; i++) assert.deepEqual(seen.get(`key-${i}`), expected(i));
  const keys = [...c.keys()];
  assert.equal(keys.length, n);
  assert.equal(new Set(keys).size, n);
  assert.equal([...c.values()].length, n);
  assert.equal([...c].length, n, 'the cache is iterable as entries()');
  let calls = 0;
  const self = {};
  c.forEach(function (v, k, cache) {
    calls++;
    assert.equal(this, self);
    assert.equal(cache, c);
    assert.deepEqual(v, seen.get(k));
  }, self);
  assert.equal(calls, n);
  assert.throws(() => c.forEach(5), TypeError);
  c.close();
});

test('deleted keys are not returned; Buffer keys that are not UTF-8 come back as Buffers', () => {
  const c = filled(100);
  for (let i = 0; i < 100; i += 2) c.delete(`key-${i}`);
  const bin = Buffer.from([0xff, 0xfe, 0x00, 0x01]);
  c.set(bin, Buffer.from([1, 2, 3]));
  const got = new Map([...c.entries()].map(([k, v]) => [Buffer.isBuffer(k) ? k.toString('hex') : k, v]));
  assert.equal(got.size, 51);
  for (let i = 1; i < 100; i += 2) assert.deepEqual(got.get(`key-${i}`), expected(i));
  assert.deepEqual(got.get('fffe0001'), Buffer.from([1, 2, 3]));
  c.close();
});

test('a walk ended early, abandoned, or cut by close()', () => {
  const c = filled(3000);
  for (const [k] of c.entries()) {
    assert.equal(typeof k, 'string');
    break; // closes the cursor
  }
  const abandoned = c.keys();
  abandoned.next(); // opened and left open
  const cut = c.entries();
  cut.next();
  c.close(); // closes both cursors before the cache
  // The chunk already fetched is still handed out; the next fetch throws.
  assert.throws(() => {
    for (const e of cut) assert.ok(e);
  }, { code: 'ERR_LARDER_CLOSED' });
  assert.throws(() => [...c.keys()], { code: 'ERR_LARDER_CLOSED' });
  assert.equal(LarderCache.openCaches(), 0);
});

test('a shared cache walks the same entries from every handle, and one handle closing leaves the others walking', () => {
  const a = new LarderCache({ name: 'iter-shared' });
  const b = new LarderCache({ name: 'iter-shared' });
  for (let i = 0; i < 2000; i++) a.set(`k${i}`, `v${i}`);
  const walk = b.entries();
  walk.next();
  a.close();
  let rest = 1;
  for (const [k, v] of walk) {
    assert.equal(v, `v${k.slice(1)}`);
    rest++;
  }
  assert.equal(rest, 2000);
  b.close();
});
