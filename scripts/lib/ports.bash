# Sourced by scripts that start redis-servers on free loopback ports (scripts/cluster,
# bench/run-locks, bench/run-throughput).

# True if something listens on loopback port $1: ss(8) tells, where it is installed; else a
# connection that is not refused does (bash's /dev/tcp).
port_listening() {
  if command -v ss >/dev/null; then
    ss -Htln "sport = :$1" 2>/dev/null | grep -q .
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}
