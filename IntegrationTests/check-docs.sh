#!/usr/bin/env bash
# The documentation cannot drift from bgtaskctl: every verb and every long option that the built
# bgtaskctl reports in its --help appears in man/bgtaskctl.1.scd and in each shell's completions,
# every man page builds with scdoc, and the completion scripts parse. (Config and manifest keys are
# checked against the parsers' own lists by Tests/BGTaskConfigTests/ManPageTests.swift.)
# Usage: IntegrationTests/check-docs.sh [BIN_DIR]   (default .build/debug)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/debug}
ctl=$bin/bgtaskctl
fail=0
bad() { echo "check-docs: $*" >&2; fail=1; }

verbs=$("$ctl" --help | awk '/^SUBCOMMANDS:/{on=1; next} on && /^  [a-z]/{print $1}')
[ -n "$verbs" ] || bad "no verbs found in bgtaskctl --help"
man=man/bgtaskctl.1.scd
for v in $verbs; do
  grep -q "^\*$v\*" "$man" || bad "$man: verb $v is not documented (a line starting with *$v*)"
  grep -qw -- "$v" completions/bgtaskctl.bash || bad "completions/bgtaskctl.bash: verb $v missing"
  grep -q -- "'$v:" completions/_bgtaskctl || bad "completions/_bgtaskctl: verb $v missing"
  grep -q -- "-a $v " completions/bgtaskctl.fish || bad "completions/bgtaskctl.fish: verb $v missing"
  for opt in $("$ctl" "$v" --help | sed -n 's/^  \(-[a-z], \)*\(--[a-z][a-z-]*\).*/\2/p' | sort -u); do
    case $opt in --help | --version) continue ;; esac
    grep -q -- "\*$opt\*" "$man" || bad "$man: option $opt of $v is not documented (*$opt*)"
    grep -q -- "$opt" completions/bgtaskctl.bash || bad "completions/bgtaskctl.bash: $v $opt missing"
    grep -q -- "$opt" completions/_bgtaskctl || bad "completions/_bgtaskctl: $v $opt missing"
    grep -q -- "-l ${opt#--}" completions/bgtaskctl.fish || bad "completions/bgtaskctl.fish: $v $opt missing"
  done
done
for f in man/*.scd; do
  scdoc <"$f" >/dev/null || bad "$f does not build with scdoc"
done
bash -n completions/bgtaskctl.bash || bad "completions/bgtaskctl.bash: syntax"
if command -v zsh >/dev/null; then zsh -n completions/_bgtaskctl || bad "completions/_bgtaskctl: syntax"; else bad "zsh missing (scripts/install-deps.sh installs it)"; fi
if command -v fish >/dev/null; then fish -n completions/bgtaskctl.fish || bad "completions/bgtaskctl.fish: syntax"; else bad "fish missing"; fi
[ "$fail" = 0 ] && echo "docs: ok ($(echo $verbs | wc -w) verbs, man pages, completions)"
exit $fail
