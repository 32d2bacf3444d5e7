// peers.js -- the peers' side of tests/bench/bench_peers.sh: one case per
// run, one JSON object on stdout. Benchmark only: nothing here is part of
// baton.
//
//   node peers.js CASE --url redis://127.0.0.1:PORT/0 --seconds S
//
// Lock cases (50 concurrent loops, each on its own key, acquire + release,
// zero hold, all on one ioredis connection), each in ioredis's usual
// configurations: --autopipeline on (ioredis batches the commands of one
// tick into one write) or off (its default: each command written when
// made); for lock-raw, --release evalsha (ioredis's defineCommand: EVALSHA,
// EVAL once on NOSCRIPT) or eval (the script's text each time, r.eval):
//   lock-raw      SET key token NX PX + a scripted compare-and-delete
//   lock-mutex    redis-semaphore's Mutex (acquire, release)
//   lock-redlock  node-redlock (lock, unlock) on the one server
//   lock-redlock-quorum  node-redlock over several masters (--url given once
//                 per master, an ioredis connection each, auto-pipelined),
//                 lock + unlock, the grant latency of every lock after a
//                 300 ms warm-up (p50, p99, max): bench_quorum.sh
// Semaphore (one key, limit 5, 50 loops, zero hold; the wait of every
// acquire is recorded):
//   sem           redis-semaphore's Semaphore (default retryInterval 10 ms)
//   sem-raw       ZADD + ZREM pairs by 5 loops: the raw pairs at the
//                 semaphore's concurrency, unfair and without waiting
// Hot key (20 contenders on one key, a connection each, zero hold, waits
// measured after a 300 ms warm-up; a wait still open at the end counts
// up to the end):
//   hot-redlock   node-redlock, retryCount -1 (until granted), its default
//                 retryDelay 200 ms and jitter 100 ms
//   hot-mutex     redis-semaphore's Mutex, its default retryInterval 10 ms
// Cron (no Redis): next-fire computations over the expressions, zones and
// start times of baton's bench_cron (--list gives them, as JSON on stdin):
//   cron-croner   croner: one Cron per (expression, zone), nextRun(start)
//   cron-parser   cron-parser: one expression per (expression, zone),
//                 reset(start) then next()
// An expression a library refuses is left out of its run and named.
'use strict';

const crypto = require('crypto');
const fs = require('fs');

const args = process.argv.slice(2);
const kase = args[0];
let url = process.env.BATON_TEST_URL || '';
const urls = [];
let seconds = 5;
let autopipeline = true, release = 'evalsha';
for (let i = 1; i < args.length; i++) {
    if (args[i] === '--autopipeline' && ['on', 'off'].includes(args[i + 1]))
        autopipeline = args[++i] === 'on';
    else if (args[i] === '--release' && ['eval', 'evalsha'].includes(args[i + 1]))
        release = args[++i];
    else if (args[i] === '--url') {
        url = args[++i];
        urls.push(url);
    } else if (args[i] === '--seconds')
        seconds = Number(args[++i]);
    else
        die(`unknown argument ${args[i]}`);
}
if (!(seconds > 0 && seconds <= 600)) die('--seconds: expected 0 < S <= 600');

function die(msg) {
  process.stderr.write(`peers.js: ${msg}\n`);
  process.exit(2);
}

const nowNs = () => process.hrtime.bigint();
const ms = (ns) => Number(ns) / 1e6;

function pct(sorted, p) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.round(p * (sorted.length - 1)))];
}

function waitsJson(w) {
  const s = Float64Array.from(w).sort();
  return {
    p50: +pct(s, 0.5).toFixed(3),
    p99: +pct(s, 0.99).toFixed(3),
    longest: +(s.length ? s[s.length - 1] : 0).toFixed(3),
    samples: s.length,
  };
}

function redis(opts = {}) {
  const Redis = require('ioredis');
  return new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 1, ...opts });
}

function pkgVersion(name) {
  return require(`${name}/package.json`).version;
}

// Every case's object, with the process's context switches so far.
function out(obj) {
    const ru = process.resourceUsage();
    obj.ctx_switches = ru.voluntaryContextSwitches + ru.involuntaryContextSwitches;
    process.stdout.write(JSON.stringify(obj) + '\n');
}

// Runs `loops` concurrent copies of body(i) until the time is up; returns
// {cycles, secs}. body resolves once per cycle.
async function runLoops(loops, body) {
  let stop = false, cycles = 0;
  const t0 = nowNs();
  const timer = setTimeout(() => { stop = true; }, seconds * 1000);
  await Promise.all(Array.from({ length: loops }, async (_, i) => {
    while (!stop) {
      await body(i);
      cycles++;
    }
  }));
  clearTimeout(timer);
  return { cycles, secs: Number(nowNs() - t0) / 1e9 };
}

const RELEASE_LUA = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

async function lockCase(name) {
  const r = redis({ enableAutoPipelining: autopipeline });
  await r.ping();
  const how = `autopipe ${autopipeline ? 'on' : 'off'}`;
  let body, peer;
  if (name === 'lock-raw') {
    r.defineCommand('batonBenchRelease', { numberOfKeys: 1, lua: RELEASE_LUA });
    peer = `ioredis@${pkgVersion('ioredis')} SET NX PX + ${release.toUpperCase()}, ${how}`;
    const rel = release === 'eval' ? (k, tok) => r.eval(RELEASE_LUA, 1, k, tok)
                                   : (k, tok) => r.batonBenchRelease(k, tok);
    body = async (i) => {
      const tok = crypto.randomUUID();
      if ((await r.set(`bench:peer:raw:${i}`, tok, 'PX', 30000, 'NX')) !== 'OK') throw new Error('not granted');
      await rel(`bench:peer:raw:${i}`, tok);
    };
  } else if (name === 'lock-mutex') {
    const { Mutex } = require('redis-semaphore');
    peer = `redis-semaphore@${pkgVersion('redis-semaphore')} Mutex, ${how}`;
    body = async (i) => {
      const m = new Mutex(r, `bench:peer:mutex:${i}`, { lockTimeout: 30000 });
      await m.acquire();
      await m.release();
    };
  } else {
    const Redlock = require('redlock');
    const rl = new Redlock([r], { retryCount: 0 });
    peer = `redlock@${pkgVersion('redlock')}, ${how}`;
    body = async (i) => {
      const lock = await rl.lock(`bench:peer:redlock:${i}`, 30000);
      await lock.unlock();
    };
  }
  const { cycles, secs } = await runLoops(50, body);
  r.disconnect();
  out({ case: name, peer, autopipeline, release: name === 'lock-raw' ? release : null, clients: 50, connections: 1, cycles, seconds: +secs.toFixed(3), cycles_per_sec: Math.round(cycles / secs) });
}

async function quorumCase(name)
{
    if (urls.length < 3)
        die(`${name}: give --url once per master (3 or more)`);
    const Redis = require('ioredis');
    const Redlock = require('redlock');
    const conns =
        urls.map((u) => new Redis(u, {enableAutoPipelining : true, maxRetriesPerRequest : 1}));
    await Promise.all(conns.map((r) => r.ping()));
    const rl = new Redlock(conns, {retryCount : 0});
    const waits = [];
    const warm = nowNs() + 300000000n;
    const {cycles, secs} = await runLoops(50, async (i) => {
        const t0 = nowNs();
        const lock = await rl.lock(`bench:peer:quorum:${i}`, 2000);
        if (t0 >= warm)
            waits.push(ms(nowNs() - t0));
        await lock.unlock();
    });
    conns.forEach((r) => r.disconnect());
    out({
        who : `redlock@${pkgVersion('redlock')}`,
        case : name,
        masters : urls.length,
        clients : 50,
        connections : urls.length,
        cycles,
        seconds : +secs.toFixed(3),
        cycles_per_sec : Math.round(cycles / secs),
        grant_ms : waitsJson(waits)
    });
}

async function semCase(name) {
  const r = redis();
  await r.ping();
  if (name === 'sem-raw') {
    const { cycles, secs } = await runLoops(5, async (i) => {
      const m = `0123456789abcdef0123456789abcdef01234567${String(i).padStart(8, '0')}`;
      await r.zadd('bench:peer:semraw', 1700000000000, m);
      await r.zrem('bench:peer:semraw', m);
    });
    r.disconnect();
    out({ case: name, peer: `ioredis@${pkgVersion('ioredis')} ZADD + ZREM, 5 loops`, loops: 5, cycles, seconds: +secs.toFixed(3), cycles_per_sec: Math.round(cycles / secs) });
    return;
  }
  const { Semaphore } = require('redis-semaphore');
  const waits = [];
  let inside = 0, maxInside = 0;
  const { cycles, secs } = await runLoops(50, async () => {
    const s = new Semaphore(r, 'bench:peer:sem', 5, { lockTimeout: 30000, acquireTimeout: 30000 });
    const t0 = nowNs();
    await s.acquire();
    waits.push(ms(nowNs() - t0));
    maxInside = Math.max(maxInside, ++inside);
    inside--;
    await s.release();
  });
  r.disconnect();
  out({ case: name, peer: `redis-semaphore@${pkgVersion('redis-semaphore')} Semaphore`, limit: 5, clients: 50, cycles, seconds: +secs.toFixed(3), cycles_per_sec: Math.round(cycles / secs), wait_ms: waitsJson(waits), max_holders_seen: maxInside });
}

async function hotCase(name) {
  const N = 20;
  const conns = Array.from({ length: N }, () => redis({ enableAutoPipelining: false }));
  await Promise.all(conns.map((c) => c.ping()));
  let acquire, peer;
  if (name === 'hot-redlock') {
    const Redlock = require('redlock');
    const rls = conns.map((c) => new Redlock([c], { retryCount: -1 }));
    peer = `redlock@${pkgVersion("redlock")}, retry 200±100 ms`;
    acquire = async (i) => { const l = await rls[i].lock('bench:peer:hot:redlock', 10000); return () => l.unlock(); };
  } else {
    const { Mutex } = require('redis-semaphore');
    peer = `redis-semaphore@${pkgVersion("redis-semaphore")} Mutex, retry 10 ms`;
    acquire = async (i) => {
      const m = new Mutex(conns[i], 'bench:peer:hot:mutex', { lockTimeout: 10000, acquireTimeout: 600000 });
      await m.acquire();
      return () => m.release();
    };
  }
  let stop = false, measuring = false, t0 = 0n, grants = 0;
  const waits = [], open = new Array(N).fill(null);
  const loops = conns.map(async (_, i) => {
    while (!stop) {
      const asked = nowNs();
      open[i] = asked;
      const release = await acquire(i);
      open[i] = null;
      if (measuring && asked >= t0) {
        waits.push(ms(nowNs() - asked));
        grants++;
      }
      await release();
    }
  });
  await new Promise((res) => setTimeout(res, 300));
  measuring = true;
  t0 = nowNs();
  await new Promise((res) => setTimeout(res, seconds * 1000));
  const t1 = nowNs();
  measuring = false;
  // Waits still open count up to now: a waiter starved past the end is
  // the longest wait, not a missing sample.
  let longestOpen = 0;
  for (const a of open) if (a !== null && a >= t0) longestOpen = Math.max(longestOpen, ms(t1 - a));
  stop = true;
  // The starved ones may wait long: drop the connections instead of
  // waiting for them.
  setTimeout(() => { conns.forEach((c) => c.disconnect()); process.exit(0); }, 200).unref();
  const w = waitsJson(waits);
  w.longest = +Math.max(w.longest, longestOpen).toFixed(3);
  out({ case: name, peer, contenders: N, hold_ms: 0, handoffs_per_sec: Math.round(grants / (Number(t1 - t0) / 1e9)), wait_ms: w, open_at_end_ms: +longestOpen.toFixed(3) });
  await Promise.race([Promise.all(loops).catch(() => {}), new Promise((res) => setTimeout(res, 150))]);
  conns.forEach((c) => c.disconnect());
  process.exit(0);
}

function cronCase(name) {
  const list = JSON.parse(fs.readFileSync(0, 'utf8')); // {expressions, zones, starts}
  const used = [], refused = [];
  const makers = [];
  for (const e of list.expressions) {
    try {
      const perZone = list.zones.map((z) => makeCron(name, e, z));
      perZone.forEach((f) => f(list.starts[0]));
      makers.push(perZone);
      used.push(e);
    } catch (err) {
      makers.push(null);
      refused.push(e);
    }
  }
  const NE = list.expressions.length, NZ = list.zones.length, NS = list.starts.length;
  let ops = 0, checksum = 0, failures = 0;
  const t0 = nowNs(), limit = BigInt(Math.round(seconds * 1e9));
  let k = 0;
  for (;;) {
    for (let b = 0; b < 4096; b++, k++) {
      const fns = makers[k % NE];
      if (fns === null) continue;
      const t = fns[Math.floor(k / NE) % NZ](list.starts[k % NS]);
      if (t === null) failures++;
      else checksum += t & 0xff;
      ops++;
    }
    if (nowNs() - t0 >= limit) break;
  }
  const secs = Number(nowNs() - t0) / 1e9;
  const lib = name === 'cron-croner' ? 'croner' : 'cron-parser';
  out({ case: name, peer: `${lib}@${pkgVersion(lib)}`, ops, seconds: +secs.toFixed(3), ops_per_sec: Math.round(ops / secs), expressions_used: used, expressions_refused: refused, zones: list.zones, failures, checksum });
}

// Returns start (unix seconds) -> next fire (unix seconds) or null.
function makeCron(name, expr, zone) {
  if (name === 'cron-croner') {
    const { Cron } = require('croner');
    const c = new Cron(expr, { timezone: zone, paused: true });
    return (s) => {
      const d = c.nextRun(new Date(s * 1000));
      return d ? Math.floor(d.getTime() / 1000) : null;
    };
  }
  const { CronExpressionParser } = require('cron-parser');
  const it = CronExpressionParser.parse(expr, { tz: zone, currentDate: new Date(0) });
  return (s) => {
    it.reset(new Date(s * 1000));
    try {
      return Math.floor(it.next().getTime() / 1000);
    } catch (err) {
      return null;
    }
  };
}

const cases = {
    'lock-raw' : lockCase,
    'lock-mutex' : lockCase,
    'lock-redlock' : lockCase,
    'lock-redlock-quorum' : quorumCase,
    sem : semCase,
    'sem-raw' : semCase,
    'hot-redlock' : hotCase,
    'hot-mutex' : hotCase,
    'cron-croner' : cronCase,
    'cron-parser' : cronCase,
};
if (!cases[kase]) die(`usage: node peers.js ${Object.keys(cases).join('|')} [--url URL] [--seconds S]`);
if (!kase.startsWith('cron') && !url) die('need --url or BATON_TEST_URL');
Promise.resolve(cases[kase](kase)).catch((err) => {
  process.stderr.write(`peers.js ${kase}: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
