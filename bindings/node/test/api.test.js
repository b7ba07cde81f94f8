'use strict';
/* Every method's semantics and errors, for every value type and key type. */
const test = require('node:test');
const assert = require('node:assert/strict');
const { INDEX, LarderCache, flushedRead, waitFor } = require('./helpers.js');

function open(options = {}) {
  return new LarderCache({ maxSize: 8 << 20, ...options });
}

test('get/set/has/delete/peek with string values', () => {
  const c = open();
  assert.equal(c.get('a'), undefined);
  assert.equal(c.has('a'), false);
  assert.equal(c.set('a', 'alpha'), c, 'set returns this');
  assert.equal(c.get('a'), 'alpha');
  assert.equal(c.peek('a'), 'alpha');
  assert.equal(c.has('a'), true);
  c.set('a', 'beta');
  assert.equal(c.get('a'), 'beta');
  assert.equal(c.delete('a'), true);
  assert.equal(c.delete('a'), false);
  assert.equal(c.get('a'), undefined);
  c.set('empty', '');
  assert.equal(c.get('empty'), '');
  c.set('unicode', 'żółw 🐢 ü');
  assert.equal(c.get('unicode'), 'żółw 🐢 ü');
  c.close();
});

test('Buffer, Uint8Array and other views come back as Buffer copies', () => {
  const c = open();
  const b = Buffer.from([0, 1, 2, 255]);
  c.set('b', b);
  const got = c.get('b');
  assert.ok(Buffer.isBuffer(got));
  assert.deepEqual(got, b);
  got[0] = 9;
  assert.equal(c.get('b')[0], 0, 'a returned Buffer is a copy');
  c.set('u', new Uint8Array([5, 6]));
  assert.deepEqual([...c.get('u')], [5, 6]);
  c.set('f', new Float64Array([1.5]));
  assert.equal(new Float64Array(new Uint8Array(c.get('f')).buffer)[0], 1.5);
  c.set('z', Buffer.alloc(0));
  assert.equal(c.get('z').length, 0);
  c.close();
});

test('a Buffer value from get is its own copy: later calls and writes to it change nothing else', () => {
  const c = open();
  c.set('a', Buffer.from([1, 2, 3]));
  c.set('b', Buffer.from([9, 9, 9, 9]));
  const a = c.get('a');
  assert.ok(Buffer.isBuffer(a));
  assert.deepEqual(c.get('b'), Buffer.from([9, 9, 9, 9]));
  c.peek('b');
  c.set('c', 'a string through the scratch');
  c.get('c');
  assert.deepEqual(a, Buffer.from([1, 2, 3]), 'not a view of the scratch');
  a.fill(0);
  assert.deepEqual(c.get('a'), Buffer.from([1, 2, 3]), 'writing the copy leaves the cache');
  c.close();
});

test('objects through JSON by default, v8 or a custom serializer', () => {
  const c = open();
  const v = { a: 1, b: [1, 2, { c: 'x' }], d: null };
  c.set('o', v);
  assert.deepEqual(c.get('o'), v);
  assert.notEqual(c.get('o'), v, 'a copy, not the same object');
  c.set('n', 42);
  assert.equal(c.get('n'), 42);
  c.set('t', true);
  assert.equal(c.get('t'), true);
  assert.throws(() => c.set('fn', () => 1), TypeError);
  // What JSON cannot encode is the documented TypeError with its code, and
  // the old value stays.
  c.set('keep', 'old');
  const cyclic = { a: 1 };
  cyclic.self = cyclic;
  for (const bad of [5n, { n: 5n }, cyclic, Symbol('s'), () => 1]) {
    assert.throws(() => c.set('keep', bad), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
    assert.throws(() => c.mset([['keep', bad]]), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
    assert.equal(c.get('keep'), 'old');
  }
  c.close();

  const c8 = open({ serializer: 'v8' });
  const m = new Map([[1, new Date(5)]]);
  c8.set('m', m);
  assert.deepEqual(c8.get('m'), m);
  c8.set('buf-in-object', { b: Buffer.from('xy') });
  const first = c8.get('buf-in-object');
  c8.set('other', { b: Buffer.from('zz') });
  c8.get('other');
  assert.equal(Buffer.from(first.b).toString(), 'xy', 'deserialized views do not alias the scratch');
  c8.close();

  const calls = [];
  const custom = open({
    serializer: {
      serialize: (x) => { calls.push('s'); return Buffer.from(String(x.n)); },
      deserialize: (b) => { calls.push('d'); return { n: Number(b.toString()) }; },
    },
  });
  custom.set('k', { n: 7 });
  assert.deepEqual(custom.get('k'), { n: 7 });
  assert.deepEqual(calls, ['s', 'd']);
  custom.close();
  assert.throws(() => open({ serializer: 'yaml' }), TypeError);
});

test('set(key, undefined) deletes, as in lru-cache', () => {
  const c = open();
  c.set('k', 'v');
  c.set('k', undefined);
  assert.equal(c.has('k'), false);
  c.close();
});

test('Buffer keys are their bytes; a string key is its UTF-8 bytes', () => {
  const c = open();
  c.set(Buffer.from([1, 2, 3]), 'bin');
  assert.equal(c.get(Buffer.from([1, 2, 3])), 'bin');
  assert.equal(c.get(new Uint8Array([1, 2, 3])), 'bin');
  c.set('ü', 'x');
  assert.equal(c.get(Buffer.from('ü')), 'x');
  // Every UTF-8 length, a surrogate pair, and a lone surrogate (encoded as U+FFFD, as Buffer.from does).
  const ks = ['a', 'ß', 'ł€', '中文键', '🐢 turtle', 'x\ud800y', '\udfff'];
  ks.forEach((k, i) => c.set(k, `v${i}`));
  ks.forEach((k, i) => {
    assert.equal(c.get(Buffer.from(k)), `v${i}`, JSON.stringify(k));
    assert.deepEqual(c.mget([k, 'a']), [`v${i}`, 'v0']);
  });
  // A string value is stored as UTF-8: a lone surrogate in it comes back as U+FFFD.
  c.set('lone', 'x\ud800');
  assert.equal(c.get('lone'), 'x\ufffd');
  c.close();
});

test('values larger than the scratch buffer grow it', () => {
  const c = open({ maxSize: 64 << 20, maxValueBytes: 4 << 20 });
  const big = Buffer.alloc(3 << 20, 7);
  c.set('big', big);
  assert.deepEqual(c.get('big'), big);
  const s = 'x'.repeat(1 << 20);
  c.set('s', s);
  assert.equal(c.get('s'), s);
  const multi = 'ł'.repeat(300000); // 600,000 UTF-8 bytes: the encoder's buffer grows
  c.set('m', multi);
  assert.equal(c.get('m'), multi);
  assert.deepEqual(c.mget(['big', 's', 'nope']), [big, s, undefined]);
  c.close();
});

test('wrong types are TypeErrors', () => {
  const c = open();
  for (const key of [1, null, undefined, {}, [], Symbol('s'), 1n]) {
    assert.throws(() => c.get(key), TypeError);
    assert.throws(() => c.set(key, 'v'), TypeError);
    assert.throws(() => c.has(key), TypeError);
    assert.throws(() => c.delete(key), TypeError);
    assert.throws(() => c.getRemainingTTL(key), TypeError);
  }
  assert.throws(() => c.set('k', 'v', { ttl: 'x' }), TypeError);
  assert.throws(() => c.mget('abc'), TypeError);
  assert.throws(() => c.mget([1, 2]), TypeError);
  assert.throws(() => c.mset([['a']]), TypeError);
  assert.throws(() => c.mset([[1, 'v']]), TypeError);
  for (const bad of [{ maxSize: '1' }, { max: 1.5 }, { ttl: 'x' }, { policy: 3 }, { dispose: 1 },
    { name: 5 }, { l1: 5 }, { l1: { max: 'x' } }]) {
    assert.throws(() => new LarderCache(bad), TypeError, JSON.stringify(bad));
  }
  assert.throws(() => new LarderCache(null), TypeError);
  for (const lruOnly of ['allowStale', 'sizeCalculation', 'fetchMethod', 'noDisposeOnSet']) {
    assert.throws(() => new LarderCache({ [lruOnly]: true }), { name: 'TypeError', message: new RegExp(lruOnly) });
  }
  new LarderCache({ ttlAutopurge: true, ttlResolution: 1 }).close(); // accepted: larder always purges
  for (const bad of [{ compression: 1 }, { compression: 'lz4' }, { compression: null },
    { compression: { minSize: 'x' } }, { compression: { minSaving: 1.5 } }]) {
    assert.throws(() => new LarderCache(bad), TypeError, JSON.stringify(bad));
  }
  for (const bad of [{ compression: { minSize: 0 } }, { compression: { minSaving: 100 } },
    { compression: { minSaving: -1 } }]) {
    assert.throws(() => new LarderCache(bad), { name: 'RangeError', message: /compression\.min/ });
  }
  new LarderCache({ compression: false }).close();
  c.close();
});

test('over the limits: RangeError naming the limit', () => {
  const c = open({ maxKeyBytes: 16, maxValueBytes: 100 });
  assert.throws(() => c.set('k'.repeat(17), 'v'), { name: 'RangeError', message: /maxKeyBytes \(16\)/ });
  assert.throws(() => c.get('k'.repeat(17)), /maxKeyBytes/);
  assert.throws(() => c.get('é'.repeat(9)), /maxKeyBytes/, '18 UTF-8 bytes');
  assert.throws(() => c.get(Buffer.alloc(17)), /maxKeyBytes/);
  assert.throws(() => c.get('k'.repeat(100000)), /maxKeyBytes/);
  assert.throws(() => c.get(''), { name: 'RangeError', message: /empty/ });
  assert.throws(() => c.set('k', 'v'.repeat(101)), { name: 'RangeError', message: /maxValueBytes \(100\)/ });
  assert.throws(() => c.set('k', Buffer.alloc(101)), /maxValueBytes/);
  assert.throws(() => c.set('k', 'é'.repeat(51)), /maxValueBytes/, '102 UTF-8 bytes');
  c.set('k', 'v'.repeat(100));
  assert.equal(c.get('k').length, 100, 'exactly the limit is fine');
  assert.throws(() => c.set('k', 'v', { ttl: -1 }), RangeError);
  assert.throws(() => c.mget(['ok', 'k'.repeat(17)]), /maxKeyBytes/);
  c.close();
  // Keys of up to 16 ASCII units take the inline read (binding.h, lnode_key_arg):
  // over a maxKeyBytes below 16 every single-key method refuses them itself
  // (has would otherwise answer false from the engine's refusal).
  const tiny = open({ maxKeyBytes: 8 });
  for (const key of ['k'.repeat(9), 'k'.repeat(16)]) {
    for (const op of [(k) => tiny.get(k), (k) => tiny.peek(k), (k) => tiny.has(k), (k) => tiny.delete(k),
      (k) => tiny.set(k, 'v'), (k) => tiny.getRemainingTTL(k)]) {
      assert.throws(() => op(key), { name: 'RangeError', message: /maxKeyBytes \(8\)/ }, `${op} ${key.length}`);
    }
  }
  tiny.set('k'.repeat(8), 'v');
  assert.equal(tiny.get('k'.repeat(8)), 'v', 'exactly the limit is fine');
  tiny.close();
  const small = open({ maxSize: 65536, maxValueBytes: 60000 });
  assert.throws(() => small.set('k', Buffer.alloc(20000)), { name: 'RangeError', message: /1\/8 of the capacity \(65536 bytes\)/ });
  small.close();
  assert.throws(() => new LarderCache({ maxSize: 1000 }), { name: 'RangeError', message: /maxSize/ });
  assert.throws(() => new LarderCache({ maxKeyBytes: 70000 }), { name: 'RangeError', message: /maxKeyBytes/ });
  assert.throws(() => new LarderCache({ policy: 'mru' }), { name: 'RangeError', message: /policy/ });
  // Names an object inherits are no policies either (they reached the addon: 'bad open argument').
  for (const policy of ['toString', '__proto__', 'constructor', 'hasOwnProperty']) {
    assert.throws(() => new LarderCache({ policy }),
      { name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: /policy must be one of default, / }, policy);
  }
  assert.throws(() => new LarderCache({ max: -1 }), { name: 'TypeError', message: /max/ }); // lru-cache's class
});

test('a set refused for its value removes the old value, as lru-cache does', () => {
  for (const l1 of [undefined, { max: 100 }]) {
    const c = open({ maxSize: 65536, maxValueBytes: 60000, l1 });
    c.set('other', 'o');
    for (const [what, big] of [['over maxValueBytes', 'v'.repeat(60001)],
      ['a Buffer over maxValueBytes', Buffer.alloc(60001)],
      ['over 1/8 of the capacity', Buffer.alloc(20000)]]) {
      c.set('k', 'old');
      assert.equal(c.get('k'), 'old');
      assert.throws(() => c.set('k', big), RangeError, what);
      assert.equal(c.get('k'), undefined, `${what}: the old value is gone`);
      assert.equal(c.has('k'), false, what);
      c.set('k', 'old');
      assert.throws(() => c.mset([['m', 'x'], ['k', big]]), RangeError, `mset ${what}`);
      assert.equal(c.get('m'), 'x', 'entries before the refused one are stored');
      assert.equal(c.get('k'), undefined, `mset ${what}: the old value is gone`);
    }
    c.set('k', 'old');
    assert.throws(() => c.set('k'.repeat(1025), 'v'), RangeError);
    assert.throws(() => c.set('k', 'v', { ttl: -1 }), RangeError);
    assert.throws(() => c.set('k', Symbol('x')), TypeError);
    assert.equal(c.get('k'), 'old', 'a bad key, TTL or type keeps the old value');
    assert.equal(c.get('other'), 'o', 'other entries intact');
    c.close();
  }
});

test('a cache or pool name is 1..254 bytes of UTF-8 without NUL, never cut short', () => {
  const { LarderPool } = require(INDEX);
  for (const bad of ['', 'x'.repeat(255), 'é'.repeat(128), 'a\u0000b']) {
    assert.throws(() => open({ name: bad }), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }, JSON.stringify(bad));
    assert.throws(() => new LarderPool({ maxSize: 8 << 20, name: bad }), { name: 'RangeError' }, JSON.stringify(bad));
  }
  // 'é' x 127 is 254 bytes; one more would have been copied as these 254.
  const longest = open({ name: 'é'.repeat(127) });
  longest.set('k', 'v');
  assert.equal(LarderCache.refs('é'.repeat(127)), 1);
  assert.equal(LarderCache.refs('é'.repeat(128)), 0, 'a longer name is not the same name');
  assert.equal(LarderCache.refs('a\u0000b'), 0);
  assert.throws(() => LarderCache.refs(5), TypeError);
  const named = open({ name: 'a' });
  assert.equal(named.get('k'), undefined, 'another name, another cache');
  named.close();
  longest.close();
  const p = new LarderPool({ maxSize: 8 << 20, name: 'x'.repeat(254) });
  p.close();
});

test('after close: a clear Error from every method, never a crash', () => {
  const c = open();
  c.set('k', 'v');
  c.close();
  c.close(); // idempotent
  assert.equal(c.closed, true);
  const calls = [() => c.get('k'), () => c.set('k', 'v'), () => c.has('k'), () => c.delete('k'),
    () => c.peek('k'), () => c.clear(), () => c.getRemainingTTL('k'), () => c.mget(['k']),
    () => c.mset([['k', 'v']]), () => c.size, () => c.calculatedSize, () => c.stats()];
  for (const call of calls) assert.throws(call, { code: 'ERR_LARDER_CLOSED', message: /closed/ });
});

test('clear empties the cache; size and calculatedSize follow the maintainer', async () => {
  const c = open();
  for (let i = 0; i < 100; i++) c.set(`k${i}`, 'v'.repeat(10));
  await waitFor(() => c.size === 100, 'size 100');
  assert.ok(c.calculatedSize >= 100 * 10, 'calculatedSize counts the bytes');
  c.clear();
  assert.equal(c.get('k1'), undefined);
  await waitFor(() => c.size === 0, 'size 0 after clear');
  c.close();
});

test('size is exact right after this object\'s writes, as lru-cache\'s', () => {
  // A read that took FLUSH_WAIT_MS may lag and is read again (flushedRead).
  const c = open();
  const size = (want) => assert.equal(flushedRead(() => c.size, want), want);
  for (let i = 0; i < 100; i++) c.set(`k${i}`, 'v');
  size(100);
  for (let i = 0; i < 10; i++) assert.equal(c.delete(`k${i}`), true);
  size(90);
  c.set('k50', 'overwritten');
  c.set('k51', undefined); // deletes, as in lru-cache
  size(89);
  c.mset([['m1', 'a'], ['m2', 'b'], ['k52', 'c']]);
  size(91);
  size(91); // a read without a write in between flushes nothing
  c.clear();
  size(0);
  c.set('after', 'v');
  size(1);
  c.close();
});

test('mget and mset: one call each, every key type, misses, order kept', () => {
  const c = open();
  c.mset([['a', '1'], ['b', Buffer.from('2')], ['c', { three: 3 }], [Buffer.from('d'), 'four'], ['é', 'ü']]);
  assert.deepEqual(c.mget(['a', 'b', 'c', 'd', 'x', 'é']),
    ['1', Buffer.from('2'), { three: 3 }, 'four', undefined, 'ü']);
  assert.deepEqual(c.mget([]), []);
  assert.deepEqual(c.mget(['a']), ['1']);
  assert.deepEqual(c.mget([Buffer.from('a'), 'b']), ['1', Buffer.from('2')]);
  const keys = [];
  for (let i = 0; i < 5000; i++) keys.push(`key-${i}`);
  c.mset(keys.map((k, i) => [k, i % 2 ? `v${i}` : { i }]));
  const got = c.mget(keys);
  for (let i = 0; i < keys.length; i++) assert.deepEqual(got[i], i % 2 ? `v${i}` : { i });
  c.mset([['t', 'x']], { ttl: 60000 });
  assert.ok(c.getRemainingTTL('t') > 0 && c.getRemainingTTL('t') <= 60000);
  c.close();
});

test('max: the entry count is held near max through the byte capacity', async () => {
  const c = new LarderCache({ max: 1000 });
  for (let i = 0; i < 20000; i++) c.set(`key-${i}`, 'v'.repeat(100));
  await waitFor(() => c.size <= 1250, `size near max (now ${c.size})`);
  assert.equal(c.max, 1000);
  assert.equal(c.get('key-19999'), 'v'.repeat(100), 'the latest write is kept');
  c.close();
});

test('mget keys whose getters call back into the cache: an Error, never a crash', () => {
  const c = open();
  c.set('a', '1');
  const keys = [Buffer.from('a'), 'x'];
  Object.defineProperty(keys, 1, { get: () => { c.get('a'); return 'a'; } });
  assert.throws(() => c.mget(keys), { code: 'ERR_LARDER_REENTRANT' });
  assert.deepEqual(c.mget(['a']), ['1'], 'the cache still works');
  const closing = [Buffer.from('a'), 'x'];
  Object.defineProperty(closing, 1, { get: () => { c.close(); return 'a'; } });
  assert.throws(() => c.mget(closing), { code: 'ERR_LARDER_CLOSED' });
  assert.throws(() => c.get('a'), { code: 'ERR_LARDER_CLOSED' });
});

test('policies: every one opens and serves', () => {
  for (const policy of ['default', 's3fifo', 'fifo', 'lru', 'wtinylfu', 'arc', 'wtinylfu-tuned', 's3fifo-tuned']) {
    const c = open({ policy });
    c.set('k', policy);
    assert.equal(c.get('k'), policy);
    c.close();
  }
});

test('stats exposes the engine counters', () => {
  const c = open();
  c.set('k', 'v');
  c.get('k');
  c.get('nope');
  const s = c.stats();
  assert.ok(s.hits >= 1 && s.misses >= 1 && s.writes >= 1);
  c.close();
});

test('benchmark hooks: engineLoop times single gets and batches, and refuses misses', () => {
  const c = open();
  const keys = Array.from({ length: 50 }, (_, i) => `key-${i}`);
  for (const k of keys) c.set(k, 'v'.repeat(64));
  const order = Uint32Array.from({ length: 1003 }, (_, i) => (i * 7) % keys.length);
  for (const batch of [0, 1, 16, 1000]) {
    const ns = c.engineLoop(keys, order, batch);
    assert.ok(ns > 0 && Number.isFinite(ns), `batch ${batch}: ${ns} ns per key`);
  }
  assert.ok(c.engineLoop(keys, order) > 0, 'batch defaults to single gets');
  // A key that is absent makes the timing meaningless: an Error, single or batched.
  const withMiss = [...keys, 'absent'];
  const all = Uint32Array.from({ length: withMiss.length }, (_, i) => i);
  assert.throws(() => c.engineLoop(withMiss, all), { code: 'ERR_LARDER' });
  assert.throws(() => c.engineLoop(withMiss, all, 8), { code: 'ERR_LARDER' });
  assert.throws(() => c.engineLoop(keys, [1, 2], 8), { code: 'ERR_INVALID_ARG_TYPE' });
  c.close();
});
