'use strict';
/*
 * index.js - LarderCache, larder's cache for Node.js: an lru-cache-style
 * API over the native engine (src/addon.c), with values off the V8 heap.
 *
 * Owns: option checking, the value encoding (a tag byte chosen here, then
 * the bytes: Buffers raw, strings UTF-8, other values through a
 * serializer), the per-thread scratch buffers the addon copies values into,
 * the optional JS-side L1, the `max` entry limit, dispose delivery, the
 * iterators' decoding of the addon's chunks, and LarderPool (a pool object
 * counts the open caches opened with it, so close() can refuse while one is
 * open; the addon's references keep the memory safe whatever the order).
 *
 * Invariants:
 *   NODE-J1. A value read never aliases the scratch: Buffers and serializer input
 *       are copied out of it before the next native call can overwrite it.
 *   NODE-J2. L1 never shadows a write: set/delete/clear/mset drop the key from
 *       L1 before they return, and an L1 entry expires no later than the
 *       engine's entry (its deadline is taken before the native call).
 *   NODE-J3. L1 exists only for a private cache (no name) without updateAgeOnGet:
 *       a shared cache is written by other workers, whose writes this
 *       thread's Map cannot see, and an L1 hit would not extend a lifetime.
 *   NODE-J4. A walk ends at this handle's clear(), and after this handle's
 *       delete, set, mset or clear it re-reads the rest of its fetched
 *       chunk, so it hands out no key deleted and no value replaced since
 *       the fetch (as lru-cache's walk); other handles' writes are the
 *       engine's weak consistency.
 */
const path = require('node:path');
const v8 = require('node:v8');
const { isUtf8 } = require('node:buffer');
const { performance } = require('node:perf_hooks');

function loadAddon() {
  const fromEnv = process.env.LARDER_NODE_ADDON;
  if (fromEnv) return require(path.resolve(fromEnv));
  const built = path.join(__dirname, 'build', 'larder.node');
  try {
    return require(built);
  } catch (err) {
    if (err.code !== 'MODULE_NOT_FOUND') throw err;
    throw new Error(`larder: the native addon is not built (${built} is missing); ` +
      'run `npm install` in bindings/node, or build the project with CMake and set ' +
      'LARDER_NODE_ADDON to build/<preset>/bindings/node/larder.node');
  }
}

const native = loadAddon();
/*
 * A byte value's copy: TypedArray's own slice, one builtin that allocates and
 * copies, and makes a Buffer (Buffer's species). Node's Buffer.allocUnsafe and
 * buf.copy cost 400 instructions more per get of a 64-byte value (callgrind,
 * docs/node.md). (Buffer's own slice makes a view, not a copy.)
 */
const typedArraySlice = Object.getPrototypeOf(Uint8Array.prototype).slice;
const LIMITS = native.limits();

/* Value tags: the first byte of every stored value (enum value_tag in src/binding.h). */
const TAG_BYTES = 0;
const TAG_STRING = 1;
const TAG_JSON = 2;
const TAG_CUSTOM = 3;
/* Or'ed into a string or JSON value's tag by the addon when its bytes are all ASCII. */
const TAG_ASCII = 0x40;

const POLICIES = {
  default: 0, 's3fifo': 1, fifo: 2, lru: 3, wtinylfu: 4, arc: 5,
  'wtinylfu-tuned': 6, 's3fifo-tuned': 7,
};
/* enum larder_cause -> lru-cache's dispose reasons (plus 'clear'). */
const REASONS = ['delete', 'set', 'expire', 'evict', 'clear'];
/* Bits of registry.h's enum lnode_setting_bit. */
const GIVEN = {
  maxSize: 1, max: 2, ttl: 4, maxKeyBytes: 8, maxValueBytes: 16, policy: 32, updateAgeOnGet: 64,
  compression: 128, pool: 256, minShare: 512, maxShare: 512, missCost: 1024, shards: 2048,
  writeWaitMs: 4096,
};

/*
 * lru-cache options whose behaviour LarderCache does not have: refused, so
 * code moved from lru-cache does not silently lose them. Given as a falsy
 * value (false, 0, null, '') each is accepted: lru-cache reads that as its
 * default (off, none, no limit), which is what LarderCache does; but not
 * the three lru-cache itself refuses given as anything but a function (or
 * for perf, an object with now()): GIVEN_ANY. (ttlAutopurge and
 * ttlResolution are accepted and have no effect: the engine always reclaims
 * expired entries in the background and never returns one.)
 */
const UNSUPPORTED = ['allowStale', 'noDeleteOnStaleGet', 'sizeCalculation', 'maxEntrySize',
  'fetchMethod', 'memoMethod', 'noDisposeOnSet', 'disposeAfter', 'updateAgeOnHas', 'noUpdateTTL',
  'allowStaleOnFetchRejection', 'allowStaleOnFetchAbort', 'ignoreFetchAbort', 'noDeleteOnFetchRejection',
  'perf', 'onInsert'];
const GIVEN_ANY = new Set(['fetchMethod', 'memoMethod', 'perf']);
/* The boolean ones among them: they read back as their lru-cache default, false. */
const DEFAULT_FALSE = ['allowStale', 'noDeleteOnStaleGet', 'noDisposeOnSet', 'updateAgeOnHas',
  'noUpdateTTL', 'allowStaleOnFetchRejection', 'allowStaleOnFetchAbort', 'ignoreFetchAbort',
  'noDeleteOnFetchRejection'];

const DEFAULT_MAX_SIZE = 64 * 1024 * 1024;
const DEFAULT_MAX_KEY_BYTES = 1024;
const DEFAULT_MAX_VALUE_BYTES = 1024 * 1024;
const DEFAULT_DISPOSE_QUEUE_BYTES = 16 * 1024 * 1024;
/* The engine's write wait for room at its memory bound: its default, and its most, an hour
 * (larder_config_set_write_wait_ms). */
const DEFAULT_WRITE_WAIT_MS = 1000;
const MAX_WRITE_WAIT_MS = 3600000;
/* mget's keys go as one string up to this many UTF-16 units in all (V8's limit is ~2^29). */
const ROPE_MAX_UNITS = 1 << 24;

/*
 * The scratch the addon copies values into, one per thread (each worker
 * loads its own copy of this module). Grown, never shrunk.
 */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);
let meta = new Int32Array(1024);
native.setScratch(scratch, meta);

function growScratch(bytes) {
  let n = scratch.length;
  while (n < bytes) n *= 2;
  scratch = Buffer.allocUnsafeSlow(n);
  native.setScratch(scratch, meta);
}

function growMeta(count) {
  let n = meta.length;
  while (n < count) n *= 2;
  meta = new Int32Array(n);
  native.setScratch(scratch, meta);
}

function rangeError(message) {
  const err = new RangeError(message);
  err.code = 'ERR_OUT_OF_RANGE';
  return err;
}

function typeError(message) {
  const err = new TypeError(message);
  err.code = 'ERR_INVALID_ARG_TYPE';
  return err;
}

/* JSON.stringify's own TypeErrors (a BigInt, a cycle) carry no code: they
 * become the documented ERR_INVALID_ARG_TYPE, with the reason kept. A
 * number JSON cannot spell (NaN, Infinity, -Infinity) is stored as its
 * String form, which is no JSON text, so fromJson tells it apart; -0 as
 * '-0', which JSON.parse reads back as -0 (JSON.stringify writes '0'). */
function jsonOf(value) {
  if (typeof value === 'number' && (!Number.isFinite(value) || Object.is(value, -0))) {
    return Object.is(value, -0) ? '-0' : String(value);
  }
  try {
    return JSON.stringify(value);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
    const err = typeError(`the serializer cannot encode this value (${e.message})`);
    err.cause = e;
    throw err;
  }
}

/* The ttl of set's or mset's options object: -1 (the cache's default) when it
 * gives none; null is no lifetime, as lru-cache stores it (0). */
function ttlOption(options) {
  if (options === null) throw typeError('options must be an object');
  if (options.ttl === null) return 0;
  return options.ttl === undefined ? -1 : ttlArg(options.ttl);
}

/* The status object of lru-cache's per-call options ({ status }), or undefined. */
function statusOf(options) {
  // lru-cache reads a field of null options and throws (get, set, has, peek, fetch).
  if (options === null) throw typeError('options must be an object');
  if (typeof options !== 'object') return undefined;
  const { status } = options;
  return status !== null && typeof status === 'object' ? status : undefined;
}

/* A stored JSON value back: JSON text never starts with 'N' or 'I', nor
 * with '-I', so those are the numbers jsonOf wrote by name. */
function fromJson(text) {
  const c = text.charCodeAt(0);
  if (c === 0x4e || c === 0x49 || (c === 0x2d && text.charCodeAt(1) === 0x49)) return Number(text);
  return JSON.parse(text);
}

/* A negative max, maxSize or ttl in the constructor: lru-cache's class, TypeError. */
function checkNonnegative(name, value) {
  if (typeof value === 'number' && value < 0) {
    throw typeError(`${name} must be a nonnegative integer, got ${value}`);
  }
}

/* The largest number below the engine's capacity bound, 2^62 (larder_config_set_capacity). */
const MAX_CAPACITY = 2 ** 62 - 1024;

function checkInteger(name, value, min, max) {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw typeError(`${name} must be an integer, got ${typeof value}`);
  }
  if (value < min || value > max) throw rangeError(`${name} must be ${min}..${max}, got ${value}`);
  return value;
}

/* ttl in ms -> the addon's argument: -1 the cache's default, 0 none. */
function ttlArg(ttl) {
  if (ttl === undefined) return -1;
  if (typeof ttl !== 'number' || Number.isNaN(ttl)) throw typeError('ttl must be a number of milliseconds');
  if (ttl < 0) throw rangeError(`ttl must be >= 0 (0: no expiry), got ${ttl}`);
  // From 1.8e19 ms (the addon's bound for a u64) on, a lifetime is no expiry, as for Infinity.
  return ttl >= 1.8e19 ? 0 : Math.ceil(ttl);
}

const COMPRESSION_DEFAULTS = { minSize: 256, minSaving: 10 };

/*
 * compression: false/undefined (off), true (the defaults) or { minSize,
 * minSaving }: values of at least minSize bytes are stored compressed (a trained zstd dictionary, else LZ4)
 * when that saves at least minSaving percent (docs/compression.md).
 */
function compressionArg(option) {
  if (option === undefined || option === false) return { minSize: 0, minSaving: 0 };
  if (option === true) return COMPRESSION_DEFAULTS;
  if (option === null || typeof option !== 'object') {
    throw typeError('compression must be a boolean or { minSize, minSaving }');
  }
  const minSize = option.minSize === undefined ? COMPRESSION_DEFAULTS.minSize
    : checkInteger('compression.minSize', option.minSize, 1, LIMITS.valueLimit - 1);
  const minSaving = option.minSaving === undefined ? COMPRESSION_DEFAULTS.minSaving
    : checkInteger('compression.minSaving', option.minSaving, 0, 99);
  return { minSize, minSaving };
}

/*
 * The L1 holds only well-formed string keys. Another key can name the same
 * engine entry: a string with a lone surrogate (encoded as U+FFFD) or a byte
 * view whose bytes are UTF-8. l1Key gives the L1 key of the entry a key
 * names (undefined when no L1 key can name it), so a write through any of
 * them drops the L1 copy (NODE-J2).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const isWellFormed = typeof String.prototype.isWellFormed === 'function'
  ? (s) => s.isWellFormed() : (s) => !LONE_SURROGATE.test(s);

function l1Key(key) {
  if (typeof key === 'string') return isWellFormed(key) ? key : Buffer.from(key).toString('utf8');
  if (!ArrayBuffer.isView(key)) return undefined;
  const bytes = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  return isUtf8(bytes) ? bytes.toString('utf8') : undefined;
}

/*
 * A cache or pool name: a string whose UTF-8 the addon checks (1..254
 * bytes, no NUL). A lone surrogate has no UTF-8 form; encoded as U+FFFD it
 * would join another name's cache, so it is refused here.
 */
function checkName(name) {
  if (name === undefined) return name;
  if (typeof name !== 'string') throw typeError('name must be a string');
  if (!isWellFormed(name)) {
    throw rangeError('name must be 1..254 bytes of UTF-8 without NUL (it has a lone surrogate)');
  }
  return name;
}

/* Set by LarderPool's static block: count the caches opened through a pool object. */
let poolAttach = null;
let poolDetach = null;
let poolNative = null;
/* A cache collected without close() stops counting against its pool object. */
const cachesInPools = new FinalizationRegistry((pool) => poolDetach(pool));

const POOL_OPTIONS = ['minShare', 'maxShare', 'missCost'];

/* The pool options of a LarderCache: { pool, native, minShare, maxShare, missCost }. */
function poolArgs(o) {
  if (o.pool === undefined) {
    for (const k of POOL_OPTIONS) if (o[k] !== undefined) throw typeError(`${k} needs the pool option`);
    return { pool: null, native: null, minShare: 0, maxShare: 1, missCost: 1 };
  }
  if (!(o.pool instanceof LarderPool)) throw typeError('pool must be a LarderPool');
  // The pool sets the capacity; the engine refuses a capacity of its own (and so `max`'s steering).
  if (o.maxSize !== undefined) throw typeError('maxSize cannot be combined with pool: the pool sets the capacity (use minShare/maxShare)');
  if (o.max !== undefined && o.max !== 0) throw typeError('max cannot be combined with pool: the pool sets the capacity, which max would steer');
  for (const k of POOL_OPTIONS) {
    if (o[k] !== undefined && typeof o[k] !== 'number') throw typeError(`${k} must be a number`);
  }
  const minShare = o.minShare === undefined ? 0 : o.minShare;
  const maxShare = o.maxShare === undefined ? 1 : o.maxShare;
  if (!(minShare >= 0 && minShare <= maxShare && maxShare > 0 && maxShare <= 1)) {
    throw rangeError(`minShare and maxShare must satisfy 0 <= minShare <= maxShare <= 1, maxShare > 0; got ${minShare}, ${maxShare}`);
  }
  const missCost = o.missCost === undefined ? 1 : o.missCost;
  if (!(missCost > 0 && missCost <= 1e9)) throw rangeError(`missCost must be > 0 and <= 1e9, got ${missCost}`);
  return { pool: o.pool, native: poolNative(o.pool), minShare, maxShare, missCost };
}

function makeSerializer(option) {
  if (option === undefined || option === 'json') {
    return { tag: TAG_JSON, serialize: null, deserialize: null };
  }
  if (option === 'v8') return { tag: TAG_CUSTOM, serialize: v8.serialize, deserialize: v8.deserialize };
  if (option && typeof option.serialize === 'function' && typeof option.deserialize === 'function') {
    return { tag: TAG_CUSTOM, serialize: option.serialize, deserialize: option.deserialize };
  }
  throw typeError("serializer must be 'json', 'v8' or { serialize, deserialize }");
}

class LarderCache {
  #n; // the addon's operations for this handle (addon.c), bound to it
  #closed = false;
  #serializer;
  #l1 = null; // Map key -> { key, v, exp } (NODE-J2, NODE-J3)
  #l1Order = null; // L1 entries in fill order from #l1Head; stale ones are no longer #l1's
  #l1Head = 0;
  #l1Max = 0;
  #writes = 0; // counts this handle's writes: an L1 fill raced by one is dropped (NODE-J2), a walk re-reads
  #clears = 0; // counts this handle's clear()s: a walk ends at one
  #ttlInUse = false;
  #unflushed = false; // a write since size last flushed (larder_flush)
  #dispose = null;
  #max = 0; // the entry limit; 0 = none
  #ttl = 0; // the cache's default lifetime in ms; 0 = none
  #updateAgeOnGet = false;
  #writeWaitMs;
  #maxSize;
  #setsToCheck = 0;
  #name;
  #pool = null; // the LarderPool this handle was opened with (it counts the handle)
  #pooled = false; // the cache draws its capacity from a pool (this handle's or a joiner's)
  #ttlAutopurge; // lru-cache's options kept only to read back (they change nothing here)
  #ttlResolution;
  #backgroundFetchSize;

  /**
   * @param {object} options see docs/node.md; every option is optional.
   */
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw typeError('options must be an object');
    const o = options;
    for (const k of UNSUPPORTED) {
      if (GIVEN_ANY.has(k) ? o[k] !== undefined : o[k]) {
        throw typeError(`LarderCache does not support lru-cache's ${k} option (docs/node.md)`);
      }
    }
    const compression = compressionArg(o.compression);
    let given = 0;
    // null is as absent (ttl, updateAgeOnGet): a joining handle then asks nothing of the cache.
    for (const k of Object.keys(GIVEN)) if (o[k] !== undefined && o[k] !== null) given |= GIVEN[k];
    const pool = poolArgs(o);

    const name = checkName(o.name);
    for (const k of ['maxSize', 'max', 'ttl']) checkNonnegative(k, o[k]);
    // Any integer up to the engine's capacity bound, as lru-cache takes any (over 2^53 too).
    const maxSize = o.maxSize === undefined ? DEFAULT_MAX_SIZE
      : checkInteger('maxSize', o.maxSize, 65536, MAX_CAPACITY);
    // max: 0 is no entry limit, as in lru-cache (where ttl or maxSize then bounds the cache);
    // from 2^32 on a RangeError, as lru-cache's arrays of max entries give.
    const max = o.max === undefined ? 0 : checkInteger('max', o.max, 0, 2 ** 32 - 1);
    // A falsy ttl (null, false, '') is no lifetime, as lru-cache reads it (ttl || 0), but
    // NaN (docs/node.md); a fraction lru-cache refuses (an integer ms).
    if (Number.isFinite(o.ttl) && !Number.isInteger(o.ttl)) {
      throw typeError(`ttl must be an integer number of milliseconds, got ${o.ttl}`);
    }
    const ttl = !o.ttl && !Number.isNaN(o.ttl) ? 0 : ttlArg(o.ttl);
    const maxKeyBytes = o.maxKeyBytes === undefined ? DEFAULT_MAX_KEY_BYTES
      : checkInteger('maxKeyBytes', o.maxKeyBytes, 1, LIMITS.keyLimit);
    const maxValueBytes = o.maxValueBytes === undefined ? DEFAULT_MAX_VALUE_BYTES
      : checkInteger('maxValueBytes', o.maxValueBytes, 0, LIMITS.valueLimit - 1);
    const policyName = o.policy === undefined ? 'default' : o.policy;
    if (typeof policyName !== 'string') throw typeError('policy must be a string');
    if (!Object.hasOwn(POLICIES, policyName)) { // not `in`: 'toString' is in every object
      throw rangeError(`policy must be one of ${Object.keys(POLICIES).join(', ')}, got '${policyName}'`);
    }
    // Truthy or falsy, as lru-cache reads it (!!updateAgeOnGet).
    const updateAgeOnGet = !!o.updateAgeOnGet;
    const shards = o.shards === undefined ? 1 : checkInteger('shards', o.shards, 1, 64);
    if ((shards & (shards - 1)) !== 0) throw rangeError(`shards must be a power of two, got ${shards}`);
    // A falsy dispose is none, as lru-cache reads it; a truthy non-function is a mistake it would hide.
    if (o.dispose && typeof o.dispose !== 'function') throw typeError('dispose must be a function');
    const queueBytes = o.disposeQueueBytes === undefined ? DEFAULT_DISPOSE_QUEUE_BYTES
      : checkInteger('disposeQueueBytes', o.disposeQueueBytes, 4096, 2 ** 40);
    const writeWaitMs = o.writeWaitMs === undefined ? DEFAULT_WRITE_WAIT_MS
      : checkInteger('writeWaitMs', o.writeWaitMs, 0, MAX_WRITE_WAIT_MS);
    this.#serializer = makeSerializer(o.serializer);

    if (o.l1 !== undefined && o.l1 !== false) {
      if (o.l1 === null || typeof o.l1 !== 'object') throw typeError('l1 must be { max }');
      const l1Max = checkInteger('l1.max', o.l1.max, 1, 2 ** 24);
      if (name !== undefined) {
        throw typeError('l1 is not available for a shared (named) cache: other workers write it');
      }
      if (updateAgeOnGet) throw typeError('l1 cannot be combined with updateAgeOnGet');
      this.#l1Max = l1Max;
      this.#l1 = new Map();
      this.#l1Order = [];
    }

    this.#dispose = o.dispose || null;
    this.#ttlAutopurge = !!o.ttlAutopurge;
    // lru-cache's reading: a positive integer or 0 as given, anything else its default, 1;
    // but a symbol or a nonzero bigint, which its Math.floor refuses (TypeError).
    const res = o.ttlResolution;
    if (typeof res === 'symbol' || (typeof res === 'bigint' && res !== 0n)) {
      throw typeError(`ttlResolution must be a number, got ${typeof res}`);
    }
    this.#ttlResolution = res === 0 || (Number.isInteger(res) && res > 0) ? res : 1;
    // lru-cache's background fetches' share of its size; without a fetchMethod (refused)
    // it sizes nothing, but is checked as there: 0 or a positive integer (default 1).
    const bfs = o.backgroundFetchSize === undefined ? 1 : o.backgroundFetchSize;
    if (bfs !== 0 && !(Number.isInteger(bfs) && bfs > 0)) {
      throw typeError('backgroundFetchSize must be a nonnegative integer');
    }
    this.#backgroundFetchSize = bfs;
    this.#name = name;
    this.#n = native.open(name === undefined ? null : name, maxSize, max, ttl,
      maxKeyBytes, maxValueBytes + 1, POLICIES[policyName], updateAgeOnGet ? 1 : 0, given,
      this.#dispose ? LarderCache.#deliverer(new WeakRef(this)) : null,
      queueBytes, compression.minSize === 0 ? 0 : compression.minSize + 1, compression.minSaving,
      pool.native, pool.minShare, pool.maxShare, pool.missCost, shards, writeWaitMs);
    if (pool.pool !== null) {
      this.#pool = pool.pool;
      poolAttach(this.#pool);
      cachesInPools.register(this, this.#pool, this);
    }
    // A joined shared cache keeps the settings it was opened with.
    const eff = this.#n.settings();
    this.#max = eff.max;
    this.#maxSize = eff.maxSize;
    this.#pooled = eff.pooled;
    this.#ttl = eff.ttl;
    this.#updateAgeOnGet = eff.updateAgeOnGet;
    this.#writeWaitMs = eff.writeWaitMs;
    this.#ttlInUse = eff.ttl > 0;
    this.#setsToCheck = this.#checkInterval();
  }

  /** The value stored under key, or undefined. */
  get(key, options) {
    const status = options === undefined ? undefined : statusOf(options);
    if (status !== undefined) return this.#getStatus(key, status);
    if (this.#l1 !== null) return this.#getL1(key);
    const r = this.#n.get(key);
    return typeof r === 'number' ? this.#decodeGet(r, key) : r;
  }

  /** Like get; also fills and reads the L1. */
  #getL1(key) {
    const e = this.#l1.get(key);
    if (e !== undefined && (e.exp === 0 || e.exp > performance.now())) return e.v;
    const writes = this.#writes;
    const r = this.#n.get(key);
    const v = typeof r === 'number' ? this.#decodeGet(r, key) : r;
    // A custom deserializer may have written the cache meanwhile: then v may be stale.
    if (v !== undefined && typeof key === 'string' && writes === this.#writes && isWellFormed(key)) {
      this.#l1Fill(key, v);
    }
    return v;
  }

  #l1Fill(key, v) {
    let exp = 0;
    if (this.#ttlInUse) {
      const t0 = performance.now();
      const left = this.#n.ttl(key);
      if (left === 0) return;
      if (left !== Infinity) exp = t0 + left - 1;
    }
    this.#l1Put({ key, v, exp });
  }

  /*
   * The L1 drops its oldest fill first. The fill order is an array of the
   * entries beside the Map: a refilled or dropped key leaves a stale entry
   * there (no longer the Map's), skipped when it comes up and removed when
   * the array is compacted (after max evictions, or when stale entries
   * reach twice max), so every fill is O(1) amortized. (Evicting through
   * the Map's keys().next() instead costs a scan over the holes V8 leaves
   * at the front of its table: 8-11 us per fill at 10,000 entries under
   * churn.)
   */
  #l1Put(e) {
    const l1 = this.#l1;
    l1.set(e.key, e);
    this.#l1Order.push(e);
    while (l1.size > this.#l1Max) {
      const old = this.#l1Order[this.#l1Head++];
      if (l1.get(old.key) === old) l1.delete(old.key);
    }
    if (this.#l1Head > this.#l1Max || this.#l1Order.length - this.#l1Head > 2 * this.#l1Max) {
      const live = [];
      for (let i = this.#l1Head; i < this.#l1Order.length; i++) {
        const x = this.#l1Order[i];
        if (l1.get(x.key) === x) live.push(x);
      }
      this.#l1Order = live;
      this.#l1Head = 0;
    }
  }

  #l1Drop(key) {
    this.#l1.delete(l1Key(key));
  }

  /* r: the addon's result, a length (value in the scratch) or minus the size needed. */
  #decodeGet(r, key, peek = false) {
    while (r < 0) {
      growScratch(-r);
      r = peek ? this.#n.peek(key) : this.#n.get(key);
      if (typeof r !== 'number') return r;
    }
    return this.#decode(scratch, 0, r);
  }

  /* The value whose tag byte is buf[start], ending at end (NODE-J1: never a view of the
   * scratch). */
  #decode(buf, start, end) {
    const tag = buf[start];
    // ASCII reads the same in Latin-1, whose decoder does a third less work than UTF-8's (callgrind).
    const text = tag & TAG_ASCII ? 'latin1' : 'utf8';
    switch (tag & ~TAG_ASCII) {
      case TAG_STRING: return buf.toString(text, start + 1, end);
      case TAG_JSON: return fromJson(buf.toString(text, start + 1, end));
      case TAG_CUSTOM: return this.#serializer.deserialize(Buffer.from(buf.subarray(start + 1, end)));
      default: return typedArraySlice.call(buf, start + 1, end);
    }
  }

  /* The tag a value is stored under. */
  #tagOf(value) {
    if (typeof value === 'string') return TAG_STRING;
    if (ArrayBuffer.isView(value)) return TAG_BYTES;
    return this.#serializer.tag;
  }

  #serialize(value) {
    const s = this.#serializer;
    const out = s.serialize === null ? jsonOf(value) : s.serialize(value);
    if (s.serialize === null ? typeof out !== 'string' : !ArrayBuffer.isView(out)) {
      throw typeError(`the serializer cannot encode this value (${typeof value})`);
    }
    return out;
  }

  /**
   * Stores value under key (replacing it). set(key, undefined) deletes the
   * key, as in lru-cache. Options: { ttl } in ms (0: never expires).
   * Returns this.
   */
  set(key, value, options) {
    const status = options === undefined ? undefined : statusOf(options);
    if (status !== undefined) return this.#setStatus(key, value, options.ttl, status);
    if (value === undefined) {
      this.delete(key);
      return this;
    }
    const ttl = options === undefined ? -1 : ttlOption(options);
    const tag = this.#tagOf(value);
    const stored = tag === TAG_STRING || tag === TAG_BYTES ? value : this.#serialize(value);
    this.#writes++;
    if (this.#l1 !== null) this.#l1Drop(key);
    if (ttl > 0) this.#ttlInUse = true;
    this.#unflushed = true;
    this.#n.set(key, stored, tag, ttl);
    if (this.#max !== 0 && --this.#setsToCheck <= 0) this.#enforceMax();
    return this;
  }

  /** Whether key is present; like lru-cache's has, not a use for the eviction policy. */
  has(key, options) {
    const status = options === undefined ? undefined : statusOf(options);
    if (status !== undefined) return this.#hasStatus(key, status);
    return this.#n.has(key);
  }

  /**
   * The value, as lru-cache's peek: no L1 refill or reorder, no hit for the
   * eviction policy or the counters, and no expire-after-access extension
   * (the engine's larder_peek).
   */
  peek(key, options) {
    const status = options === undefined ? undefined : statusOf(options);
    if (status !== undefined) return this.#peekStatus(key, status);
    if (this.#l1 !== null) {
      const e = this.#l1.get(key);
      if (e !== undefined && (e.exp === 0 || e.exp > performance.now())) return e.v;
    }
    const r = this.#n.peek(key);
    return typeof r === 'number' ? this.#decodeGet(r, key, true) : r;
  }

  /*
   * lru-cache's status objects ({ status } in set's, get's, has's and peek's
   * options): op, key, cache, the outcome ('add', 'replace', 'deleted',
   * 'miss' with maxEntrySizeExceeded before a size's RangeError; 'hit',
   * 'miss'), value and oldValue, and for an entry with a lifetime ttl,
   * start, now and remainingTTL. The engine keeps a deadline, not when
   * a lifetime began, so ttl is the time left from start = now, as info()
   * gives it; an overwrite is 'replace' even with the very value stored
   * (lru-cache's 'update'), as dispose hears it.
   */
  #statusOp(status, op, key) {
    status.op = op;
    status.key = key;
    status.cache = this;
    return status;
  }

  #statusTTL(status, key) {
    const left = this.#n.ttl(key);
    if (left > 0 && left !== Infinity) {
      const now = performance.now();
      Object.assign(status, { ttl: left, start: now, now, remainingTTL: left });
    }
  }

  #getStatus(key, status) {
    this.#statusOp(status, 'get', key);
    const value = this.#getHitStatus(key, status);
    if (value !== undefined) status.value = value;
    return value;
  }

  /* get's outcome, and the ttl fields of a hit; fetch fills the same, without value. */
  #getHitStatus(key, status) {
    const value = this.get(key);
    if (value === undefined) {
      status.get = 'miss';
    } else {
      this.#statusTTL(status, key);
      status.get = 'hit';
    }
    return value;
  }

  #hasStatus(key, status) {
    this.#statusOp(status, 'has', key);
    const hit = this.#n.has(key);
    status.has = hit ? 'hit' : 'miss';
    if (hit) this.#statusTTL(status, key);
    return hit;
  }

  #peekStatus(key, status) {
    this.#statusOp(status, 'peek', key);
    const value = this.peek(key);
    status.peek = value === undefined ? 'miss' : 'hit';
    if (value !== undefined) status.value = value;
    return value;
  }

  /* Its fields in lru-cache's order (value before cache), as a logged status reads. */
  #setStatus(key, value, ttl, status) {
    status.op = 'set';
    status.key = key;
    if (value !== undefined) status.value = value;
    status.cache = this;
    if (value === undefined) {
      this.delete(key);
      status.set = 'deleted';
      return this;
    }
    const old = this.peek(key); // a bad key throws here, and a bad ttl next: neither is a miss
    ttlOption({ ttl });
    try {
      this.set(key, value, { ttl });
    } catch (e) {
      // Refused for its size (the old value deleted): lru-cache's miss over maxEntrySize;
      // for room, the old value deleted as well: nothing stored, a miss.
      if (e.code === 'ERR_OUT_OF_RANGE') Object.assign(status, { set: 'miss', maxEntrySizeExceeded: true });
      else if (e.code === 'ERR_LARDER_BUSY' || e.code === 'ERR_LARDER_NOMEM') status.set = 'miss';
      throw e;
    }
    status.set = old === undefined ? 'add' : 'replace';
    if (old !== undefined) status.oldValue = old;
    this.#statusTTL(status, key);
    return this;
  }

  /** Removes key; true if it was present. */
  delete(key) {
    this.#writes++;
    if (this.#l1 !== null) this.#l1Drop(key);
    this.#unflushed = true;
    return this.#n.delete(key);
  }

  /** Removes every entry (dispose reason 'clear'). */
  clear() {
    this.#writes++;
    if (this.#l1 !== null) {
      this.#l1.clear();
      this.#l1Order = [];
      this.#l1Head = 0;
    }
    this.#unflushed = true;
    this.#n.clear();
    this.#clears++;
  }

  /**
   * lru-cache's fetch without a fetchMethod (which LarderCache refuses): a
   * promise of get(key). Null options throw at the call, as lru-cache's; a
   * status says op 'fetch', fetch 'get' and get's outcome, as lru-cache's,
   * with its context and forceRefresh (which, as there, changes nothing).
   */
  fetch(key, options) {
    const status = options === undefined ? undefined : statusOf(options);
    try {
      if (status === undefined) return Promise.resolve(this.get(key));
      this.#loaderStatus(status, 'fetch', key, options);
      status.fetch = 'get';
      return Promise.resolve(this.#getHitStatus(key, status));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** lru-cache's memo without a memoMethod (which LarderCache refuses): its error, after
   * filling a status as lru-cache's does. */
  memo(key, options) {
    const status = options === undefined ? undefined : statusOf(options);
    if (status !== undefined) this.#loaderStatus(status, 'memo', key, options);
    throw new Error('no memoMethod provided to constructor');
  }

  /* fetch's and memo's status fields before the outcome, in lru-cache's order (fetch
   * files the context first, memo after the key; only fetch notes forceRefresh). */
  #loaderStatus(status, op, key, options) {
    if (op === 'fetch' && options.context) status.context = options.context;
    status.op = op;
    status.key = key;
    if (op === 'memo' && options.context) status.context = options.context;
    if (op === 'fetch' && options.forceRefresh) status.forceRefresh = true;
    status.cache = this;
  }

  /** Milliseconds key has left: 0 when absent, Infinity when it never expires. */
  getRemainingTTL(key) {
    return this.#n.ttl(key);
  }

  /**
   * lru-cache's purgeStale(): false, as lru-cache's with ttlAutopurge. The
   * engine reclaims expired entries in the background (dispose reason
   * 'expire') and never returns one, so none is left for this call to
   * remove; it waits for the maintainer to apply this handle's writes
   * (larder_flush), as size does.
   */
  purgeStale() {
    this.#unflushed = !this.#n.flush();
    return false;
  }

  /**
   * lru-cache's info(key): { value } (as peek), with ttl (ms left) and start
   * (Date.now()) when the entry has a lifetime; undefined when absent.
   */
  info(key) {
    const value = this.peek(key);
    if (value === undefined) return undefined;
    const entry = { value };
    const left = this.#n.ttl(key);
    if (left > 0 && left !== Infinity) {
      entry.ttl = left;
      entry.start = Date.now();
    }
    return entry;
  }

  /**
   * lru-cache's dump(): [key, entry] pairs for load() here or in lru-cache,
   * entries as info() gives them, in the walk's order. As in lru-cache, once
   * a lifetime is in use every entry carries ttl and start (ttl 0: none), so
   * that a cache with a default ttl loads an entry without one as it was.
   */
  dump() {
    const out = [];
    let timed = this.#ttl > 0 || this.#ttlInUse;
    for (const [key, value] of this.#walk(true)) {
      const left = this.#n.ttl(key);
      if (left === 0) continue; // expired since its chunk was fetched
      const entry = { value };
      if (left !== Infinity) {
        entry.ttl = left;
        entry.start = Date.now();
        timed = true;
      }
      out.push([key, entry]);
    }
    if (timed) {
      const now = Date.now();
      for (const [, entry] of out) {
        if (entry.ttl === undefined) Object.assign(entry, { ttl: 0, start: now });
      }
    }
    return out;
  }

  /**
   * lru-cache's load(pairs): clear(), then set each [key, { value, ttl,
   * start }] with the lifetime it has left (ttl less the time since start;
   * one that ran out, or a negative ttl, is not stored, and a NaN ttl is no
   * lifetime, as lru-cache reads them). The pairs are checked before the clear;
   * a key or value refused part-way (thrown) leaves those before it loaded.
   */
  load(pairs) {
    if (pairs === null || pairs === undefined || typeof pairs[Symbol.iterator] !== 'function') {
      throw typeError('load needs an iterable of [key, entry] pairs (from dump())');
    }
    const list = Array.from(pairs);
    for (const pair of list) {
      if (!Array.isArray(pair) || pair.length < 2 || pair[1] === null || typeof pair[1] !== 'object') {
        throw typeError('load needs [key, { value, ttl, start }] pairs (from dump())');
      }
      const { ttl, start } = pair[1];
      if ((ttl != null && typeof ttl !== 'number') || (start != null && typeof start !== 'number')) {
        throw typeError('a loaded entry\'s ttl and start must be numbers');
      }
    }
    this.clear();
    for (const [key, { value, ttl, start }] of list) {
      if (ttl == null) {
        this.set(key, value);
      } else if (ttl === 0 || Number.isNaN(ttl)) {
        // lru-cache's set takes a NaN ttl, and its entry never goes stale: no lifetime.
        this.set(key, value, { ttl: 0 });
      } else {
        // A lifetime that ran out, or a negative one (lru-cache's set takes
        // it, and its entry is stale at once), is not stored.
        const left = start ? ttl - (Date.now() - start) : ttl;
        if (!(left > 0)) continue;
        this.set(key, value, { ttl: left });
      }
    }
  }

  /**
   * Values of many keys in one native call (one engine batch lookup); an
   * array in keys' order, undefined where a key is absent.
   */
  mget(keys) {
    if (!Array.isArray(keys)) throw typeError('keys must be an array');
    const n = keys.length;
    if (n >= meta.length) growMeta(n + 1); // meta[n]: whether a batch string holds JSON
    // String keys go as one string and their lengths: one Node-API read in
    // the addon instead of one per key. Concatenated with += (a rope that the
    // addon's read flattens once) in the loop that checks them: 76-91
    // instructions per key fewer than keys.join('') after it (callgrind,
    // 1,000-key batches), though no faster in time here (docs/node.md).
    // Past ROPE_MAX_UNITS the keys are read one by one instead, so that no
    // batch meets V8's string length limit, and a key too long for the cache
    // gets the addon's RangeError naming maxKeyBytes.
    let joined = null;
    if (n > 1) {
      let s = '';
      let units = 0;
      const lens = meta;
      for (let i = 0; i < n; i++) {
        const k = keys[i];
        if (typeof k !== 'string') {
          s = null;
          break;
        }
        const len = k.length;
        if ((units += len) > ROPE_MAX_UNITS) {
          s = null;
          break;
        }
        lens[i] = len;
        s += k;
      }
      joined = s;
    }
    let r = this.#n.mget(keys, joined);
    while (typeof r === 'number' && r < 0) {
      growScratch(-r);
      if (joined !== null) for (let i = 0; i < n; i++) meta[i] = keys[i].length;
      r = this.#n.mget(keys, joined);
    }
    const out = new Array(n);
    const text = typeof r === 'string' ? r : null;
    let off = 0;
    if (text !== null && meta[n] === 0) {
      // Every value is a string (the addon's meta[n]): cut them without
      // reading their tags (docs/node.md: the instructions saved). slice,
      // not substring: V8's optimised code clamps slice's arguments in 8
      // fewer instructions (substring may also swap them); the same string.
      for (let i = 0; i < n; i++) {
        const len = meta[i];
        out[i] = len === 0 ? undefined : text.slice(off + 1, (off += len));
      }
      return out;
    }
    // Byte values of a batch become views of one copy of the scratch's bytes
    // from the first of them on, made when that one comes up: one allocation
    // and one copy per batch instead of one of each per value (docs/node.md).
    let bytes = null;
    let base = 0;
    let buf = scratch;
    let lens = meta;
    for (let i = 0; i < n; i++) {
      const len = lens[i];
      if (len === 0) {
        out[i] = undefined;
        continue;
      }
      // A custom deserializer may call into larder, which overwrites the
      // scratch and meta: the batch goes to copies of its own first (NODE-J1).
      if (text === null && buf === scratch && (buf[off] & ~TAG_ASCII) === TAG_CUSTOM) {
        let end = off;
        for (let j = i; j < n; j++) end += lens[j];
        buf = Buffer.from(scratch.subarray(0, end));
        lens = meta.slice(0, n);
      }
      // One string for the batch: every value is a string or JSON value, and len and
      // off count its UTF-16 units (the tag is one), not the scratch's bytes.
      if (text !== null) {
        const v = text.slice(off + 1, off + len);
        out[i] = (text.charCodeAt(off) & ~TAG_ASCII) === TAG_JSON ? fromJson(v) : v;
      } else if (buf[off] === TAG_BYTES) {
        if (bytes === null) {
          // The span from this value to the batch's end, copied once (NODE-J1).
          let end = off;
          for (let j = i; j < n; j++) end += lens[j];
          bytes = Buffer.allocUnsafeSlow(end - off);
          buf.copy(bytes, 0, off, end);
          base = off;
        }
        out[i] = bytes.subarray(off - base + 1, off - base + len);
      } else {
        out[i] = this.#decode(buf, off, off + len);
      }
      off += len;
    }
    return out;
  }

  /**
   * Stores many entries ([key, value] pairs) in one native call, in order;
   * options: { ttl } for all. Not atomic: on an error (thrown) the entries
   * before the failing one are stored.
   */
  mset(entries, options) {
    const ttl = options === undefined ? -1 : ttlOption(options);
    const keys = [];
    const values = [];
    const tags = [];
    if (entries === null || entries === undefined || typeof entries[Symbol.iterator] !== 'function') {
      throw typeError('mset entries must be an iterable of [key, value] pairs');
    }
    for (const entry of entries) {
      if (!Array.isArray(entry) || entry.length < 2) throw typeError('mset entries must be [key, value] pairs');
      const [key, value] = entry;
      if (value === undefined) throw typeError('mset values must not be undefined');
      const tag = this.#tagOf(value);
      keys.push(key);
      values.push(tag === TAG_STRING || tag === TAG_BYTES ? value : this.#serialize(value));
      tags.push(tag);
    }
    this.#writes++;
    if (this.#l1 !== null) for (const k of keys) this.#l1Drop(k);
    if (ttl > 0) this.#ttlInUse = true;
    this.#unflushed = true;
    this.#n.mset(keys, values, tags, ttl);
    if (this.#max !== 0) {
      this.#setsToCheck -= keys.length;
      if (this.#setsToCheck <= 0) this.#enforceMax();
    }
    return this;
  }

  /*
   * Walks the cache with the engine's cursor, a chunk of entries per native
   * call: [key, value] pairs (value undefined when withValues is false).
   * The cursor closes when the walk ends, breaks or throws (or, abandoned,
   * when the generator is collected or the cache closed). As lru-cache's
   * walk, it ends at this handle's clear(), and after a write through this
   * handle the rest of the chunk is read again, entry by entry, so that no
   * key deleted and no value replaced since the fetch is handed out (other
   * handles' writes are the engine's weak consistency).
   */
  *#walk(withValues) {
    const n = this.#n;
    const it = n.iterOpen(withValues);
    const clears = this.#clears;
    try {
      for (let buf = n.iterNext(it); buf !== undefined; buf = n.iterNext(it)) {
        const writes = this.#writes;
        for (let off = 0; off < buf.length;) {
          const kl = buf.readUInt32LE(off);
          const vl = buf.readUInt32LE(off + 4);
          const ks = off + 8;
          const vs = ks + kl;
          off = vs + vl;
          const keyBytes = buf.subarray(ks, vs);
          const key = isUtf8(keyBytes) ? keyBytes.toString('utf8') : Buffer.from(keyBytes);
          if (this.#clears !== clears) return;
          if (this.#writes === writes || this.#closed) {
            yield [key, withValues ? this.#decode(buf, vs, off) : undefined];
          } else if (withValues) {
            const v = this.peek(key);
            if (v !== undefined) yield [key, v];
          } else if (n.has(key)) {
            yield [key, undefined];
          }
        }
      }
    } finally {
      n.iterClose(it);
    }
  }

  /**
   * [key, value] pairs of every entry, from the engine (not the L1): weakly
   * consistent (a key present throughout is returned once; one written or
   * removed meanwhile may or may not be), in the index's order, not by
   * recency; counts no hit and extends no deadline. A key is a string when
   * its bytes are UTF-8, else a Buffer.
   */
  entries() {
    return this.#walk(true);
  }

  /** Keys of every entry, as entries() (values are not copied). */
  *keys() {
    for (const [k] of this.#walk(false)) yield k;
  }

  /** Values of every entry, as entries(). */
  *values() {
    for (const [, v] of this.#walk(true)) yield v;
  }

  [Symbol.iterator]() {
    return this.entries();
  }

  /** '[object LarderCache]', as lru-cache names itself ('LRUCache') to Object.prototype.toString. */
  get [Symbol.toStringTag]() {
    return 'LarderCache';
  }

  /**
   * Calls fn.call(thisArg, value, key, this) for every entry, as entries();
   * thisArg defaults to the cache, as in lru-cache.
   */
  forEach(fn, thisArg = this) {
    if (typeof fn !== 'function') throw typeError('forEach needs a function');
    for (const [k, v] of this.#walk(true)) fn.call(thisArg, v, k, this);
  }

  /**
   * Entries in the cache. Exact for the writes made through this object: the
   * first read after one waits for the maintainer to apply them (larder_flush,
   * tens of microseconds, at most 1 s). Writes of other workers show up
   * within a batching window (~200 us per shard, at most 1 ms; 2 ms per
   * shard, at most 8 ms, for a trickle).
   */
  get size() {
    const s = this.#flushedStats();
    if (this.#max !== 0) this.#enforceMax(s);
    return s.entries;
  }

  /**
   * Bytes the entries take (headers, keys, values, slot rounding), as the
   * index holds them once this object's writes are applied: a removal's
   * drop out at once, as lru-cache's do, not when their memory is freed.
   */
  get calculatedSize() {
    return this.#flushedStats().live_bytes;
  }

  /* The engine's counters once the maintainer applied this object's writes. */
  #flushedStats() {
    if (this.#unflushed) this.#unflushed = !this.#n.flush();
    return this.#n.stats();
  }

  /** The entry limit (0: none), as the cache was opened with it. */
  get max() {
    return this.#max;
  }

  /** The default lifetime in ms (0: none), as the cache was opened with it. */
  get ttl() {
    return this.#ttl;
  }

  /** ttlAutopurge as given (as a boolean): the engine always reclaims expired entries. */
  get ttlAutopurge() {
    return this.#ttlAutopurge;
  }

  /** ttlResolution as lru-cache reads it; the engine's clock has no such setting. */
  get ttlResolution() {
    return this.#ttlResolution;
  }

  /** backgroundFetchSize as given (default 1): there is no fetchMethod whose fetches it sizes. */
  get backgroundFetchSize() {
    return this.#backgroundFetchSize;
  }

  /** lru-cache's maxEntrySize: 0, no limit in its units (values are bounded by maxValueBytes). */
  get maxEntrySize() {
    return 0;
  }

  /** The dispose function given, or undefined. */
  get dispose() {
    return this.#dispose ?? undefined;
  }

  /** Whether reads extend lifetimes, as the cache was opened with it. */
  get updateAgeOnGet() {
    return this.#updateAgeOnGet;
  }

  /** How long a write waits for room at the memory bound (ms), as the cache was opened with it. */
  get writeWaitMs() {
    return this.#writeWaitMs;
  }

  /** { minSize, minSaving } as the cache was opened with them, or false. */
  get compression() {
    const s = this.#n.settings();
    return s.compressMinSize === 0 ? false : { minSize: s.compressMinSize, minSaving: s.compressMinSaving };
  }

  /** The shared cache's name; undefined for a private cache. */
  get name() {
    return this.#name;
  }

  /** The byte capacity: maxSize, or for a cache in a pool the capacity the pool gives it now. */
  get maxSize() {
    return this.#pooled ? this.#n.stats().capacity_bytes : this.#maxSize;
  }

  /**
   * The engine's counters (hits, misses, evictions, ...), plus
   * dispose_dropped (removals the dispose queue refused) when dispose is set.
   */
  stats() {
    return this.#n.stats();
  }

  get closed() {
    return this.#closed;
  }

  /**
   * Releases this handle. A private cache is freed; a named one lives on
   * while another handle (in any worker) holds it. Idempotent; every other
   * method throws afterwards. Removals already handed to dispose's queue
   * are still delivered; those the engine had not reported yet when the
   * last handle closes are not (the engine does not report them at close).
   */
  close() {
    this.#closed = true;
    this.#l1 = null;
    this.#l1Order = null;
    this.#n.close();
    if (this.#pool !== null) {
      cachesInPools.unregister(this);
      poolDetach(this.#pool);
      this.#pool = null;
    }
  }

  /**
   * The cache's figures in its pool (capacity, target, marginal hits per
   * MiB, ...: larder_pool_cache_stats), or undefined for a cache not in a pool.
   */
  poolStats() {
    return this.#n.poolStats();
  }

  /* Checks sets roughly every 1/8 of max; see #enforceMax. */
  #checkInterval() {
    return Math.min(4096, Math.max(16, this.#max >> 3));
  }

  /*
   * The engine bounds bytes, not entries: max is kept by steering the byte
   * capacity (never above maxSize) from the engine's counters. Over max, it
   * shrinks to the smaller of capacity x max / entries and max x the bytes
   * per entry; full by bytes with fewer than 90% of max entries (values
   * grew), it grows by capacity x max / entries. Run every ~max/8 writes and
   * on reads of size, with counters that lag the maintainer by a batching
   * window, so the count settles near max, not exactly on it.
   */
  #enforceMax(s = this.#n.stats()) {
    this.#setsToCheck = this.#checkInterval();
    const entries = s.entries;
    const cap = s.capacity_bytes;
    const max = this.#max;
    let target;
    if (entries > max) {
      target = Math.min(cap * max / entries, s.used_bytes / entries * max);
    } else if (entries > 0 && entries < max * 0.9 && s.used_bytes >= cap * 0.9) {
      target = cap * max / entries;
    } else {
      return;
    }
    target = Math.max(65536, Math.min(this.#maxSize, Math.floor(target)));
    if (Math.abs(target - cap) > cap / 64) this.#n.setCapacity(target);
  }

  /*
   * The function the addon's thread-safe function calls with removal
   * records. That function is a GC root for the native handle's whole life,
   * so it reaches the cache only through a WeakRef: otherwise a cache with
   * dispose (and whatever its dispose closes over, often the cache) could
   * never be collected, and one dropped without close() would keep its
   * native cache, memory and maintainer thread until the thread exits.
   * Made in a static method so that the closure captures nothing else.
   */
  static #deliverer(ref) {
    return (buf, records) => ref.deref()?.#deliver(buf, records);
  }

  /* Called through #deliverer with a batch of removal records. */
  #deliver(buf, records) {
    let off = 0;
    let first = null;
    for (let i = 0; i < records; i++) {
      const kl = buf.readUInt32LE(off);
      const vl = buf.readUInt32LE(off + 4);
      const reason = REASONS[buf[off + 8]] || 'delete';
      const ks = off + 9;
      const vs = ks + kl;
      off = vs + vl;
      const keyBytes = buf.subarray(ks, vs);
      const key = isUtf8(keyBytes) ? keyBytes.toString('utf8') : Buffer.from(keyBytes);
      // An L1 copy of an entry the engine evicted or expired goes too.
      if (this.#l1 !== null && (reason === 'evict' || reason === 'expire')) this.#l1Drop(key);
      let value;
      try {
        value = vl === 0 ? undefined : this.#decode(buf, vs, off);
        this.#dispose(value, key, reason);
      } catch (err) {
        if (first === null) first = err;
      }
    }
    if (first !== null) throw first;
  }

  /**
   * For benchmarks: the cost of get()'s crossing without the engine. Makes
   * a string of length - 1 bytes from the scratch, as get() does for a
   * string value whose stored length (tag included) is length.
   */
  probe(key, length) {
    return this.#n.probe(key, length);
  }

  /**
   * For benchmarks: nanoseconds per key of larder_get() timed in a C loop
   * over keys[order[i]] (string keys), inside this process but with no V8
   * work between the gets; with batch > 0, of larder_get_batch() over
   * consecutive batches of that many keys (values packed as mget packs them).
   */
  engineLoop(keys, order, batch = 0) {
    return this.#n.engineLoop(keys, order, batch);
  }

  /** Native caches open in this process (all workers), for leak checks. */
  static openCaches() {
    return native.openCaches();
  }

  /**
   * Handle structures the addon holds in the process (all workers): a closed
   * handle's goes when its object is garbage collected. For leak checks.
   */
  static liveHandles() {
    return native.liveHandles();
  }

  /** Handles holding the named cache, across all workers; 0 when not open. */
  static refs(name) {
    // A name with a lone surrogate is refused (checkName): no cache has it.
    return typeof name === 'string' && !isWellFormed(name) ? 0 : native.refs(name);
  }
}

/*
 * lru-cache's boolean options read back (cache.allowStale, ...) as what
 * LarderCache does: their default, false; given as true they are refused.
 */
for (const name of DEFAULT_FALSE) {
  Object.defineProperty(LarderCache.prototype, name, { get() { return false; }, configurable: true });
}

const DEFAULT_POOL_INTERVAL_MS = 100;

/**
 * One byte budget shared by the caches opened in it (new LarderCache({ pool
 * })): the engine's pool moves capacity to the cache where it buys the most
 * hits, weighted by each cache's missCost, within each one's minShare and
 * maxShare (docs/pool.md). A pool opened by name is the same pool in every
 * worker, as a named cache is.
 */
class LarderPool {
  #p; // the addon's pool object (addon.c, ADDON-H6)
  #open = 0; // caches opened through this object and not closed
  #closed = false;
  #name;
  #maxSize;

  /**
   * @param {object} options { maxSize (bytes, >= 1 MiB; default 256 MiB),
   *   interval (the controller's period in ms, 0..60000, 0: a static split;
   *   default 100), name }
   */
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw typeError('options must be an object');
    const o = options;
    checkName(o.name);
    const maxSize = o.maxSize === undefined ? 256 * 1024 * 1024
      : checkInteger('maxSize', o.maxSize, 1024 * 1024, Number.MAX_SAFE_INTEGER);
    const interval = o.interval === undefined ? DEFAULT_POOL_INTERVAL_MS
      : checkInteger('interval', o.interval, 0, 60000);
    const given = (o.maxSize !== undefined ? 1 : 0) | (o.interval !== undefined ? 2 : 0);
    this.#p = native.poolOpen(o.name === undefined ? null : o.name, maxSize, interval, given);
    this.#name = o.name;
    this.#maxSize = maxSize;
  }

  /** Budget, overshoot bound, caches, assigned and used bytes, moves, passes (larder_pool_stats). */
  stats() {
    if (this.#closed) throw closedPoolError();
    return native.poolStats(this.#p);
  }

  get maxSize() {
    return this.#maxSize;
  }

  get name() {
    return this.#name;
  }

  get closed() {
    return this.#closed;
  }

  /**
   * Releases this object's hold on the pool. Refused (ERR_LARDER_STATE) while
   * a cache opened with it is open: close those first, as the engine's
   * larder_pool_close requires. A named pool lives on while other objects
   * (in any worker) or their caches hold it. Idempotent.
   */
  close() {
    if (this.#closed) return;
    if (this.#open > 0) {
      const err = new Error(`larder: the pool has ${this.#open} open cache(s) opened with it; close them first`);
      err.code = 'ERR_LARDER_STATE';
      throw err;
    }
    this.#closed = true;
    native.poolClose(this.#p);
  }

  /** Pools open in this process (all workers), for leak checks. */
  static openPools() {
    return native.openPools();
  }

  static {
    poolNative = (pool) => {
      if (pool.#closed) throw closedPoolError();
      return pool.#p;
    };
    poolAttach = (pool) => {
      pool.#open++;
    };
    poolDetach = (pool) => {
      pool.#open--;
    };
  }
}

function closedPoolError() {
  const err = new Error('larder: the pool is closed');
  err.code = 'ERR_LARDER_CLOSED';
  return err;
}

module.exports = { LarderCache, LarderPool, POLICIES: Object.keys(POLICIES) };
