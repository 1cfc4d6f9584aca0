#!/usr/bin/python3
"""One step of redis-py's Lock against a Redis server, for leasehold's interop tests.

  redis_py_lock.py URL check                  prints "ok <redis-py version>"
  redis_py_lock.py URL acquire KEY TTL_MS     prints the value it stored, or "busy"
  redis_py_lock.py URL release KEY VALUE      prints "true" or "false"
  redis_py_lock.py URL extend KEY VALUE TTL_MS
                                              prints "true" or "false" (the TTL replaced)
  redis_py_lock.py URL worker KEY TTL_MS CYCLES HOLD_MS EVENTS_FILE
      prints "ready" once connected and waits for a line on stdin; then CYCLES times: takes the
      lock (a try, then again after a short random pause while it is busy), records its critical
      section in EVENTS_FILE (leasehold's history format, CLOCK_MONOTONIC times), holds it HOLD_MS,
      releases it; prints "done CYCLES" (exit 0) or what went wrong (exit 1).

URL is redis://127.0.0.1:PORT. A release or extension of VALUE adopts it as the lock's token, as
the process that took it would hold it. Exit status 3: redis-py is missing (scripts/setup installs
Debian's python3-redis).
"""

import os
import random
import sys
import time

try:
    import redis
    from redis.exceptions import LockError, LockNotOwnedError
    from redis.lock import Lock
except ImportError as error:
    print("redis-py is missing (%s): scripts/setup installs Debian's python3-redis" % error,
          file=sys.stderr)
    sys.exit(3)


def lock_of(client, key, ttl_ms):
    return Lock(client, key, timeout=int(ttl_ms) / 1000.0, blocking=False)


def adopted(client, key, value, ttl_ms):
    lock = lock_of(client, key, ttl_ms)
    lock.local.token = value.encode()
    return lock


def acquire(client, key, ttl_ms):
    lock = lock_of(client, key, ttl_ms)
    if lock.acquire():
        return lock.local.token.decode()
    return "busy"


def release(client, key, value):
    try:
        adopted(client, key, value, 1000).release()
        return "true"
    except LockNotOwnedError:
        return "false"


def extend(client, key, value, ttl_ms):
    lock = adopted(client, key, value, ttl_ms)
    try:
        lock.extend(int(ttl_ms) / 1000.0, replace_ttl=True)
        return "true"
    except LockNotOwnedError:
        return "false"


class History:
    """Events in leasehold's history format, one os.write() per line on an O_APPEND file."""

    def __init__(self, path, key):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.key = key
        self.pid = os.getpid()

    def record(self, kind, lease, t=None, **fields):
        line = "t=%d pid=%d tid=%d kind=%s name=%s lease=%d" % (
            time.monotonic_ns() if t is None else t, self.pid, self.pid, kind, self.key, lease)
        for name, value in fields.items():
            line += " %s=%s" % (name, value)
        os.write(self.fd, (line + "\n").encode())


def worker(client, key, ttl_ms, cycles, hold_ms, events_file):
    ttl_ns = int(ttl_ms) * 1000000
    history = History(events_file, key)
    client.ping()
    print("ready", flush=True)
    if not sys.stdin.readline():
        print("no go: stdin closed", flush=True)
        return 1
    for lease in range(1, int(cycles) + 1):
        lock = lock_of(client, key, ttl_ms)
        while True:
            sent = time.monotonic_ns()
            history.record("acquire_call", lease, t=sent)
            if lock.acquire():
                break
            history.record("acquire_fail", lease)
            time.sleep(random.uniform(0.001, 0.008))  # a busy lock: try again shortly
        # The key expires ttl after the SET ran, which was after `sent`.
        deadline = sent + ttl_ns
        history.record("acquire_ok", lease, deadline=deadline)
        history.record("cs_begin", lease)
        time.sleep(int(hold_ms) / 1000.0)
        end = time.monotonic_ns()
        history.record("cs_end", lease, t=end, valid=1 if end < deadline else 0)
        history.record("release_call", lease)
        try:
            lock.release()
            history.record("release_ok", lease)
        except LockNotOwnedError:
            history.record("release_fail", lease)
            print("release %d found the lock no longer held" % lease, flush=True)
            return 1
    print("done %d" % int(cycles), flush=True)
    return 0


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    client = redis.Redis.from_url(argv[1], socket_timeout=10, socket_connect_timeout=10)
    command, args = argv[2], argv[3:]
    steps = {
        ("check", 0): lambda: "ok " + redis.__version__ if client.ping() else "no answer",
        ("acquire", 2): lambda: acquire(client, *args),
        ("release", 2): lambda: release(client, *args),
        ("extend", 3): lambda: extend(client, *args),
    }
    if command == "worker" and len(args) == 5:
        return worker(client, *args)
    step = steps.get((command, len(args)))
    if step is None:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        print(step(), flush=True)
    except LockError as error:
        print("redis-py: %s" % error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
