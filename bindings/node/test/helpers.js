'use strict';
/*
 * helpers.js - shared by the binding's tests: loads LarderCache the way a
 * user does (index.js; the addon from LARDER_NODE_ADDON under ctest, else
 * build/larder.node from npm install) and waits on conditions with a
 * deadline instead of sleeping for a fixed time.
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

module.exports = { INDEX, LarderCache, waitFor };
