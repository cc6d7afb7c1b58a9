#!/usr/bin/env bash
# exports_test.sh: libtf.so exports exactly the public API.
#
# The functions declared in include/tf/*.h (found by gcc -aux-info, which
# lists every prototype of a translation unit with its file and line) must
# equal the symbols `nm -D --defined-only` lists for the shared library:
# a declared function that is not exported lacks TF_API (tf/export.h) or a
# definition; an exported symbol that is not declared leaked out of lib/.
# Also: tf/tf.h includes every public header, and the library's SONAME and
# links follow include/tf/version.h. Prints a Check-style summary line.
#
# Environment (set by `make test-run`): TF_BUILD (build dir, default
# build), TF_CC, TF_SONAME, TF_VERSION.
set -u
cd "$(dirname "$0")/../.."
build=${TF_BUILD:-build}
lib=$build/lib
cc=${TF_CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
failures=0

check() { # check NAME COMMAND...: runs the command, counts a failure
  checks=$((checks + 1))
  if ! "${@:2}"; then
    failures=$((failures + 1))
    echo "exports_test: FAIL $1"
  fi
}

version_part() {
  sed -n "s/^#define TF_VERSION_$1 \([0-9][0-9]*\)$/\1/p" include/tf/version.h
}
major=$(version_part MAJOR)
version=$major.$(version_part MINOR).$(version_part PATCH)
soname=libtf.so.$major

# -aux-info is a gcc option: use gcc when CC is another compiler.
aux_cc=$cc
if ! $aux_cc -aux-info /dev/null -fsyntax-only -x c /dev/null 2>/dev/null; then
  aux_cc=gcc
fi

declared() {
  for h in include/tf/*.h; do printf '#include "%s"\n' "${h#include/}"; done >"$tmp/all.c"
  $aux_cc -std=c11 -D_GNU_SOURCE -Iinclude -aux-info "$tmp/aux.txt" -fsyntax-only \
    "$tmp/all.c" || return 1
  # "/* include/tf/x.h:12:NC */ extern type name (args);", static inline
  # functions excluded: they are not library symbols.
  grep '^/\* include/tf/' "$tmp/aux.txt" | grep -v '\*/ static ' |
    sed -E 's/^[^*]*\*\/ //; s/^([^(]*[ *])?([A-Za-z_][A-Za-z_0-9]*) \(.*/\2/' |
    sort -u >"$tmp/declared.txt"
  [ -s "$tmp/declared.txt" ]
}

exported() {
  nm -D --defined-only "$lib/libtf.so" | awk '{print $NF}' | sed 's/@.*//' |
    sort -u >"$tmp/exported.txt"
  [ -s "$tmp/exported.txt" ]
}

same_sets() {
  comm -23 "$tmp/declared.txt" "$tmp/exported.txt" >"$tmp/missing.txt"
  comm -13 "$tmp/declared.txt" "$tmp/exported.txt" >"$tmp/extra.txt"
  local ok=0
  if [ -s "$tmp/missing.txt" ]; then
    echo "declared in include/tf but not exported by $lib/libtf.so (TF_API missing, or no definition):"
    while read -r f; do
      printf '  %s (%s)\n' "$f" "$(grep -l "[ *]$f(" include/tf/*.h | tr '\n' ' ')"
    done <"$tmp/missing.txt"
    ok=1
  fi
  if [ -s "$tmp/extra.txt" ]; then
    echo "exported by $lib/libtf.so but not declared in include/tf:"
    sed 's/^/  /' "$tmp/extra.txt" | head -50
    echo "  ($(wc -l <"$tmp/extra.txt") in all)"
    ok=1
  fi
  return $ok
}

all_tf_names() { ! grep -v '^tf_' "$tmp/exported.txt"; }

tf_h_includes_all() {
  local ok=0
  for h in include/tf/*.h; do
    h=${h#include/}
    [ "$h" = tf/tf.h ] && continue
    if ! grep -q "^#include \"$h\"" include/tf/tf.h; then
      echo "include/tf/tf.h does not include $h"
      ok=1
    fi
  done
  return $ok
}

soname_and_links() {
  local got
  got=$(readelf -d "$lib/libtf.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  if [ "$got" != "$soname" ]; then
    echo "$lib/libtf.so.$version: SONAME '$got', want '$soname'"
    return 1
  fi
  if [ "$(readlink "$lib/$soname")" != "libtf.so.$version" ] ||
     [ "$(readlink "$lib/libtf.so")" != "$soname" ]; then
    echo "$lib: want libtf.so -> $soname -> libtf.so.$version, got" \
      "libtf.so -> $(readlink "$lib/libtf.so"), $soname -> $(readlink "$lib/$soname")"
    return 1
  fi
  # The Makefile read the same numbers (make passes what it used).
  [ -z "${TF_VERSION:-}" ] || [ "$TF_VERSION" = "$version" ] ||
    { echo "Makefile version $TF_VERSION, version.h $version"; return 1; }
  [ -z "${TF_SONAME:-}" ] || [ "$TF_SONAME" = "$soname" ] ||
    { echo "Makefile SONAME $TF_SONAME, want $soname"; return 1; }
}

check "the public declarations are found" declared
check "libtf.so has dynamic symbols" exported
check "exported == declared" same_sets
check "every exported name starts with tf_" all_tf_names
check "tf/tf.h includes every header" tf_h_includes_all
check "SONAME and links" soname_and_links

echo "exports_test: $(wc -l <"$tmp/exported.txt") symbols exported, $(wc -l <"$tmp/declared.txt") functions declared in include/tf"
pct=$(( (checks - failures) * 100 / checks ))
echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
[ "$failures" -eq 0 ]
