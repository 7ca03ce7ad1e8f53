#!/usr/bin/env bash
# Man pages against the tools: every option a (sub)command's --help lists is
# in its man page; every SYNOPSIS line parses (the words before its first
# placeholder are accepted: `TOOL [FLAGS] SUB --help` exits 0) and names only
# options the command has; no page hyphenates (an option name broken as
# "--frac-" / "tion" cannot be copied).
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
command -v groff >/dev/null || { echo "SKIP: groff is not installed" >&2; exit 77; }

# A page as plain text on very long lines (no wrapping), and at 60 columns.
render() { groff -man -Tutf8 -rLL="$2" "$WIT_SRC/man/$1" 2>/dev/null | sed 's/.\x08//g; s/\x1b\[[0-9;]*m//g'; }
# The long options a --help text lists (its option column only).
help_options() { grep -oE '^ +(-[a-zA-Z],)?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*' | grep -vE -- '^--(help|version)$' | sort -u; }
subcommands() { awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {print $1} s && /^$/ {s = 0}'; }

for tool in wit-commit wit-query wit-log wit-challenge wit-sketch wit-train wit-replay wit-eval wit-board; do
  [ -x "$WIT_BIN/$tool" ] || continue  # a LibTorch tool in a build without it
  page=$tool.1
  render "$page" 500n >"$T/$tool.txt"
  [ -s "$T/$tool.txt" ] && ok || { fail "$page does not render"; continue; }

  # 1. --help's options are in the page.
  "$tool" --help >"$T/help" 2>&1
  cmds=("")
  while read -r sub; do cmds+=("$sub"); done < <(subcommands <"$T/help")
  for sub in "${cmds[@]}"; do
    # shellcheck disable=SC2086
    "$tool" $sub --help >"$T/help.sub" 2>&1 || { fail "$tool $sub --help exits non-zero"; continue; }
    while read -r opt; do
      grep -qF -- "$opt" "$T/$tool.txt" && ok || fail "$page lacks $opt (in '$tool $sub --help')"
    done < <(help_options <"$T/help.sub")
  done

  # 2. Every SYNOPSIS line parses and names only options its command has.
  awk '/^SYNOPSIS/ {s = 1; next} s && /^[A-Z]/ {exit} s {print}' "$T/$tool.txt" |
    sed 's/^ *//' | grep "^$tool" >"$T/synopsis"
  [ -s "$T/synopsis" ] && ok || fail "$page has no SYNOPSIS lines"
  while read -r line; do
    # The line as a command: optional flags kept, other optional parts dropped, the first of each
    # alternative taken, placeholders filled (numbers with 1, the rest with x).
    cmd=$(sed -E 's/\.\.\.//g; s/\[(--?[a-zA-Z][a-z0-9-]*)\]/\1/g; :a; s/\[[^][]*\]//; ta; :b; s/\(([^()|]*)\|[^()]*\)/\1/; tb; s/[()]//g' <<<"$line")
    read -ra words <<<"$cmd"
    args=()
    for w in "${words[@]:1}"; do
      case $w in
        N | K | P | F | STEP | SIZE | OLD_SIZE | NEW_SIZE | SECONDS) args+=(1) ;;
        *[A-Z]*) [[ $w == -* ]] && args+=("$w") || args+=(x) ;;
        *) args+=("$w") ;;
      esac
    done
    mkdir -p "$T/scratch" && rm -rf "$T/scratch"/*
    (cd "$T/scratch" && timeout 20 "$tool" "${args[@]}" </dev/null >/dev/null 2>"$T/line.err")
    if grep -qE "for usage|not expected|unknown subcommand|missing subcommand| is required" "$T/line.err"; then
      fail "SYNOPSIS line does not parse: $line (ran: $tool ${args[*]}: $(head -n 1 "$T/line.err"))"
    else
      ok
    fi
    # Every option it names is one the command lists.
    sub=""
    for w in "${words[@]:1}"; do [[ " ${cmds[*]} " == *" $w "* ]] && { sub=$w; break; }; [[ $w == -* ]] || break; done
    # shellcheck disable=SC2086
    { "$tool" $sub --help; "$tool" --help; } >"$T/help.line" 2>&1
    for opt in $(grep -oE -- '(^|[[ (|])--?[a-zA-Z][a-z0-9-]*' <<<"$line" | grep -oE -- '--?[a-zA-Z][a-z0-9-]*' | sort -u); do
      grep -qE -- "(^| |,)$opt( |,|$)" "$T/help.line" && ok || fail "SYNOPSIS names $opt, which '$tool $sub --help' does not list: $line"
    done
  done <"$T/synopsis"
done

# 3. No hyphenation anywhere: a word broken at a line end is a copy-paste trap.
for page in "$WIT_SRC"/man/*.[17]; do
  name=$(basename "$page")
  if render "$name" 60n | grep -q '‐$'; then fail "$name hyphenates: $(render "$name" 60n | grep -m1 '‐$')"; else ok; fi
done
finish
