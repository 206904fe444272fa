#!/usr/bin/env bash
# Runs an install command once per machine: what it installs is kept in an install cache (as Go
# keeps modules and builds), keyed by the command and the content of the files it installs from,
# so a fresh clone gets Flink's distributions, PyFlink, ZooKeeper, the Apache operator and the
# test jobs in seconds instead of unpacking gigabytes again. A cold machine (an empty cache) runs
# every command; a changed script, pom or source file changes the key and runs it again.
#
# Usage: hack/cached.sh [--link] DEST INPUT... -- COMMAND [ARG...]
#   DEST     what COMMAND installs (a directory or a file); "{}" in COMMAND's arguments stands for
#            where it should install it.
#   INPUT    files (or directories) whose content the result depends on (scripts, poms, sources).
#   --link   DEST becomes a symbolic link to the cache entry, which COMMAND installs in place:
#            for installs that record their own path (a Python virtual environment).
# INSTALL_CACHE: the cache directory (default ${XDG_CACHE_HOME:-~/.cache}/flink-operator/installs);
# empty: no cache, COMMAND installs DEST.
set -euo pipefail

link=false
if [ "${1:-}" = --link ]; then link=true; shift; fi
dest=$1; shift
inputs=()
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do inputs+=("$1"); shift; done
[ "${1:-}" = -- ] || { echo "cached.sh: usage: cached.sh [--link] DEST INPUT... -- COMMAND [ARG...]" >&2; exit 2; }
shift

cache=${INSTALL_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/flink-operator/installs}
run() { # run COMMAND with {} replaced by $1
  local args=() a
  for a in "$@"; do args+=("$a"); done
  local target=${args[0]}; args=("${args[@]:1}")
  local i
  for i in "${!args[@]}"; do args[$i]=${args[$i]//\{\}/$target}; done
  "${args[@]}"
}
if [ -z "$cache" ]; then
  run "$dest" "$@"
  exit 0
fi

# The key: the command (with {} standing for the destination, so that clones agree), DEST's
# name and mode, and every input file's path and content.
key=$({
  printf '%s\n' "link=$link" "$(basename "$dest")" "$@"
  for input in "${inputs[@]}"; do
    find "$input" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
  done
} | sha256sum | cut -c1-32)
entry=$cache/$key
mkdir -p "$cache"

exec 9>"$entry.lock"
flock 9 # one installer of an entry at a time, across clones
if [ ! -e "$entry/.complete" ]; then
  rm -rf "$entry"
  mkdir -p "$entry"
  if $link; then
    run "$entry/tree" "$@"
  else
    run "$dest" "$@"
    cp -a "$dest" "$entry/tree"
  fi
  printf '%s\n' "$@" > "$entry/command"
  touch "$entry/.complete"
  echo "cached.sh: $(basename "$dest") kept in the install cache ($entry)"
  if ! $link; then exit 0; fi
else
  echo "cached.sh: $(basename "$dest") from the install cache ($entry)"
fi

# DEST is replaced whole, never left half copied: another make (a parallel lane) may be running
# or linking what an earlier DEST holds. The copy keeps the entry's file times, so DEST is then
# marked new: older than the clone's files it was installed from, make would take it as out of
# date and install it again in every lane, over files the other lanes are using.
mkdir -p "$(dirname "$dest")"
staged=$dest.restore.$$
rm -rf "$staged"
if $link; then
  ln -s "$entry/tree" "$staged"
else
  cp -a "$entry/tree" "$staged"
  touch "$staged"
fi
if [ -d "$dest" ] && [ ! -L "$dest" ]; then
  old=$dest.old.$$
  mv "$dest" "$old"
  mv -T "$staged" "$dest"
  rm -rf "$old"
else
  mv -T "$staged" "$dest"
fi
