'use strict';
/* dispose: every reason, copies of the values, asynchronous delivery, drops counted. */
const test = require('node:test');
const assert = require('node:assert/strict');
const { Worker } = require('node:worker_threads');
const { INDEX, LarderCache, flushedRead, waitFor } = require('./helpers.js');

function recorder() {
  const events = [];
  return { events, dispose: (value, key, reason) => events.push({ value, key, reason }) };
}

test('reasons: set, delete, expire, clear, evict', async () => {
  const r = recorder();
  const c = new LarderCache({ maxSize: 1 << 20, dispose: r.dispose });
  c.set('a', 'one');
  c.set('a', 'two');
  let synchronous = r.events.length;
  await waitFor(() => r.events.some((e) => e.reason === 'set'), 'a set event');
  assert.equal(synchronous, 0, 'dispose is asynchronous: nothing ran inside set()');
  assert.deepEqual(r.events.find((e) => e.reason === 'set'), { value: 'one', key: 'a', reason: 'set' });

  c.set('d', { obj: true });
  c.delete('d');
  await waitFor(() => r.events.some((e) => e.reason === 'delete'), 'a delete event');
  assert.deepEqual(r.events.find((e) => e.reason === 'delete'), { value: { obj: true }, key: 'd', reason: 'delete' });

  c.set('t', Buffer.from('ttl'), { ttl: 10 });
  await waitFor(() => r.events.some((e) => e.reason === 'expire'), 'an expire event');
  const exp = r.events.find((e) => e.reason === 'expire');
  assert.equal(exp.key, 't');
  assert.deepEqual(exp.value, Buffer.from('ttl'));

  c.set('c1', 'x');
  c.clear();
  await waitFor(() => r.events.some((e) => e.reason === 'clear'), 'a clear event');
  assert.ok(r.events.some((e) => e.reason === 'clear' && e.key === 'c1' && e.value === 'x'));

  const big = 'v'.repeat(1000);
  for (let i = 0; i < 3000; i++) c.set(`e${i}`, big); // 3 MB into a 1 MiB cache
  await waitFor(() => r.events.some((e) => e.reason === 'evict'), 'an evict event');
  const ev = r.events.find((e) => e.reason === 'evict');
  assert.match(ev.key, /^e\d+$/);
  assert.equal(ev.value, big);
  c.close();
});

test('binary keys that are not UTF-8 reach dispose as Buffers', async () => {
  const r = recorder();
  const c = new LarderCache({ maxSize: 1 << 20, dispose: r.dispose });
  c.set(Buffer.from([0xff, 0xfe]), 'v');
  c.delete(Buffer.from([0xff, 0xfe]));
  await waitFor(() => r.events.length === 1, 'the delete event');
  assert.deepEqual(r.events[0].key, Buffer.from([0xff, 0xfe]));
  c.close();
});

test('every removal of one key is reported once, in order', async () => {
  const r = recorder();
  const c = new LarderCache({ maxSize: 8 << 20, dispose: r.dispose });
  for (let i = 0; i < 500; i++) c.set('k', `v${i}`);
  c.delete('k');
  await waitFor(() => r.events.length === 500, `500 events (have ${r.events.length})`);
  for (let i = 0; i < 500; i++) {
    assert.equal(r.events[i].value, `v${i}`);
    assert.equal(r.events[i].reason, i < 499 ? 'set' : 'delete');
  }
  assert.equal(c.stats().dispose_dropped, 0);
  c.close();
});

test('a full dispose queue drops and counts; the cache goes on', async () => {
  const r = recorder();
  const c = new LarderCache({ maxSize: 32 << 20, dispose: r.dispose, disposeQueueBytes: 4096 });
  const v = 'x'.repeat(500);
  // Synchronous writes: the JS thread cannot drain while this loop runs.
  for (let i = 0; i < 2000; i++) c.set('k', v);
  c.delete('k');
  // Nor while it waits here, without returning to the event loop, for the
  // maintainer to overflow the queue: on a loaded machine the maintainer may
  // not have reported much before the loop ended, and a JS thread free to
  // drain could keep up with it, so that nothing were dropped.
  const end = Date.now() + 60000;
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (c.stats().dispose_dropped === 0 && Date.now() < end) Atomics.wait(nap, 0, 0, 1);
  await waitFor(() => r.events.length + c.stats().dispose_dropped === 2000,
    'every removal delivered or counted as dropped');
  assert.ok(c.stats().dispose_dropped > 0, 'some were dropped');
  assert.equal(c.get('k'), undefined);
  c.close();
});

test('closing with removals in flight is safe; nothing is delivered twice', async () => {
  const before = LarderCache.openCaches();
  const r = recorder();
  const c = new LarderCache({ maxSize: 1 << 20, dispose: r.dispose });
  for (let i = 0; i < 1000; i++) c.set('k', `v${i}`);
  c.close();
  assert.equal(LarderCache.openCaches(), before, 'the private cache is closed at once');
  // Whatever reached the queue before close arrives once; the rest is not reported
  // (the engine does not report removals still pending at close).
  await new Promise((resolve) => setImmediate(resolve));
  const seen = new Set(r.events.map((e) => e.value));
  assert.equal(seen.size, r.events.length);
});

test('shards: four maintainers report every removal once; the count is checked', async () => {
  const fs = require('node:fs');
  // The engine names each shard's maintainer thread "larder-maint/K".
  const maintainers = () => fs.readdirSync('/proc/self/task').filter((tid) => {
    try {
      return fs.readFileSync(`/proc/self/task/${tid}/comm`, 'latin1').startsWith('larder-maint/');
    } catch {
      return false; // a thread that ended meanwhile
    }
  }).length;
  for (const bad of [0, 3, 6, 128, 1.5]) {
    assert.throws(() => new LarderCache({ shards: bad }), /shards must be/);
  }
  assert.throws(() => new LarderCache({ shards: '4' }), TypeError);
  const m0 = maintainers();
  const one = new LarderCache({ maxSize: 1 << 20, shards: 1 });
  const m1 = maintainers();
  const r = recorder();
  const c = new LarderCache({ maxSize: 16 << 20, shards: 4, dispose: r.dispose });
  const m4 = maintainers();
  assert.equal(m1 - m0, 1, 'one maintainer thread for one shard');
  assert.equal(m4 - m1, 4, 'one maintainer thread per shard');
  one.close();
  for (let i = 0; i < 2000; i++) c.set(`k${i}`, `v${i}`);
  for (let i = 0; i < 2000; i += 2) assert.equal(c.delete(`k${i}`), true);
  for (let i = 1; i < 2000; i += 2) assert.equal(c.get(`k${i}`), `v${i}`);
  c.clear();
  await waitFor(() => r.events.length >= 2000, 'every removal');
  const seen = new Map();
  for (const e of r.events) {
    assert.equal(seen.has(e.key), false, `${e.key} reported twice`);
    seen.set(e.key, e.reason);
  }
  assert.equal(seen.size, 2000);
  for (let i = 0; i < 2000; i++) assert.equal(seen.get(`k${i}`), i % 2 === 0 ? 'delete' : 'clear');
  assert.equal(flushedRead(() => c.size, 0), 0);
  c.close();
  const named = new LarderCache({ name: 'shards-test', shards: 2 });
  assert.throws(() => new LarderCache({ name: 'shards-test', shards: 4 }), /another shards/);
  const joined = new LarderCache({ name: 'shards-test' });
  joined.close();
  named.close();
});

test('an exception thrown by dispose is the thread\'s uncaughtException, after the rest of its batch', async () => {
  // In a worker, whose process.on('uncaughtException') the test runner does not own.
  // Node-API 8 dropped the exception silently (a DEP0168 warning) until the
  // addon raised it with napi_fatal_exception.
  const src = `
    const { parentPort } = require('node:worker_threads');
    const { LarderCache } = require(${JSON.stringify(INDEX)});
    const uncaught = [];
    process.on('uncaughtException', (e) => uncaught.push(e.message));
    const seen = [];
    const c = new LarderCache({ dispose: (v, k) => {
      seen.push(k);
      if (k === 'a') throw new Error('dispose threw for ' + k);
    } });
    c.set('a', '1');
    c.set('b', '2');
    c.delete('a');
    c.delete('b');
    const check = () => {
      if (seen.length < 2) return setTimeout(check, 5);
      c.close();
      parentPort.postMessage({ uncaught, seen });
    };
    check();`;
  const result = await new Promise((resolve, reject) => {
    const w = new Worker(src, { eval: true, env: process.env });
    let message;
    w.on('message', (m) => { message = m; });
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 ? resolve(message) : reject(new Error(`worker exit ${code}`))));
  });
  assert.deepEqual(result.seen, ['a', 'b'], 'both removals delivered, in order');
  assert.deepEqual(result.uncaught, ['dispose threw for a'], 'the exception reached uncaughtException once');
});

test('a cache with dispose dropped without close() is collected and its native cache closed', async () => {
  // The addon's thread-safe function, a GC root, held the cache through its
  // callback: such a cache was never collected, its native cache never closed.
  const before = LarderCache.openCaches();
  (() => {
    for (let i = 0; i < 4; i++) {
      const r = recorder();
      const c = new LarderCache({ maxSize: 1 << 20, dispose: r.dispose });
      c.set('k', 'v');
      c.delete('k');
    }
    // A dispose that closes over its own cache, as one that reads it does.
    const c = new LarderCache({ maxSize: 1 << 20, dispose: () => c.size });
    c.set('k', 'v');
    c.delete('k');
  })();
  assert.equal(LarderCache.openCaches(), before + 5);
  await waitFor(() => {
    global.gc();
    return LarderCache.openCaches() === before;
  }, 'the dropped caches to be collected and closed');
});
