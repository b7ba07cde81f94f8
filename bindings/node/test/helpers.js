'use strict';
/*
 * helpers.js - shared by the binding's tests: loads LarderCache the way a
 * user does (index.js; the addon from LARDER_NODE_ADDON under ctest, else
 * build/larder.node from npm install), and lru-cache where it is installed,
 * waits on conditions with a deadline instead of sleeping for a fixed time,
 * and reads the sizes that flush as of this object's writes.
 */
const path = require('node:path');

const INDEX = path.resolve(__dirname, '..', 'index.js');
const { LarderCache } = require(INDEX);

/*
 * Polls cond() every few ms until it is truthy; fails after deadlineMs. As
 * generous as the C tests' waits (60 s): these tests also run in ASan-built
 * node_asan, several times slower, on machines at a load of 15 and more.
 */
async function waitFor(cond, what, deadlineMs = 60000) {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/* src/ops.c's FLUSH_WAIT_MS: how long size and calculatedSize wait for the
 * maintainer to apply this object's writes (larder_flush). */
const FLUSH_WAIT_MS = 1000;

/*
 * read() of a figure size or calculatedSize gives, held to want (undefined:
 * any value): the flush behind it waits at most FLUSH_WAIT_MS and then the
 * figure is as it stands (the next read flushes again), so only a read
 * that returned sooner must be exact; a slower one (a loaded machine) is
 * read again, until deadlineMs, a hang guard. Returns the value of the
 * first prompt read, or the last value seen.
 */
function flushedRead(read, want, deadlineMs = 60000) {
  const end = performance.now() + deadlineMs;
  for (;;) {
    const t0 = performance.now();
    const v = read();
    const t1 = performance.now();
    if ((want !== undefined && v === want) || t1 - t0 < FLUSH_WAIT_MS || t1 > end) return v;
  }
}

/*
 * lru-cache v11, a devDependency (npm install in bindings/node), for the
 * side-by-side tests: { LRUCache, needLru }, LRUCache null and needLru the
 * reason to skip when it is not installed, else needLru false.
 */
function lruCache() {
  try {
    const { LRUCache } = require(path.resolve(__dirname, '..', 'node_modules', 'lru-cache'));
    return { LRUCache, needLru: false };
  } catch (e) {
    if (e.code !== 'MODULE_NOT_FOUND') throw e;
    return { LRUCache: null, needLru: 'lru-cache is not installed (npm install in bindings/node)' };
  }
}

module.exports = { INDEX, LarderCache, flushedRead, lruCache, waitFor };
