'use strict';
/*
 * The compression option: every value type and read path sees the original
 * value, compressible values take fewer bytes, incompressible and short ones
 * are stored raw, and a shared cache's compression must match.
 */
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { LarderCache, waitFor } = require('./helpers.js');

const TEXT = 'the quick brown fox jumps over the lazy dog; '.repeat(40); // ~1.8 KB, compressible
const OBJ = { name: 'Ada', tags: Array.from({ length: 50 }, (_, i) => `tag-${i % 5}`) };

test('compressed values read back exactly through get, peek, mget, entries and dispose', async () => {
  const removed = [];
  const c = new LarderCache({
    maxSize: 8 << 20, compression: true, dispose: (v, k, reason) => removed.push([k, v, reason]),
  });
  const bytes = Buffer.alloc(3000, 7);
  const random = crypto.randomBytes(2000); // incompressible: stored raw
  c.set('text', TEXT).set('obj', OBJ).set('bytes', bytes).set('random', random).set('short', 'abc');
  c.set('uni', 'żółw 🐢 '.repeat(100));
  for (const read of [(k) => c.get(k), (k) => c.peek(k)]) {
    assert.equal(read('text'), TEXT);
    assert.deepEqual(read('obj'), OBJ);
    assert.deepEqual(read('bytes'), bytes);
    assert.deepEqual(read('random'), random);
    assert.equal(read('short'), 'abc');
    assert.equal(read('uni'), 'żółw 🐢 '.repeat(100));
  }
  assert.deepEqual(c.mget(['text', 'nope', 'obj', 'bytes', 'uni']),
    [TEXT, undefined, OBJ, bytes, 'żółw 🐢 '.repeat(100)]);
  assert.deepEqual(c.mget(['text', 'short']), [TEXT, 'abc']); // the all-ASCII batch path
  assert.deepEqual(new Map(c.entries()).get('text'), TEXT);
  c.delete('text');
  await waitFor(() => removed.some(([k]) => k === 'text'), 'the dispose of text');
  assert.deepEqual(removed.find(([k]) => k === 'text'), ['text', TEXT, 'delete']);
  assert.deepEqual(c.compression, { minSize: 256, minSaving: 10 });
  c.close();
});

test('compression stores compressible values in fewer bytes, and only those', async () => {
  const used = async (options, value) => {
    const c = new LarderCache({ maxSize: 64 << 20, ...options });
    for (let i = 0; i < 1000; i++) c.set(`k${i}`, typeof value === 'function' ? value(i) : value);
    await waitFor(() => c.size === 1000, 'the maintainer to count 1000 entries');
    const bytes = c.calculatedSize;
    c.close();
    return bytes;
  };
  const plain = await used({}, TEXT);
  const packed = await used({ compression: true }, TEXT);
  assert.ok(packed < plain / 4, `compressed ${packed} bytes vs ${plain} plain`);
  // Below minSize: stored raw, the same bytes as without compression.
  const smallPlain = await used({}, TEXT.slice(0, 200));
  const smallOn = await used({ compression: { minSize: 1000 } }, TEXT.slice(0, 200));
  assert.equal(smallOn, smallPlain);
  // Incompressible: stored raw. A different random value per key: one value
  // repeated would compress against the dictionary the cache trains from it.
  const randoms = Array.from({ length: 1000 }, () => crypto.randomBytes(1500));
  const random = (i) => randoms[i];
  assert.equal(await used({ compression: true }, random), await used({}, random));
});

test('a shared cache must be joined with the same compression', () => {
  const a = new LarderCache({ name: 'compress-shared', compression: { minSize: 100, minSaving: 20 } });
  assert.throws(() => new LarderCache({ name: 'compress-shared', compression: true }),
    { code: 'ERR_LARDER_MISMATCH', message: /compression/ });
  assert.throws(() => new LarderCache({ name: 'compress-shared', compression: false }),
    { code: 'ERR_LARDER_MISMATCH', message: /compression/ });
  const b = new LarderCache({ name: 'compress-shared' }); // not given: joins as it is
  assert.deepEqual(b.compression, { minSize: 100, minSaving: 20 });
  a.set('k', TEXT);
  assert.equal(b.get('k'), TEXT);
  b.close();
  a.close();
  const off = new LarderCache({});
  assert.equal(off.compression, false);
  off.close();
});
