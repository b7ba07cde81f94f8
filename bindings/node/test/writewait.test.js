'use strict';
/*
 * writeWaitMs: how long a write waits for room at the memory bound before
 * ERR_LARDER_BUSY (the engine's larder_config_set_write_wait_ms). A tiny
 * cache is kept at its bound by batches of 8 KB values written in the
 * addon's C loop (mset), which outrun the maintainer's frees within a
 * batch or two (a grace period each); the loops stop on what they wait for
 * and run at most MAX_BATCHES (a hang guard, ~1.6 GB), so no outcome rests
 * on how fast the machine is. The engine's own counters say what happened:
 * write_waits counts the writes that waited for room, busy_memory those
 * refused for it.
 */
const test = require('node:test');
const assert = require('node:assert/strict');
const { LarderCache } = require('./helpers.js');

const MAX_BATCHES = 200;
const HOUR = 3600000;

function batch(round) {
  const v = Buffer.alloc(8000, round & 0xff);
  const entries = [];
  for (let i = 0; i < 1024; i++) entries.push([`r${round}:${i}`, v]);
  return entries;
}

test('writeWaitMs: 0 never waits: a set at the bound throws ERR_LARDER_BUSY at once', () => {
  const c = new LarderCache({ maxSize: 65536, writeWaitMs: 0 });
  assert.equal(c.writeWaitMs, 0);
  let err = null;
  for (let round = 0; round < MAX_BATCHES && err === null; round++) {
    try {
      c.mset(batch(round));
    } catch (e) {
      err = e;
    }
  }
  assert.ok(err !== null,
    `no set refused in ${MAX_BATCHES} batches (write_waits ${c.stats().write_waits})`);
  assert.equal(err.code, 'ERR_LARDER_BUSY');
  assert.match(err.message, /writeWaitMs \(0 ms/);
  const s = c.stats();
  assert.equal(s.write_waits, 0, 'no write waited for room');
  assert.ok(s.busy_memory >= 1, `busy_memory ${s.busy_memory}`);
  c.close();
});

test('writeWaitMs: an hour: writes at the bound wait for room and none is refused', () => {
  const c = new LarderCache({ maxSize: 65536, writeWaitMs: HOUR });
  assert.equal(c.writeWaitMs, HOUR);
  let round = 0;
  // Until a write has met the bound and waited (none may throw meanwhile).
  for (; round < MAX_BATCHES && c.stats().write_waits === 0; round++) c.mset(batch(round));
  assert.ok(c.stats().write_waits > 0, `${MAX_BATCHES} batches of 8 KB values met no bound`);
  // Keep it at the bound for as many batches again.
  for (let i = 0; i < round; i++) c.mset(batch(MAX_BATCHES + i));
  assert.equal(c.stats().busy_memory, 0, 'no write refused for room');
  c.close();
});

test('writeWaitMs: the default is the engine\'s 1 s; bad values are refused like the others', () => {
  const before = LarderCache.openCaches();
  const c = new LarderCache({ maxSize: 65536 });
  assert.equal(c.writeWaitMs, 1000);
  c.close();
  for (const bad of [-1, HOUR + 1, 2 ** 64]) {
    assert.throws(() => new LarderCache({ writeWaitMs: bad }),
      { name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: /writeWaitMs/ });
  }
  for (const bad of [1.5, NaN, Infinity, '10', null, true, 10n, {}]) {
    assert.throws(() => new LarderCache({ writeWaitMs: bad }),
      { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: /writeWaitMs/ });
  }
  assert.equal(LarderCache.openCaches(), before, 'nothing opened by a refused option');
});

test('writeWaitMs of a shared cache: a joiner giving another is refused, one omitting it inherits', () => {
  const name = 'writewait-shared';
  const a = new LarderCache({ name, writeWaitMs: 5 });
  assert.throws(() => new LarderCache({ name, writeWaitMs: 6 }),
    { code: 'ERR_LARDER_MISMATCH', message: /writeWaitMs/ });
  const b = new LarderCache({ name });
  assert.equal(b.writeWaitMs, 5);
  const same = new LarderCache({ name, writeWaitMs: 5 });
  assert.equal(LarderCache.refs(name), 3);
  same.close();
  b.close();
  a.close();
  assert.equal(LarderCache.refs(name), 0);
});
