'use strict';
/*
 * LarderPool: caches opened in a pool share its budget; option and ordering
 * errors are clear; a named pool is the same pool in every worker; nothing
 * is left open once every object is closed or collected.
 */
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { INDEX, LarderCache, waitFor } = require('./helpers.js');

const { LarderPool } = require(INDEX);
const MiB = 1024 * 1024;

test('caches in a pool share its budget and stay within its bound', () => {
  const pool = new LarderPool({ maxSize: 8 * MiB });
  const a = new LarderCache({ pool, missCost: 10 });
  const b = new LarderCache({ pool, minShare: 0.1, maxShare: 0.5 });
  const value = 'x'.repeat(300);
  for (let i = 0; i < 40000; i++) { // ~14 MB written into an 8 MiB budget
    a.set(`a${i}`, value);
    b.set(`b${i}`, value);
  }
  assert.equal(a.get('a39999'), value);
  const s = pool.stats();
  assert.equal(s.budget_bytes, 8 * MiB);
  assert.equal(s.caches, 2);
  assert.ok(s.assigned_bytes <= s.budget_bytes, `assigned ${s.assigned_bytes}`);
  assert.ok(s.used_bytes <= s.budget_bytes + s.overshoot_bound, `used ${s.used_bytes}`);
  assert.ok(a.maxSize > 0 && b.maxSize > 0 && a.maxSize + b.maxSize <= 8 * MiB);
  assert.ok(b.maxSize <= 4 * MiB, `maxShare 0.5 holds: ${b.maxSize}`);
  const ps = a.poolStats();
  assert.equal(ps.miss_cost, 10);
  assert.equal(b.poolStats().min_share, 0.1);
  const plain = new LarderCache({});
  assert.equal(plain.poolStats(), undefined);
  plain.close();
  a.close();
  b.close();
  pool.close();
  assert.equal(LarderPool.openPools(), 0);
});

test('pool options and ordering: clear errors', () => {
  assert.throws(() => new LarderPool({ maxSize: 1000 }), { name: 'RangeError', message: /maxSize/ });
  assert.throws(() => new LarderPool({ interval: 60001 }), RangeError);
  assert.throws(() => new LarderPool({ maxSize: '1' }), TypeError);
  assert.throws(() => new LarderPool(null), TypeError);
  const pool = new LarderPool({ maxSize: 4 * MiB });
  assert.throws(() => new LarderCache({ pool: {} }), { name: 'TypeError', message: /LarderPool/ });
  assert.throws(() => new LarderCache({ pool, maxSize: MiB }), { name: 'TypeError', message: /maxSize/ });
  assert.throws(() => new LarderCache({ pool, max: 100 }), { name: 'TypeError', message: /max/ });
  const unlimited = new LarderCache({ pool, max: 0 }); // no entry limit: nothing to steer
  unlimited.set('k', 'v');
  assert.equal(unlimited.get('k'), 'v');
  assert.equal(unlimited.max, 0);
  unlimited.close();
  const sharded = new LarderCache({ pool, shards: 4 }); // a pooled cache of several shards
  for (let i = 0; i < 1000; i++) sharded.set(`s${i}`, i);
  for (let i = 0; i < 1000; i++) assert.equal(sharded.get(`s${i}`), i);
  sharded.close();
  assert.throws(() => new LarderCache({ minShare: 0.1 }), { name: 'TypeError', message: /pool/ });
  assert.throws(() => new LarderCache({ pool, minShare: 'x' }), TypeError);
  for (const bad of [{ minShare: 0.6, maxShare: 0.5 }, { maxShare: 0 }, { maxShare: 1.5 },
    { minShare: -0.1 }, { minShare: NaN }, { missCost: 0 }, { missCost: 2e9 }]) {
    assert.throws(() => new LarderCache({ pool, ...bad }), RangeError, JSON.stringify(bad));
  }
  const a = new LarderCache({ pool, minShare: 0.7 });
  assert.throws(() => new LarderCache({ pool, minShare: 0.5 }), { name: 'RangeError', message: /minShare/ });
  assert.throws(() => pool.close(), { code: 'ERR_LARDER_STATE', message: /1 open cache/ });
  assert.equal(pool.closed, false);
  a.set('k', 'v'); // the refused close changed nothing
  assert.equal(a.get('k'), 'v');
  a.close();
  pool.close();
  pool.close(); // idempotent
  assert.equal(pool.closed, true);
  assert.throws(() => pool.stats(), { code: 'ERR_LARDER_CLOSED' });
  assert.throws(() => new LarderCache({ pool }), { code: 'ERR_LARDER_CLOSED' });
  assert.equal(LarderPool.openPools(), 0);
  assert.equal(LarderCache.openCaches(), 0);
});

test('a cache collected without close() stops holding its pool object', async () => {
  const pool = new LarderPool({ maxSize: 4 * MiB });
  (() => {
    const c = new LarderCache({ pool });
    c.set('k', 'v');
  })();
  assert.throws(() => pool.close(), { code: 'ERR_LARDER_STATE' });
  await waitFor(() => {
    global.gc();
    try {
      pool.close();
      return true;
    } catch (err) {
      if (err.code !== 'ERR_LARDER_STATE') throw err;
      return false;
    }
  }, 'the collected cache to be counted out');
  await waitFor(() => {
    global.gc();
    return LarderPool.openPools() === 0 && LarderCache.openCaches() === 0;
  }, 'the native pool and cache to close');
});

test('a named pool is one pool in every worker, and a pooled named cache is joined as it is', async () => {
  const pool = new LarderPool({ name: 'shared-pool', maxSize: 8 * MiB });
  const other = new LarderPool({ maxSize: 8 * MiB });
  assert.throws(() => new LarderPool({ name: 'shared-pool', maxSize: 16 * MiB }),
    { code: 'ERR_LARDER_MISMATCH', message: /maxSize/ });
  const mine = new LarderCache({ name: 'pooled-main', pool });
  const src = `
    const { parentPort } = require('node:worker_threads');
    const { LarderCache, LarderPool } = require(${JSON.stringify(INDEX)});
    const pool = new LarderPool({ name: 'shared-pool' });
    const c = new LarderCache({ name: 'pooled-worker', pool, minShare: 0.25 });
    c.set('from-worker', 'hello');
    const caches = pool.stats().caches;
    parentPort.postMessage({ caches });
    parentPort.once('message', () => { c.close(); pool.close(); parentPort.close(); });`;
  const w = new Worker(src, { eval: true, env: process.env });
  const exited = new Promise((resolve, reject) => {
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker exit ${code}`))));
  });
  const first = await new Promise((resolve) => w.once('message', resolve));
  assert.equal(first.caches, 2, 'the worker sees the main thread\'s cache in its pool');
  assert.equal(pool.stats().caches, 2);
  const joined = new LarderCache({ name: 'pooled-worker' });
  assert.equal(joined.get('from-worker'), 'hello');
  assert.ok(joined.maxSize > 0);
  assert.ok(joined.poolStats().min_share === 0.25);
  assert.throws(() => new LarderCache({ name: 'pooled-worker', pool: other }),
    { code: 'ERR_LARDER_MISMATCH', message: /pool/ });
  w.postMessage('close');
  await exited;
  assert.equal(joined.get('from-worker'), 'hello', 'the joined handle keeps the cache and its pool');
  joined.close();
  mine.close();
  pool.close();
  other.close();
  await waitFor(() => LarderPool.openPools() === 0, 'every pool to close');
  assert.equal(LarderCache.openCaches(), 0);
});

test('a worker that exits holding a pool, a pooled cache and a walk leaks none of them', async () => {
  const src = `
    const { LarderCache, LarderPool } = require(${JSON.stringify(INDEX)});
    const pool = new LarderPool({ name: 'exit-pool', maxSize: 4 * 1024 * 1024 });
    const c = new LarderCache({ pool });
    for (let i = 0; i < 3000; i++) c.set('k' + i, 'v' + i);
    c.keys().next(); // a cursor left open
    // exits without closing anything`;
  await new Promise((resolve, reject) => {
    const w = new Worker(src, { eval: true, env: process.env });
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker exit ${code}`))));
  });
  await waitFor(() => LarderPool.openPools() === 0 && LarderCache.openCaches() === 0,
    'the worker\'s pool and cache to close');
});
