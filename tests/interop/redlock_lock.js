#!/usr/bin/env node
// One step of node-redlock (on one Redis instance, over ioredis) against a Redis server, for
// leasehold's interop tests. Plain CommonJS; node and its packages come from scripts/setup and
// `npm ci` in tests/interop (NODE_PATH names the node_modules folder when it lies elsewhere).
//
//   redlock_lock.js URL check                  prints "ok <redlock version>"
//   redlock_lock.js URL acquire KEY TTL_MS     prints the value it stored, or "busy"
//   redlock_lock.js URL release KEY VALUE      prints "true" or "false"
//   redlock_lock.js URL extend KEY VALUE TTL_MS
//                                              prints "true" or "false"
//   redlock_lock.js URL worker KEY TTL_MS CYCLES HOLD_MS EVENTS_FILE
//       prints "ready" once connected and waits for a line on stdin; then CYCLES times: takes the
//       lock (a try, then again after a short random pause while it is busy), records its critical
//       section in EVENTS_FILE (leasehold's history format, CLOCK_MONOTONIC times), holds it
//       HOLD_MS, releases it; prints "done CYCLES" (exit 0) or what went wrong (exit 1).
//
// URL is redis://127.0.0.1:PORT. Every lock call makes one attempt (retryCount 0). A release or
// extension of VALUE adopts it as a redlock Lock, as the process that took it would hold it; its
// expiration is left open, so that Redis, not the adopting process, decides (redlock refuses to
// extend a lock whose own expiration has passed without asking Redis). Exit status 3: a package
// is missing.
'use strict';

const fs = require('fs');
const readline = require('readline');

let Redis;
let Redlock;
try {
  Redis = require('ioredis');
  Redlock = require('redlock');
} catch (error) {
  process.stderr.write(`node packages missing (${error.message}): the interop_npm_ci test ` +
                       'installs them (npm ci, from tests/interop/package-lock.json) into the ' +
                       'build folder, which NODE_PATH names\n');
  process.exit(3);
}

function usage() {
  process.stderr.write('usage: redlock_lock.js URL check|acquire|release|extend|worker ...\n');
  return 2;
}

function delay(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function adopt(redlock, key, value) {
  return new Redlock.Lock(redlock, key, value, Number.MAX_SAFE_INTEGER, 0, 0);
}

async function acquire(redlock, key, ttlMs) {
  try {
    const lock = await redlock.lock(key, Number(ttlMs));
    return lock.value;
  } catch (error) {
    if (error instanceof Redlock.LockError) return 'busy';
    throw error;
  }
}

// redlock answers a release or an extension that Redis refused with a LockError.
async function outcome(promise) {
  try {
    await promise;
    return 'true';
  } catch (error) {
    if (error instanceof Redlock.LockError) return 'false';
    throw error;
  }
}

function firstLine() {
  return new Promise((resolve) => {
    const lines = readline.createInterface({input: process.stdin});
    let answered = false;
    lines.once('line', () => {
      answered = true;
      lines.close();
      process.stdin.destroy();  // read no more: an open stdin would keep node running
      resolve(true);
    });
    lines.once('close', () => {
      if (!answered) resolve(false);
    });
  });
}

// Events in leasehold's history format, one write per line on an append-only file.
function history(path, key) {
  const fd = fs.openSync(path, 'a');
  return function record(kind, lease, fields, t) {
    let line = `t=${t === undefined ? process.hrtime.bigint() : t} pid=${process.pid} ` +
               `tid=${process.pid} kind=${kind} name=${key} lease=${lease}`;
    for (const [name, value] of Object.entries(fields || {})) line += ` ${name}=${value}`;
    fs.writeSync(fd, line + '\n');
  };
}

async function worker(client, redlock, key, ttlMs, cycles, holdMs, eventsFile) {
  const ttl = Number(ttlMs);
  // redlock's own margin: a lock is valid until its start + ttl - drift.
  const drift = BigInt(Math.round(redlock.driftFactor * ttl) + 2);
  const record = history(eventsFile, key);
  await client.ping();
  process.stdout.write('ready\n');
  if (!(await firstLine())) {
    process.stdout.write('no go: stdin closed\n');
    return 1;
  }
  for (let lease = 1; lease <= Number(cycles); ++lease) {
    let lock = null;
    let sent;
    while (lock === null) {
      sent = process.hrtime.bigint();
      record('acquire_call', lease, {}, sent);
      try {
        lock = await redlock.lock(key, ttl);
      } catch (error) {
        if (!(error instanceof Redlock.LockError)) throw error;
        record('acquire_fail', lease);
        await delay(1 + Math.floor(Math.random() * 8));  // a busy lock: try again shortly
      }
    }
    const deadline = sent + BigInt(ttl) * 1000000n - drift * 1000000n;
    record('acquire_ok', lease, {deadline});
    record('cs_begin', lease);
    await delay(Number(holdMs));
    const end = process.hrtime.bigint();
    record('cs_end', lease, {valid: end < deadline ? 1 : 0}, end);
    record('release_call', lease);
    if ((await outcome(lock.unlock())) !== 'true') {
      record('release_fail', lease);
      process.stdout.write(`release ${lease} found the lock no longer held\n`);
      return 1;
    }
    record('release_ok', lease);
  }
  process.stdout.write(`done ${cycles}\n`);
  return 0;
}

async function main(argv) {
  if (argv.length < 2) return usage();
  const [url, command, ...args] = argv;
  const client = new Redis(url, {maxRetriesPerRequest: 1, connectTimeout: 10000,
                                 retryStrategy: () => null});
  const redlock = new Redlock([client], {retryCount: 0, retryDelay: 10, retryJitter: 0,
                                         driftFactor: 0.01});
  redlock.on('clientError', (error) => process.stderr.write(`redis: ${error.message}\n`));
  try {
    let result;
    if (command === 'check' && args.length === 0) {
      await client.ping();
      result = 'ok ' + require('redlock/package.json').version;
    } else if (command === 'acquire' && args.length === 2) {
      result = await acquire(redlock, args[0], args[1]);
    } else if (command === 'release' && args.length === 2) {
      result = await outcome(adopt(redlock, args[0], args[1]).unlock());
    } else if (command === 'extend' && args.length === 3) {
      result = await outcome(adopt(redlock, args[0], args[1]).extend(Number(args[2])));
    } else if (command === 'worker' && args.length === 5) {
      return await worker(client, redlock, ...args);
    } else {
      return usage();
    }
    process.stdout.write(result + '\n');
    return 0;
  } finally {
    client.disconnect();
  }
}

main(process.argv.slice(2)).then(
    (status) => {
      process.exitCode = status;
    },
    (error) => {
      process.stderr.write(`redlock_lock.js: ${error.stack || error}\n`);
      process.exitCode = 1;
    });
