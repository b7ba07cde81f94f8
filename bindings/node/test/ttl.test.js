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

test('peek returns a live value and nothing once expired', async () => {
  const c = new LarderCache({ maxSize: 1 << 20 });
  c.set('k', 'v', { ttl: 20 });
  await waitFor(() => c.peek('k') === undefined, 'peek to stop seeing the expired entry');
  c.close();
});
