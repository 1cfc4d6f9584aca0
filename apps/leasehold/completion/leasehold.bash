# bash completion for leasehold(1): its subcommands, their options and the names of the leases.
#
# The subcommands and options are read from the command's own --help (once per shell), so they are
# those of the leasehold being completed, however new; the lease names come from `leasehold list`,
# run with the options given before the subcommand (--redis, --prefix, --tls-...).

declare -gA _leasehold_help_cache=()

# Sets help to what `PROGRAM [SUBCOMMAND] --help` says (SUBCOMMAND may be two words, as in
# "fence check"), one line per item:
#   subcommand NAME | positional NAME [...] | option -x,--exclusive | option -w,--wait value
#   | option --mode value at-least after-finish after-start
_leasehold_help() {
  local key="$1 ${2-}"
  if [[ -z ${_leasehold_help_cache[$key]+set} ]]; then
    _leasehold_help_cache[$key]=$(
      # shellcheck disable=SC2086  # a nested subcommand's words are separate arguments
      "$1" ${2:+$2} --help 2>/dev/null | awk '
        tolower($0) ~ /^subcommands:/ { section = "subcommand"; next }
        tolower($0) ~ /^options:/ { section = "option"; next }
        tolower($0) ~ /^positionals:/ { section = "positional"; next }
        /^[^ ]/ || /^$/ { section = ""; next }
        section == "subcommand" && /^  [^ ]/ { print "subcommand", $1 }
        section == "positional" && /^  [^ ]/ { print "positional", $1, ($3 == "..." ? "..." : "") }
        section == "option" && /^  -/ {
          line = "option " $1
          # "--wait TEXT", "--limit UINT:INT in [1 - 1000000]": a type right after the names takes
          # a value; "--force REQUIRED" or "-x,--exclusive Excludes: ..." do not.
          rest = substr($0, 3 + length($1))
          if (rest ~ /^ [A-Z]+(:|$| )/ && $2 != "REQUIRED") {
            line = line " value"
            if (match($2, /\{[^}]*\}/)) {
              choices = substr($2, RSTART + 1, RLENGTH - 2)
              gsub(/,/, " ", choices)
              line = line " " choices
            }
          }
          print line
        }')
  fi
  help=${_leasehold_help_cache[$key]}
}

# Sets valued: the options of `PROGRAM [SUBCOMMAND]` that take a value.
_leasehold_valued() {
  valued=()
  local help kind names rest name
  _leasehold_help "$@"
  while read -r kind names rest; do
    if [[ $kind == option && $rest == value* ]]; then
      for name in ${names//,/ }; do
        valued[$name]=1
      done
    fi
  done <<<"$help"
}

# Whether `PROGRAM SUBCOMMAND --help` lists WORD as a subcommand of its own.
_leasehold_has_subcommand() {
  local help
  _leasehold_help "$1" "$2"
  [[ $'\n'$help$'\n' == *$'\n'"subcommand $3"$'\n'* ]]
}

# Sets words and cword from COMP_WORDS, with the pieces that bash split at COMP_WORDBREAKS (the
# colons of a URL, the '=' of --option=value) joined again as they stand on the line.
_leasehold_words() {
  words=()
  cword=0
  if [[ -z ${COMP_LINE-} ]]; then
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    return
  fi
  local line=${COMP_LINE:0:COMP_POINT} trimmed i
  for ((i = 0; i <= COMP_CWORD; i++)); do
    trimmed=${line#"${line%%[![:space:]]*}"}
    if ((i > 0)) && [[ ${#trimmed} -eq ${#line} ]]; then
      words[-1]+=${COMP_WORDS[i]}
    else
      words+=("${COMP_WORDS[i]}")
    fi
    line=${trimmed#"${COMP_WORDS[i]}"}
  done
  cword=$((${#words[@]} - 1))
}

# A word as the shell would pass it, for the simple cases: quotes around it, a leading ~/.
_leasehold_dequote() {
  local word=$1
  if [[ $word == \'*\' || $word == \"*\" ]]; then
    word=${word:1:${#word}-2}
  fi
  [[ $word == \~/* ]] && word=$HOME/${word:2}
  printf '%s' "$word"
}

# Adds the words of the list that start with cur to COMPREPLY.
_leasehold_add() {
  local item
  for item in "$@"; do
    if [[ $item == "$cur"* ]]; then
      COMPREPLY+=("$item")
    fi
  done
}

# Adds the commands that start with cur to COMPREPLY.
_leasehold_add_commands() {
  local -a commands
  mapfile -t commands < <(compgen -c -- "$cur" | sort -u)
  _leasehold_add "${commands[@]}"
}

_leasehold() {
  local words cword
  _leasehold_words
  local cur=${words[cword]}
  local program
  program=$(_leasehold_dequote "${words[0]}")

  # Walk the words before the cursor: the subcommand, the options given before it (for
  # `leasehold list`), the positionals after it, and what comes after "--".
  local subcommand="" pending="" dashdash=-1 positionals=0 i word kind names rest
  local -a global_args=()
  local -A valued=()
  _leasehold_valued "$program"
  for ((i = 1; i < cword; i++)); do
    word=${words[i]}
    if ((dashdash >= 0)); then
      continue
    elif [[ -n $pending ]]; then
      [[ -z $subcommand ]] && global_args+=("$pending" "$(_leasehold_dequote "$word")")
      pending=""
    elif [[ $word == -- && -n $subcommand ]]; then
      dashdash=$i
    elif [[ $word == -* ]]; then
      if [[ $word == *=* ]]; then
        [[ -z $subcommand && -n ${valued[${word%%=*}]-} ]] &&
          global_args+=("${word%%=*}" "$(_leasehold_dequote "${word#*=}")")
      elif [[ -n ${valued[$word]-} ]]; then
        pending=$word
      fi
    elif [[ -z $subcommand ]]; then
      subcommand=$word
      _leasehold_valued "$program" "$subcommand"
    elif ((positionals == 0)) && _leasehold_has_subcommand "$program" "$subcommand" "$word"; then
      subcommand="$subcommand $word"  # a subcommand of its own: `fence check`
      _leasehold_valued "$program" "$subcommand"
    else
      positionals=$((positionals + 1))
    fi
  done

  local help
  _leasehold_help "$program" ${subcommand:+"$subcommand"}
  local option=$pending value_prefix=""
  if [[ -z $option && $cur == -*=* && $dashdash -lt 0 ]]; then
    option=${cur%%=*}
    value_prefix=$option=
    cur=${cur#*=}
  fi

  COMPREPLY=()
  if [[ -n $option ]]; then
    # The value of an option: its choices, a file for --...-file, else nothing to offer.
    local choices=""
    while read -r kind names rest; do
      [[ $kind == option && ,$names, == *,$option,* ]] && choices=${rest#value}
    done <<<"$help"
    if [[ -n $choices ]]; then
      local -a list
      read -ra list <<<"$choices"
      _leasehold_add "${list[@]}"
    elif [[ $option == *-file ]]; then
      compopt -o filenames 2>/dev/null
      local file
      while IFS= read -r file; do
        COMPREPLY+=("$file")
      done < <(compgen -f -- "$cur")
    fi
    COMPREPLY=("${COMPREPLY[@]/#/$value_prefix}")
    cur=$value_prefix$cur
  elif ((dashdash >= 0)); then
    # The command to run and its arguments.
    if declare -F _command_offset >/dev/null; then
      local offset
      for ((offset = 1; offset < COMP_CWORD; offset++)); do
        [[ ${COMP_WORDS[offset]} == -- ]] && break
      done
      _command_offset $((offset + 1))
      return
    fi
    if ((cword == dashdash + 1)); then
      _leasehold_add_commands
    else
      compopt -o default 2>/dev/null
    fi
  elif [[ $cur == -* ]]; then
    while read -r kind names rest; do
      if [[ $kind == option ]]; then
        local -a list
        IFS=, read -ra list <<<"$names"
        _leasehold_add "${list[@]}"
      fi
    done <<<"$help"
  elif [[ -z $subcommand || $help == *"subcommand "* ]] && ((positionals == 0)); then
    while read -r kind names rest; do
      [[ $kind == subcommand ]] && _leasehold_add "$names"
    done <<<"$help"
  else
    # A positional: the lease names for NAME and PATTERN, a command for COMMAND.
    local -a specs=()
    while read -r kind names rest; do
      [[ $kind == positional ]] && specs+=("$names $rest")
    done <<<"$help"
    ((${#specs[@]} == 0)) && return
    local spec=${specs[positionals]-${specs[-1]}}
    [[ -z ${specs[positionals]-} && $spec != *" ..." ]] && return
    case ${spec%% *} in
      NAME | PATTERN)
        local line
        while IFS= read -r line; do
          [[ $line == *": "* ]] && _leasehold_add "${line%: *}"
        done < <(timeout 3 "$program" "${global_args[@]}" list 2>/dev/null)
        ;;
      COMMAND) _leasehold_add_commands ;;
    esac
  fi

  # bash replaces only the part of the word after its last COMP_WORDBREAKS character.
  local bash_cur=${COMP_WORDS[COMP_CWORD]}
  if [[ $cur != "$bash_cur" && $cur == *"$bash_cur" ]]; then
    local prefix=${cur%"$bash_cur"}
    COMPREPLY=("${COMPREPLY[@]#"$prefix"}")
  fi
  return 0
}

complete -F _leasehold leasehold
