'use strict';
/* Time to live: per write, the cache default, none, and updateAgeOnGet. */
const test = require('node:test');
const assert = require('node:assert/strict');
const { LarderCache, waitFor } = require('./helpers.js');

test('an entry with a ttl expires; getRemainingTTL counts down', async () => {
  const c = new LarderCache({ maxSize: 1 << 20 });
  c.set('short', 'v', { ttl: 30 });
  c.set('long', 'v', { ttl: 600000 });
  c.set('never', 'v');
  const left = c.getRemainingTTL('long');
  assert.ok(left > 0 && left <= 600000, `remaining ${left}`);
  assert.equal(c.getRemainingTTL('never'), Infinity);
  assert.equal(c.getRemainingTTL('absent'), 0);
  await waitFor(() => c.get('short') === undefined, 'the 30 ms entry to expire');
  assert.equal(c.has('short'), false);
  assert.equal(c.getRemainingTTL('short'), 0);
  assert.equal(c.get('long'), 'v');
  c.close();
});

test('the cache default ttl applies; ttl 0 on a write means never', async () => {
  const c = new LarderCache({ maxSize: 1 << 20, ttl: 40 });
  c.set('default', 'v');
  c.set('forever', 'v', { ttl: 0 });
  c.set('inf', 'v', { ttl: Infinity });
  assert.ok(c.getRemainingTTL('default') <= 40);
  await waitFor(() => c.get('default') === undefined, 'the default-ttl entry to expire');
  assert.equal(c.get('forever'), 'v');
  assert.equal(c.getRemainingTTL('inf'), Infinity);
  c.close();
});

test('updateAgeOnGet: reads push the deadline out', async () => {
  const c = new LarderCache({ maxSize: 1 << 20, ttl: 2000, updateAgeOnGet: true });
  c.set('k', 'v');
  // Let some of the lifetime pass, then read until a read has extended it.
  await waitFor(() => c.getRemainingTTL('k') < 1900, 'the lifetime to run down a little');
  const before = c.getRemainingTTL('k');
  await waitFor(() => {
    c.get('k');
    return c.getRemainingTTL('k') > before + 50;
  }, 'a read to extend the deadline');
  c.close();
});

test('updateAgeOnGet: get and mget extend the deadline before they return; has does not', async () => {
  // ttl 6400 ms: the engine stores an extension only when the deadline is
  // more than ttl/64 (100 ms) short, so one read after 400 ms moves the
  // absolute deadline out by at least 300 ms. Deadlines are compared as
  // Date.now() + remaining, so a slow machine between the calls changes
  // nothing but the margin of clock granularity (a few ms).
  const ttl = 6400;
  const c = new LarderCache({ maxSize: 1 << 20, ttl, updateAgeOnGet: true });
  const deadline = (k) => Date.now() + c.getRemainingTTL(k);
  for (const k of ['g', 'm', 'h']) c.set(k, 'v');
  await waitFor(() => c.getRemainingTTL('h') < ttl - 400, '400 ms of the lifetime to pass');
  const before = { g: deadline('g'), m: deadline('m'), h: deadline('h') };
  assert.equal(c.get('g'), 'v');
  assert.deepEqual(c.mget(['m', 'absent']), ['v', undefined]);
  assert.equal(c.has('h'), true);
  assert.ok(deadline('g') - before.g >= 250, `get moved the deadline by ${deadline('g') - before.g} ms`);
  assert.ok(deadline('m') - before.m >= 250, `mget moved the deadline by ${deadline('m') - before.m} ms`);
  assert.ok(Math.abs(deadline('h') - before.h) < 50, `has moved the deadline by ${deadline('h') - before.h} ms`);
  c.close();
});

test('peek returns a live value and nothing once expired', async () => {
  const c = new LarderCache({ maxSize: 1 << 20 });
  c.set('k', 'v', { ttl: 20 });
  await waitFor(() => c.peek('k') === undefined, 'peek to stop seeing the expired entry');
  c.close();
});

test('peek neither extends an updateAgeOnGet deadline nor counts a hit; get does both', async () => {
  const c = new LarderCache({ ttl: 2000, updateAgeOnGet: true });
  c.set('k', 'v');
  await waitFor(() => c.getRemainingTTL('k') < 1900, 'the deadline to come 100 ms closer');
  const hits = c.stats().hits;
  const before = c.getRemainingTTL('k');
  for (let i = 0; i < 3; i++) assert.equal(c.peek('k'), 'v');
  const afterPeek = c.getRemainingTTL('k');
  assert.ok(afterPeek <= before, `peek extended: ${before} -> ${afterPeek} ms`);
  assert.equal(c.get('k'), 'v');
  const afterGet = c.getRemainingTTL('k');
  assert.ok(afterGet > afterPeek, `get did not extend: ${afterPeek} -> ${afterGet} ms`);
  // A thread's hit samples reach the counters in order: once get's is in, any peek's would be too.
  await waitFor(() => c.stats().hits >= hits + 1, "the get's hit to be counted");
  assert.equal(c.stats().hits, hits + 1);
  c.close();
});
