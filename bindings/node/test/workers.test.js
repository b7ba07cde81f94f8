'use strict';
/*
 * One cache shared by every worker thread: values cross workers; closing in
 * one worker while others read is safe; a worker that exits or is
 * terminated without closing leaks nothing; a stress run from several
 * workers reads only self-consistent values.
 */
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { LarderCache, waitFor } = require('./helpers.js');

const WORKER = path.join(__dirname, 'worker-main.js');

/*
 * Runs a worker job; resolves with its last message once it has exited
 * cleanly. onOpened, if given, is called when the worker says it opened.
 */
function run(job, data, onOpened) {
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER, { workerData: { job, ...data } });
    let result;
    w.on('message', (m) => {
      if (m.opened && onOpened) onOpened();
      else result = m;
    });
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 ? resolve(result) : reject(new Error(`worker exit ${code}`))));
  });
}

test('a value written in one worker is read in another', async () => {
  const name = 'w-readwrite';
  const c = new LarderCache({ name, maxSize: 8 << 20 });
  for (let i = 0; i < 100; i++) c.set(`main-${i}`, `from-main-${i}`);
  const r = await run('readWrite', { name, count: 100 });
  assert.equal(r.seen, 100);
  for (let i = 0; i < 100; i++) assert.deepEqual(c.get(`worker-${i}`), { i, from: 'worker' });
  assert.equal(LarderCache.refs(name), 1, 'the worker released its handle');
  c.close();
  assert.equal(LarderCache.refs(name), 0);
});

test('a second open with other settings is refused; omitted ones are inherited', () => {
  const a = new LarderCache({ name: 'w-mismatch', maxSize: 4 << 20 });
  assert.throws(() => new LarderCache({ name: 'w-mismatch', maxSize: 8 << 20 }),
    { code: 'ERR_LARDER_MISMATCH', message: /maxSize/ });
  const b = new LarderCache({ name: 'w-mismatch' });
  assert.equal(b.maxSize, 4 << 20, 'the joined cache reports its own settings');
  assert.equal(b.name, 'w-mismatch');
  assert.throws(() => new LarderCache({ name: 'w-mismatch', max: 10 }), { message: /max/ });
  b.set('k', 'v');
  assert.equal(a.get('k'), 'v');
  a.close();
  assert.equal(b.get('k'), 'v', 'the cache lives while a handle holds it');
  b.close();
  assert.equal(LarderCache.refs('w-mismatch'), 0);
});

test('a shared cache reports each removal to the dispose of every handle, in every worker', async () => {
  const name = 'w-dispose';
  const seen = [];
  const c = new LarderCache({ name, maxSize: 8 << 20, dispose: (v, k, reason) => seen.push(`${k}:${v}:${reason}`) });
  c.set('shared-key', 'from-main');
  const r = await run('disposer', { name });
  assert.ok(r.seen.includes('shared-key:from-main:delete'), 'the worker heard of its delete');
  await waitFor(() => seen.includes('shared-key:from-main:delete'), 'the main thread to hear of it too');
  c.close();
  assert.equal(LarderCache.refs(name), 0);
});

test('closing in one worker while others read: no crash, no stale read', async () => {
  const name = 'w-close';
  const base = LarderCache.openCaches();
  const c = new LarderCache({ name, maxSize: 8 << 20 });
  for (let i = 0; i < 200; i++) c.set(`k${i}`, `value-${i}`);
  let opened = 0;
  const readers = [1, 2, 3].map(() => run('reader', { name, keys: 200, rounds: 150 }, () => opened++));
  const churn = run('churn', { name, rounds: 200 });
  await waitFor(() => opened === 3, 'the readers to open the cache');
  c.close(); // the main thread's handle goes while the workers read
  const results = await Promise.all(readers);
  await churn;
  for (const r of results) {
    assert.equal(r.bad, 0);
    assert.ok(r.hits > 0);
  }
  await waitFor(() => LarderCache.refs(name) === 0, 'every handle released');
  assert.equal(LarderCache.openCaches(), base);
});

/* Collects garbage until the addon's handle count stops falling (finalisers run deferred). */
async function settledHandles() {
  let last = -1;
  for (let i = 0; i < 50; i++) {
    global.gc();
    await new Promise((resolve) => setImmediate(resolve));
    const now = LarderCache.liveHandles();
    if (now === last) return now;
    last = now;
  }
  return last;
}

test('a worker that exits or is terminated without closing leaks nothing', async () => {
  const name = 'w-leak';
  const base = LarderCache.openCaches();
  const handlesBefore = typeof global.gc === 'function' ? await settledHandles() : null;
  const c = new LarderCache({ name, maxSize: 8 << 20 });
  c.set('k1', 'v');
  await run('leak', { name });
  assert.equal(c.get('from-leaker'), 'v');
  await waitFor(() => LarderCache.refs(name) === 1, 'the exited worker to release its handle');
  assert.equal(LarderCache.openCaches(), base + 1, "the worker's private cache is closed");

  const w = new Worker(WORKER, { workerData: { job: 'spin', name } });
  await new Promise((resolve) => w.once('message', resolve));
  assert.equal(LarderCache.refs(name), 2);
  await w.terminate();
  await waitFor(() => LarderCache.refs(name) === 1, 'the terminated worker to release its handle');
  if (handlesBefore !== null) {
    // The exited workers' handle structs are freed too: only c's is new.
    await waitFor(async () => (await settledHandles()) === handlesBefore + 1, 'the workers\' handles to be freed');
  }
  c.close();
  assert.equal(LarderCache.openCaches(), base);
});

test('stress: four workers, random ops, every value read checks', async () => {
  const name = 'w-stress';
  const seed = Number(process.env.LARDER_NODE_SEED || Date.now() % 1e9);
  console.log(`stress seed ${seed}`);
  const c = new LarderCache({ name, maxSize: 1 << 20 }); // small: evictions too
  const results = await Promise.all([0, 1, 2, 3].map((writer) =>
    run('stress', { name, writer, ops: 150000, keys: 2000, seed: seed + writer })));
  for (const r of results) assert.equal(r.bad, 0);
  assert.ok(results.some((r) => r.hits > 0));
  c.close();
  assert.equal(LarderCache.refs(name), 0);
});
