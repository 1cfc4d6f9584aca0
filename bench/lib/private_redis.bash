# Sourced by the bench scripts that compare leasehold-bench runs against one private
# redis-server (bench/run-names, bench/run-fencing). Needs scripts/lib/ports.bash and a die().

# Starts redis-server on a free loopback port (never 6379), without persistence, its files in
# directory $1; sets `url` and `server_pid`. stop_private_redis stops it.
start_private_redis() {
  local dir=$1 port
  for _ in $(seq 1 20); do
    port=$((20000 + RANDOM % 40000))
    ((port == 6379)) || port_listening "$port" || break
  done
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --logfile "$dir/redis.log" </dev/null >/dev/null 2>&1 &
  server_pid=$!
  for _ in $(seq 1 50); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    sleep 0.1
  done
  redis-cli -p "$port" ping 2>/dev/null | grep -q PONG || die "redis-server did not start"
  url=redis://127.0.0.1:$port
}

stop_private_redis() {
  if [[ -n ${server_pid:-} ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}

# The median of the numbers on stdin (blank-separated or one a line).
median() {
  tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END {
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The median over the rounds of the per-round ratio, in percent, of two blank-separated lists of
# figures (round i of $1 over round i of $2).
median_ratio() {
  paste -d' ' <(tr ' ' '\n' <<<"$1" | grep .) <(tr ' ' '\n' <<<"$2" | grep .) |
    awk '{ print 100 * $1 / $2 }' | median
}
