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

// The entry's deadline as an offset on the monotonic clock (performance.now()
// reads CLOCK_MONOTONIC, as the engine does; only differences of deadlines are
// compared, so the clocks' origins cancel), from a getRemainingTTL() between
// two clock readings: the tightest pair of many is kept (under 2 ms ends the
// search), so a loaded machine stretching one reading cannot move the result,
// which is good to the clocks' granularity (a few ms). getRemainingTTL()
// extends nothing: retrying changes nothing.
function deadlineOf(c, k) {
  let spread = Infinity;
  let at = 0;
  for (let i = 0; i < 10000 && spread >= 2; i++) {
    const t0 = performance.now();
    const left = c.getRemainingTTL(k);
    const t1 = performance.now();
    if (t1 - t0 < spread) {
      spread = t1 - t0;
      at = t0 + left;
    }
  }
  return at;
}

// TTLs far longer than any stall a loaded machine causes, so that nothing
// expires under a test, and waits longer than the engine's slack (an
// extension is stored only when the deadline is more than min(ttl/64, 1 s)
// short): ttl 32 s, slack 500 ms, 800 ms of the lifetime let pass.
const LONG_TTL = 32000;
const PASSED_MS = 800;

test('updateAgeOnGet: reads push the deadline out', async () => {
  const c = new LarderCache({ maxSize: 1 << 20, ttl: LONG_TTL, updateAgeOnGet: true });
  c.set('k', 'v');
  const set = deadlineOf(c, 'k');
  await waitFor(() => c.getRemainingTTL('k') < LONG_TTL - PASSED_MS, 'some of the lifetime to pass');
  assert.equal(c.get('k'), 'v');
  const moved = deadlineOf(c, 'k') - set;
  assert.ok(moved >= PASSED_MS - 50, `the read moved the deadline by ${moved} ms`);
  c.close();
});

test('updateAgeOnGet: get and mget extend the deadline before they return; has does not', async () => {
  const c = new LarderCache({ maxSize: 1 << 20, ttl: LONG_TTL, updateAgeOnGet: true });
  for (const k of ['g', 'm', 'h']) c.set(k, 'v');
  await waitFor(() => c.getRemainingTTL('h') < LONG_TTL - PASSED_MS, 'some of the lifetime to pass');
  const before = { g: deadlineOf(c, 'g'), m: deadlineOf(c, 'm'), h: deadlineOf(c, 'h') };
  assert.equal(c.get('g'), 'v');
  assert.deepEqual(c.mget(['m', 'absent']), ['v', undefined]);
  assert.equal(c.has('h'), true);
  // Each deadline is known to a few ms; an extension moves it by over PASSED_MS.
  const by = (k) => deadlineOf(c, k) - before[k];
  assert.ok(by('g') >= PASSED_MS - 50, `get moved the deadline by ${by('g')} ms`);
  assert.ok(by('m') >= PASSED_MS - 50, `mget moved the deadline by ${by('m')} ms`);
  assert.ok(Math.abs(by('h')) < 50, `has moved the deadline by ${by('h')} ms`);
  c.close();
});

test('peek returns a live value and nothing once expired', async () => {
  const c = new LarderCache({ maxSize: 1 << 20 });
  c.set('k', 'v', { ttl: 20 });
  await waitFor(() => c.peek('k') === undefined, 'peek to stop seeing the expired entry');
  c.close();
});

test('peek neither extends an updateAgeOnGet deadline nor counts a hit; get does both', async () => {
  const c = new LarderCache({ ttl: LONG_TTL, updateAgeOnGet: true });
  c.set('k', 'v');
  await waitFor(() => c.getRemainingTTL('k') < LONG_TTL - PASSED_MS, 'some of the lifetime to pass');
  const hits = c.stats().hits;
  const before = deadlineOf(c, 'k');
  for (let i = 0; i < 3; i++) assert.equal(c.peek('k'), 'v');
  const afterPeek = deadlineOf(c, 'k') - before;
  assert.ok(Math.abs(afterPeek) < 50, `peek moved the deadline by ${afterPeek} ms`);
  assert.equal(c.get('k'), 'v');
  const afterGet = deadlineOf(c, 'k') - before;
  assert.ok(afterGet >= PASSED_MS - 50, `get moved the deadline by ${afterGet} ms`);
  // A thread's hit samples reach the counters in order: once get's is in, any peek's would be too.
  await waitFor(() => c.stats().hits >= hits + 1, "the get's hit to be counted");
  assert.equal(c.stats().hits, hits + 1);
  c.close();
});
