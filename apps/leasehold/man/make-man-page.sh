#!/bin/sh
# Makes the man page leasehold(1), gzipped, from the built command's own help:
#
#   make-man-page.sh HELP2MAN LEASEHOLD OUTPUT.1.gz
#
# help2man writes the page from `leasehold --help` and `leasehold --version`; the COMMANDS section,
# one entry per subcommand from its `leasehold SUBCOMMAND --help`, is made here and given to
# help2man as an include file. Nothing is written by hand: a new option or subcommand shows up in
# the page at the next build.
set -eu

help2man=$1
cli=$2
output=$3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# What help2man runs: the command, called by its plain name (its usage lines print the name it is
# called by), with "-x,--exclusive" written "-x, --exclusive" so that help2man sets both in bold.
cat >"$work/leasehold" <<EOF
#!/bin/sh
help=\$(PATH="$(dirname "$cli"):\$PATH" leasehold "\$@") || exit
printf '%s\\n' "\$help" | sed 's/^\\(  *-[^ ,]*\\),-/\\1, -/'
EOF
chmod +x "$work/leasehold"

# The subcommands, as the top-level --help lists them.
subcommands=$("$work/leasehold" --help |
  awk 'tolower($0) ~ /^subcommands:/ { on = 1; next } on && /^  [^ ]/ { print $1 } /^$/ { on = 0 }')
if [ -z "$subcommands" ]; then
  echo "make-man-page.sh: $cli --help lists no subcommands" >&2
  exit 1
fi

# One .SS per subcommand: its usage as the heading, its description, then a .TP per positional
# and option (but --help). sed escapes the text for roff; awk adds the markup.
{
  echo "[COMMANDS]"
  for subcommand in $subcommands; do
    help=$(PATH="$(dirname "$cli"):$PATH" leasehold "$subcommand" --help)
    printf '%s\n' "$help" |
      sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" |
      awk '
        function flush() {
          if (term != "")
            printf ".TP\n%s\n%s\n", term, text
          term = ""
          text = ""
        }
        BEGIN { head = 1 }
        head && /^Usage: / {
          sub(/^Usage: /, "")
          printf ".SS \"%s\"\n%s\n", $0, description
          head = 0
          next
        }
        head { description = description (description == "" ? "" : "\n") $0; next }
        /^  [^ ]/ {
          flush()
          line = substr($0, 3)
          gap = match(line, /   */)
          entry = gap ? substr(line, 1, gap - 1) : line
          text = gap ? substr(line, gap + RLENGTH) : ""
          space = index(entry, " ")
          names = space ? substr(entry, 1, space - 1) : entry
          if (names == "\\-h,\\-\\-help")
            next
          count = split(names, name, ",")
          for (i = 1; i <= count; i++)
            term = term (i > 1 ? ", " : "") "\\fB" name[i] "\\fR"
          term = term (space ? substr(entry, space) : "")
          next
        }
        /^   / { sub(/^ +/, ""); text = text (text == "" ? "" : " ") $0; next }
        { flush() }
        END { flush() }'
  done
} >"$work/commands.h2m"

"$help2man" --no-info --section=1 --name="distributed leases on Redis" \
  --include="$work/commands.h2m" --output="$work/leasehold.1" "$work/leasehold"
gzip -9n <"$work/leasehold.1" >"$output.tmp"
mv "$output.tmp" "$output"
