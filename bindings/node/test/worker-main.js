'use strict';
/*
 * worker-main.js - the worker side of workers.test.js: one job per run,
 * chosen by workerData.job; posts its findings back and exits.
 */
const { parentPort, workerData } = require('node:worker_threads');
const { LarderCache } = require('./helpers.js');

/* A value any reader can check: a function of the key and the writer. */
function valueFor(key, writer, n) {
  return `${key}|${writer}|${n}|${key.length + writer * 7 + n}`;
}

function valid(key, v) {
  if (v === undefined) return true;
  const [k, w, n, sum] = v.split('|');
  return k === key && Number(sum) === key.length + Number(w) * 7 + Number(n);
}

const jobs = {
  /* Reads what the main thread wrote, writes its own keys. */
  readWrite({ name, count }) {
    const c = new LarderCache({ name });
    let seen = 0;
    for (let i = 0; i < count; i++) if (c.get(`main-${i}`) === `from-main-${i}`) seen++;
    for (let i = 0; i < count; i++) c.set(`worker-${i}`, { i, from: 'worker' });
    c.close();
    return { seen };
  },

  /* Reads and checks values while other workers close their handles. */
  reader({ name, keys, rounds }) {
    const c = new LarderCache({ name });
    parentPort.postMessage({ opened: true });
    let bad = 0;
    let hits = 0;
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < keys; i++) {
        const k = `k${i}`;
        const v = c.get(k);
        if (v !== undefined) {
          hits++;
          if (v !== `value-${i}`) bad++;
        }
      }
    }
    c.close();
    return { bad, hits };
  },

  /* Opens and closes the shared cache over and over. */
  churn({ name, rounds }) {
    for (let r = 0; r < rounds; r++) {
      const c = new LarderCache({ name });
      c.get('k1');
      c.close();
    }
    return { ok: true };
  },

  /* Opens caches (named, private, with dispose) and exits without closing them. */
  leak({ name }) {
    const shared = new LarderCache({ name, dispose: () => {} });
    const mine = new LarderCache({ maxSize: 1 << 20, dispose: () => {} });
    shared.set('from-leaker', 'v');
    mine.set('k', 'v');
    mine.delete('k');
    return { ok: true };
  },

  /* Deletes a key of a shared cache and waits for its own dispose to hear of it. */
  disposer({ name }) {
    const seen = [];
    const c = new LarderCache({ name, dispose: (v, k, reason) => seen.push(`${k}:${v}:${reason}`) });
    c.delete('shared-key');
    const check = () => {
      if (seen.includes('shared-key:from-main:delete')) {
        c.close();
        parentPort.postMessage({ seen });
      } else {
        setTimeout(check, 5);
      }
    };
    check();
    return undefined;
  },

  /* Loops until terminated. */
  spin({ name }) {
    const c = new LarderCache({ name });
    parentPort.postMessage({ started: true });
    for (;;) c.get('k1');
  },

  /* Random sets, gets, deletes and mgets of self-checking values. */
  stress({ name, writer, ops, keys, seed }) {
    const c = new LarderCache({ name });
    let s = seed >>> 0 || 1;
    const rnd = () => {
      s ^= s << 13; s >>>= 0;
      s ^= s >>> 17;
      s ^= s << 5; s >>>= 0;
      return s;
    };
    let bad = 0;
    let hits = 0;
    for (let i = 0; i < ops; i++) {
      const key = `key-${rnd() % keys}`;
      const op = rnd() % 10;
      if (op < 3) {
        c.set(key, valueFor(key, writer, i));
      } else if (op === 3) {
        c.delete(key);
      } else if (op === 4) {
        const batch = [key, `key-${rnd() % keys}`, `key-${rnd() % keys}`];
        const got = c.mget(batch);
        for (let j = 0; j < batch.length; j++) if (!valid(batch[j], got[j])) bad++;
      } else {
        const v = c.get(key);
        if (v !== undefined) hits++;
        if (!valid(key, v)) bad++;
      }
    }
    c.close();
    return { bad, hits };
  },
};

const result = jobs[workerData.job](workerData);
if (result !== undefined) parentPort.postMessage(result);
