'use strict';
/*
 * The addon's own UTF-16 -> UTF-8 encoder (an ASCII key of up to 16 units
 * in one step; keys and short string values eight and four ASCII units at
 * a time, then one unit at a time) and the
 * ASCII flag a writer puts in a string value's tag (a get then makes the
 * string with V8's one-byte path, an mget of such values returns one
 * string; string and JSON values not all ASCII come back as one string cut
 * by UTF-16 units): every character class
 * at every position around the encoder's 4-, 8- and 16-unit blocks must give
 * Node's own UTF-8 bytes and come back intact.
 */
const test = require('node:test');
const assert = require('node:assert/strict');
const { LarderCache, waitFor } = require('./helpers.js');

/* One character of each UTF-8 length, a surrogate pair, lone surrogates. */
const SPECIALS = ['\u007f', '\u0080', 'é', '\u07ff', '\u0800', '€', '\uffff', '🐢', '\ud800', '\udfff'];

function variants() {
  const out = [];
  for (let len = 1; len <= 26; len++) {
    out.push('a'.repeat(len));
    for (const ch of SPECIALS) {
      for (const at of [0, 1, 3, 4, 7, 8, 9, 12, 15, 16, len - 1]) {
        if (at < 0 || at >= len) continue;
        out.push('k'.repeat(at) + ch + 'z'.repeat(Math.max(0, len - at - 1)));
      }
    }
  }
  // Lone surrogates all encode as U+FFFD: keep one string per byte sequence.
  const byBytes = new Map(out.map((k) => [Buffer.from(k).toString('hex'), k]));
  return [...byBytes.values()];
}

/* What a string is stored as: its UTF-8 (lone surrogates become U+FFFD, as Buffer.from does). */
const stored = (s) => Buffer.from(s).toString('utf8');
/* What an object comes back as: JSON.stringify escapes lone surrogates, so they survive. */
const viaJson = (o) => JSON.parse(JSON.stringify(o));

test('string keys: the same bytes as Buffer.from, at every block position', () => {
  const c = new LarderCache({ maxSize: 16 << 20 });
  const ks = variants();
  ks.forEach((k, i) => c.set(k, `v${i}`));
  ks.forEach((k, i) => {
    assert.equal(c.get(Buffer.from(k)), `v${i}`, JSON.stringify(k));
    assert.equal(c.get(k), `v${i}`, JSON.stringify(k));
  });
  assert.deepEqual(c.mget(ks), ks.map((_, i) => `v${i}`));
  c.close();
});

test('string and JSON values come back intact whether ASCII or not, by get and mget', () => {
  const c = new LarderCache({ maxSize: 16 << 20 });
  const vs = variants();
  vs.forEach((v, i) => {
    c.set(`s${i}`, v);
    c.set(`j${i}`, { v });
  });
  vs.forEach((v, i) => {
    assert.equal(c.get(`s${i}`), stored(v), JSON.stringify(v));
    assert.deepEqual(c.get(`j${i}`), viaJson({ v }), JSON.stringify(v));
  });
  const keys = vs.flatMap((_, i) => [`s${i}`, `j${i}`]);
  assert.deepEqual(c.mget(keys), vs.flatMap((v) => [stored(v), viaJson({ v })]));
  c.close();
});

test('long values (the encoder of V8) are flagged ASCII only when they are', () => {
  const c = new LarderCache({ maxSize: 64 << 20 });
  const ascii = 'x'.repeat(100000);
  const late = `${'x'.repeat(99999)}é`;
  const early = `é${'x'.repeat(99999)}`;
  c.set('a', ascii);
  c.set('l', late);
  c.set('e', early);
  c.set('empty', '');
  assert.equal(c.get('a'), ascii);
  assert.equal(c.get('l'), late);
  assert.equal(c.get('e'), early);
  assert.equal(c.get('empty'), '');
  assert.deepEqual(c.mget(['a', 'empty', 'l', 'e', 'none']), [ascii, '', late, early, undefined]);
  assert.deepEqual(c.mget(['a', 'empty']), [ascii, '']);
  c.close();
});

test('an mget of text values that are not all ASCII: one string cut by UTF-16 units', () => {
  // Every value is a string or JSON value, some with 2-, 3- and 4-byte characters, so the
  // addon returns the batch as one UTF-8 string and index.js cuts it where meta says, in
  // UTF-16 units: a unit miscounted anywhere shifts every value after it.
  const c = new LarderCache({ maxSize: 16 << 20 });
  const chars = ['a', 'é', '€', '🐢', '\ud800', ''];
  const keys = [];
  for (let i = 0; i < 600; i++) {
    const v = chars[i % chars.length].repeat(i % 7) + String(i) + chars[(i * 5) % chars.length];
    if (i % 3 === 0) c.set(`k${i}`, { v, i });
    else c.set(`k${i}`, v);
    keys.push(`k${i}`);
    if (i % 50 === 0) keys.push(`absent${i}`);
  }
  const want = keys.map((k) => c.get(k));
  assert.deepEqual(c.mget(keys), want);
  assert.deepEqual(c.mget(keys.slice().reverse()), want.slice().reverse());
  // A Buffer in the batch sends it back to decoding each value from the scratch.
  c.set('bytes', Buffer.from([0xf0, 0x9f]));
  assert.deepEqual(c.mget([...keys, 'bytes']), [...want, Buffer.from([0xf0, 0x9f])]);
  c.close();
});

test('an mget mixing ASCII strings with Buffers of any bytes returns each as it was stored', () => {
  const c = new LarderCache({ maxSize: 16 << 20 });
  const asciiBytes = Buffer.from('plain ascii bytes');
  const highBytes = Buffer.from([0x80, 0xff, 0x41]);
  c.set('s', 'text');
  c.set('b1', asciiBytes);
  c.set('b2', highBytes);
  c.set('u', 'ünïcode');
  const got = c.mget(['s', 'b1', 's', 'b2', 'u']);
  assert.equal(got[0], 'text');
  assert.ok(Buffer.isBuffer(got[1]));
  assert.deepEqual(got[1], asciiBytes);
  assert.equal(got[2], 'text');
  assert.deepEqual(got[3], highBytes);
  assert.equal(got[4], 'ünïcode');
  c.close();
});

test('dispose decodes flagged values like get', async () => {
  const seen = [];
  const c = new LarderCache({ maxSize: 16 << 20, dispose: (v, k, reason) => seen.push([k, v, reason]) });
  c.set('a', 'ascii value');
  c.set('u', 'ünïcode');
  c.set('j', { n: 1 });
  c.delete('a');
  c.delete('u');
  c.delete('j');
  await waitFor(() => seen.length === 3, 'three dispose calls');
  assert.deepEqual(seen.sort(), [['a', 'ascii value', 'delete'], ['j', { n: 1 }, 'delete'], ['u', 'ünïcode', 'delete']]);
  c.close();
});
