'use strict';
/*
 * The constructor's options and the loaders (fetch, memo) beside lru-cache
 * v11, an audit of what contract.test.js left: every option lru-cache reads
 * given every kind of bad value, each outcome (accepted, or the class of
 * the error) lru-cache's but for the differences docs/node.md names; the
 * status objects of fetch (its context and forceRefresh, an aborted
 * signal, concurrent fetches of one key) and memo; and updateAgeOnGet's
 * documented difference (reads extend by the cache's ttl, not the
 * entry's own). Skipped, saying so, without lru-cache.
 */
const test = require('node:test');
const assert = require('node:assert/strict');
const { LarderCache, lruCache } = require('./helpers.js');

const { LRUCache, needLru } = lruCache();
const HOUR = 3600000;

const VALUES = [undefined, null, true, false, 0, -0, -1, 1.5, 7, 65536, 2 ** 32, 2 ** 53, NaN,
  Infinity, -Infinity, '', '10', 'abc', {}, [], () => {}, 0n, 10n, Symbol('s'), new Number(5)];

/* What new C(options) gives: 'ok' and the option read back, or the error's class. */
function outcome(make, option) {
  try {
    const c = make();
    const v = c[option];
    if (typeof c.close === 'function') c.close();
    return { ok: true, v };
  } catch (e) {
    return { ok: false, cls: e.constructor.name };
  }
}

function show(v) {
  if (typeof v === 'symbol' || typeof v === 'function') return typeof v;
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  return v instanceof Number ? 'new Number(5)' : JSON.stringify(v) ?? String(v);
}

/*
 * The differences docs/node.md names (its table's max, maxSize, ttl and
 * refused-options rows): for an (option, value) where larder differs on
 * purpose, what larder does instead: 'ok', or an error class.
 */
function documentedDifference(option, v) {
  const isInt = Number.isInteger(v);
  switch (option) {
    case 'max':
      // lru-cache's arrays of max slots: from 2^53 a plain Error, larder's RangeError.
      return v === 2 ** 53 ? 'RangeError' : undefined;
    case 'maxSize':
      // The engine's smallest capacity, 64 KiB; maxSize: 0 (lru-cache: no size limit) refused.
      return isInt && v >= 0 && v < 65536 ? 'RangeError' : undefined;
    case 'ttl':
      // Infinity (and any ttl) a lifetime of no expiry; NaN refused, not read as none.
      if (v === Infinity) return 'ok';
      return Number.isNaN(v) ? 'TypeError' : undefined;
    case 'dispose':
      // A truthy non-function: lru-cache ignores it, larder refuses it.
      return v && typeof v !== 'function' ? 'TypeError' : undefined;
    case 'maxEntrySize':
    case 'updateAgeOnHas':
    case 'allowStale':
    case 'noDeleteOnStaleGet':
    case 'noDisposeOnSet':
    case 'noUpdateTTL':
      // Refused when truthy: code moved from lru-cache must not silently lose them.
      return v ? 'TypeError' : undefined;
    default:
      return undefined;
  }
}

const OPTIONS = ['max', 'maxSize', 'ttl', 'ttlResolution', 'ttlAutopurge', 'updateAgeOnGet',
  'dispose', 'backgroundFetchSize', 'maxEntrySize', 'updateAgeOnHas', 'allowStale',
  'noDeleteOnStaleGet', 'noDisposeOnSet', 'noUpdateTTL'];
/* Read back where both accept, as lru-cache's (maxSize's default is larder's own). */
const READ_BACK = new Set(['max', 'ttl', 'ttlResolution', 'ttlAutopurge', 'updateAgeOnGet',
  'dispose', 'backgroundFetchSize']);

test('every constructor option given every kind of bad value: lru-cache\'s outcome but the documented differences', { skip: needLru }, () => {
  const wrong = [];
  for (const option of OPTIONS) {
    // lru-cache needs a bound besides the option tested; larder gets its smallest
    // capacity, which checks nothing else and opens fastest.
    const lruBase = option === 'max' ? { ttl: HOUR, ttlAutopurge: true } : { max: 100 };
    const larBase = option === 'maxSize' ? {} : { maxSize: 65536 };
    for (const v of VALUES) {
      const lru = outcome(() => new LRUCache({ ...lruBase, [option]: v }), option);
      const lar = outcome(() => new LarderCache({ ...larBase, [option]: v }), option);
      const want = documentedDifference(option, v) ??
        (lru.ok ? 'ok' : lru.cls === 'TypeError' ? 'TypeError' : 'an error');
      const got = lar.ok ? 'ok' : lar.cls;
      const same = want === 'an error' ? !lar.ok : got === want;
      if (!same) wrong.push(`${option}: ${show(v)}: larder ${got}, want ${want}`);
      if (same && lar.ok && lru.ok && READ_BACK.has(option) && lar.v !== lru.v && !Object.is(lar.v, lru.v) &&
        documentedDifference(option, v) === undefined) {
        wrong.push(`${option}: ${show(v)}: reads back ${show(lar.v)}, lru-cache ${show(lru.v)}`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});

test('a falsy constructor ttl but NaN is no lifetime, as lru-cache reads it (ttl || 0)', { skip: needLru }, () => {
  for (const ttl of [false, '', 0, null, 0n]) {
    const lru = new LRUCache({ max: 10, ttl });
    const c = new LarderCache({ ttl });
    assert.equal(c.ttl, lru.ttl, `ttl ${show(ttl)}`);
    c.set('k', 'v');
    assert.equal(c.getRemainingTTL('k'), Infinity, `ttl ${show(ttl)}`);
    c.close();
  }
  assert.throws(() => new LarderCache({ ttl: NaN }), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
});

test('ttlResolution: a symbol or a nonzero bigint is a TypeError, as lru-cache\'s Math.floor throws', { skip: needLru }, () => {
  for (const res of [Symbol('r'), 10n, -1n]) {
    assert.throws(() => new LRUCache({ max: 10, ttlResolution: res }), TypeError);
    assert.throws(() => new LarderCache({ ttlResolution: res }),
      { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: /ttlResolution/ });
  }
  const c = new LarderCache({ ttlResolution: 0n });
  assert.equal(c.ttlResolution, new LRUCache({ max: 10, ttlResolution: 0n }).ttlResolution);
  c.close();
});

/* A status as a log reads it: the cache field named, the clock readings left out. */
function fields(status, cache) {
  const out = {};
  for (const [k, v] of Object.entries(status)) {
    if (['start', 'now', 'ttl', 'remainingTTL'].includes(k)) continue;
    out[k] = k === 'cache' ? v === cache : v;
  }
  return out;
}

test('fetch: status with context and forceRefresh, an aborted signal, concurrent fetches, as lru-cache', { skip: needLru }, async () => {
  const lru = new LRUCache({ max: 10 });
  const c = new LarderCache({});
  const aborted = AbortSignal.abort(new Error('gone'));
  const calls = [
    ['k', { context: { user: 1 } }],
    ['k', { forceRefresh: true }],
    ['absent', { context: 'ctx', forceRefresh: true }],
    ['k', { signal: aborted }],
    ['k', { context: 0, forceRefresh: 0 }],
  ];
  for (const cache of [lru, c]) cache.set('k', { v: 1 });
  for (const [key, opts] of calls) {
    const sl = {};
    const sc = {};
    const [vl, vc] = await Promise.all([lru.fetch(key, { ...opts, status: sl }),
      c.fetch(key, { ...opts, status: sc })]);
    assert.deepEqual(vc, vl, `${key} ${Object.keys(opts)}`);
    assert.deepEqual(Object.keys(sc), Object.keys(sl), `field order, ${key} ${Object.keys(opts)}`);
    assert.deepEqual(fields(sc, c), fields(sl, lru), `${key} ${Object.keys(opts)}`);
  }
  const both = await Promise.all([c.fetch('k'), c.fetch('k'), c.fetch('absent')]);
  assert.deepEqual(both, await Promise.all([lru.fetch('k'), lru.fetch('k'), lru.fetch('absent')]));
  c.close();
});

test('memo: lru-cache\'s error, after filling its status as lru-cache\'s', { skip: needLru }, () => {
  const lru = new LRUCache({ max: 10 });
  const c = new LarderCache({});
  for (const opts of [{}, { context: { user: 1 } }, { forceRefresh: true, context: 'x' }]) {
    const sl = {};
    const sc = {};
    assert.throws(() => lru.memo('k', { ...opts, status: sl }), { message: 'no memoMethod provided to constructor' });
    assert.throws(() => c.memo('k', { ...opts, status: sc }), { message: 'no memoMethod provided to constructor' });
    assert.deepEqual(Object.keys(sc), Object.keys(sl));
    assert.deepEqual(fields(sc, c), fields(sl, lru));
  }
  c.close();
});

test('updateAgeOnGet: a read extends by the cache\'s ttl, where lru-cache restarts the entry\'s own (documented)', { skip: needLru }, () => {
  // ttlResolution 0: lru-cache reads its clock each time (a cached reading can put start late).
  const lru = new LRUCache({ max: 10, ttl: HOUR, updateAgeOnGet: true, ttlResolution: 0 });
  const c = new LarderCache({ ttl: HOUR, updateAgeOnGet: true });
  for (const cache of [lru, c]) {
    cache.set('own', 1, { ttl: 60000 });
    cache.set('none', 1, { ttl: 0 });
    cache.get('own');
    cache.get('none');
  }
  assert.ok(lru.getRemainingTTL('own') <= 60000, `lru-cache ${lru.getRemainingTTL('own')}`);
  assert.ok(c.getRemainingTTL('own') > 60000, `larder ${c.getRemainingTTL('own')}`);
  assert.ok(c.getRemainingTTL('own') <= HOUR);
  // An entry stored without a lifetime keeps none in both.
  assert.equal(c.getRemainingTTL('none'), Infinity);
  assert.equal(lru.getRemainingTTL('none'), Infinity);
  c.close();
  // Without a cache ttl a read extends nothing, and cuts nothing short.
  const d = new LarderCache({ updateAgeOnGet: true });
  d.set('own', 1, { ttl: 60000 });
  assert.equal(d.get('own'), 1);
  assert.equal(d.get('own'), 1);
  const left = d.getRemainingTTL('own');
  assert.ok(left > 0 && left <= 60000, `left ${left}`);
  d.close();
});
