#!/usr/bin/env bash
# Checks the bash completion of an installed leasehold, with that leasehold first on PATH:
#
#   completion.bash COMPLETION_FILE
#
# Subcommands and options always; lease names too when LEASEHOLD_REDIS_URL and
# LEASEHOLD_REDIS_UNIX_URL name a private redis-server (as leasehold-with-redis sets them).
set -euo pipefail

# shellcheck source=/dev/null
source "$1"
spec=$(complete -p leasehold)
function=${spec#*-F }
function=${function%% *}
echo "completion: $spec"

# Completes LINE as bash does with the cursor at its end: COMP_WORDS split at blanks and at the
# COMP_WORDBREAKS characters ':' and '=', which stand as words of their own.
complete_line() {
  local line=$1 word="" char i char_breaks word_breaks
  COMP_LINE=$line
  COMP_POINT=${#line}
  COMP_WORDS=()
  for ((i = 0; i < ${#line}; i++)); do
    char=${line:i:1}
    char_breaks=0 word_breaks=0
    [[ $char == [:=] ]] && char_breaks=1
    [[ $word == [:=]* ]] && word_breaks=1
    if [[ $char == " " ]]; then
      [[ -n $word ]] && COMP_WORDS+=("$word")
      word=""
    elif [[ -n $word ]] && ((char_breaks != word_breaks)); then
      COMP_WORDS+=("$word")
      word=$char
    else
      word+=$char
    fi
  done
  COMP_WORDS+=("$word")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  "$function" leasehold "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
}

failures=0
# expect LINE [WORD...]: completing LINE offers each WORD; expect_not LINE WORD: it does not.
expect() {
  local line=$1 want got
  shift
  complete_line "$line"
  got=" ${COMPREPLY[*]} "
  for want in "$@"; do
    if [[ $got != *" $want "* ]]; then
      echo "FAIL: completing '$line' offers [${COMPREPLY[*]}], not '$want'" >&2
      failures=$((failures + 1))
    fi
  done
  echo "ok: '$line' -> ${COMPREPLY[*]}"
}
expect_not() {
  complete_line "$1"
  if [[ " ${COMPREPLY[*]} " == *" $2 "* ]]; then
    echo "FAIL: completing '$1' offers '$2': [${COMPREPLY[*]}]" >&2
    failures=$((failures + 1))
  fi
}

expect "leasehold " run cron status list release
expect "leasehold st" status
expect_not "leasehold st" run
expect "leasehold run --" --exclusive --shared --wait --ttl --nonblock
expect "leasehold run -" -x -n --limit
expect_not "leasehold run --" --redis
expect "leasehold --" --redis --prefix --version --help
expect "leasehold --prefix jobs r" run release
expect "leasehold cron --mode " at-least after-finish after-start
expect "leasehold cron --mode=after-f" after-finish
expect "leasehold release --" --force
expect "leasehold run -n deploy -- ech" echo
expect "leasehold fence " check
expect "leasehold fence check --" --json
expect_not "leasehold fence check deploy " check

if [[ -n ${LEASEHOLD_REDIS_URL-} && -n ${LEASEHOLD_REDIS_UNIX_URL-} ]]; then
  # Leases under a prefix of their own: cron leases stay held for most of the interval.
  tcp=$LEASEHOLD_REDIS_URL
  unix=$LEASEHOLD_REDIS_UNIX_URL
  unset LEASEHOLD_REDIS_URL LEASEHOLD_REDIS_UNIX_URL
  for name in nightly-report db:backup; do
    leasehold --redis "$tcp" --prefix completion -q cron --every 1h --ticks 1 "$name" -- true
  done
  leasehold --redis "$tcp" --prefix completion list
  expect "leasehold --redis $tcp --prefix completion status " nightly-report db:backup
  expect "leasehold --redis $tcp --prefix completion run -n nig" nightly-report
  expect "leasehold --redis=$unix --prefix=completion release --force db:b" backup
  expect "leasehold --redis $tcp --prefix completion list " nightly-report
  expect_not "leasehold --redis $tcp --prefix other status " nightly-report
  expect_not "leasehold --redis $tcp --prefix completion run deploy -- " nightly-report
else
  echo "completion: no redis-server given, lease names not checked"
fi

if ((failures > 0)); then
  echo "completion: $failures check(s) failed" >&2
  exit 1
fi
echo "completion: all checks passed"
