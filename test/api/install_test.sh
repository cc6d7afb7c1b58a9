#!/usr/bin/env bash
# install_test.sh: `make install` and `make uninstall` on a scratch tree.
#
# 1. make install DESTDIR=<tmp>/stage PREFIX=/usr/local: the exact file
#    list (headers, libtf.a, libtf.so.X.Y.Z and its two links, tf.pc, the
#    three programs, conf/*.yaml, docs, the two systemd units and
#    etc/tf/cluster.yaml), the units' paths, tf.pc's fields; then
#    examples/square/square.c built with only `pkg-config --cflags --libs
#    tf` (PKG_CONFIG_SYSROOT_DIR into the stage) runs against the staged
#    libtf.so; the C++ API test's header set compiles from the stage; the
#    installed tfctl runs; a second install keeps an edited
#    etc/tf/cluster.yaml and uninstall leaves it; otherwise make uninstall
#    leaves no file behind.
# 2. make install PREFIX=<tmp>/prefix: the static link documented in tf.pc
#    (static_libs: libtf.a inside --whole-archive) gives a program with no
#    libtf.so dependency that runs; uninstall again.
# Reuses the built tree (no rebuild). Prints a Check-style summary line.
#
# Environment (set by `make test-run`): TF_BUILD, TF_CC, TF_SANFLAGS
# (sanitizer flags of the build: the installed libtf needs them).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${TF_BUILD:-build}
cc=${TF_CC:-cc}
sanflags=${TF_SANFLAGS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
failures=0

check() { # check NAME COMMAND...
  checks=$((checks + 1))
  if ! "${@:2}"; then
    failures=$((failures + 1))
    echo "install_test: FAIL $1"
  fi
}

# MAKEFLAGS without the jobserver, and mk (nested_make.sh).
. "$root/test/api/nested_make.sh"
# pkg-config over the installed tree only (PC_PATH, PC_SYSROOT).
pc() {
  PKG_CONFIG_PATH=$PC_PATH PKG_CONFIG_LIBDIR=$PC_PATH PKG_CONFIG_SYSROOT_DIR=${PC_SYSROOT:-} pkg-config "$@"
}

version_part() {
  sed -n "s/^#define TF_VERSION_$1 \([0-9][0-9]*\)$/\1/p" include/tf/version.h
}
major=$(version_part MAJOR)
version=$major.$(version_part MINOR).$(version_part PATCH)

stage=$tmp/stage
usr=$stage/usr/local

expected_files() {
  for h in include/tf/*.h; do echo "usr/local/include/tf/${h##*/}"; done
  printf 'usr/local/lib/%s\n' libtf.a libtf.so "libtf.so.$major" "libtf.so.$version"
  echo usr/local/lib/pkgconfig/tf.pc
  printf 'usr/local/bin/%s\n' tfctl tfmaster tfworker
  echo usr/local/share/bash-completion/completions/tfctl
  for c in conf/*.yaml; do echo "usr/local/share/tf/conf/${c##*/}"; done
  echo usr/local/share/doc/tf/README.md
  for d in docs/*.md; do echo "usr/local/share/doc/tf/${d##*/}"; done
  printf 'usr/local/lib/systemd/system/%s\n' tfmaster.service tfworker@.service
  echo etc/tf/cluster.yaml
}

installed_files() { (cd "$1" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort); }

layout() {
  expected_files | sort >"$tmp/want.txt"
  installed_files "$stage" >"$tmp/got.txt"
  diff -u "$tmp/want.txt" "$tmp/got.txt" || return 1
  [ "$(readlink "$usr/lib/libtf.so")" = "libtf.so.$major" ] &&
    [ "$(readlink "$usr/lib/libtf.so.$major")" = "libtf.so.$version" ] &&
    [ -x "$usr/bin/tfctl" ] && [ -x "$usr/bin/tfmaster" ] && [ -x "$usr/bin/tfworker" ] &&
    cmp -s include/tf/tf.h "$usr/include/tf/tf.h" &&
    cmp -s systemd/cluster.yaml "$stage/etc/tf/cluster.yaml"
}

# The installed units start the installed programs with the example config.
unit_paths() {
  local units=$usr/lib/systemd/system
  grep -qx 'ExecStart=/usr/local/bin/tfmaster --config /etc/tf/cluster.yaml' "$units/tfmaster.service" &&
    grep -qx 'ExecStart=/usr/local/bin/tfworker --config /etc/tf/cluster.yaml --instance %i' \
      "$units/tfworker@.service" ||
    { grep -H '^ExecStart=' "$units"/*.service; return 1; }
}
prefix_unit_paths() { # the same under PREFIX=<tmp>/prefix: bin and etc there
  grep -qx "ExecStart=$prefix/bin/tfworker --config $prefix/etc/tf/cluster.yaml --instance %i" \
    "$prefix/lib/systemd/system/tfworker@.service" && [ -f "$prefix/etc/tf/cluster.yaml" ] ||
    { grep -H '^ExecStart=' "$prefix/lib/systemd/system/tfworker@.service"; return 1; }
}

# An operator's edits to etc/tf/cluster.yaml survive a second install and
# uninstall; the edited file is what remains.
config_kept() {
  local c=$stage/etc/tf/cluster.yaml
  mk install DESTDIR="$stage" PREFIX=/usr/local && echo '# edited' >>"$c" &&
    mk install DESTDIR="$stage" PREFIX=/usr/local &&
    tail -n 1 "$c" | grep -qx '# edited' && mk uninstall DESTDIR="$stage" PREFIX=/usr/local &&
    [ "$(installed_files "$stage")" = etc/tf/cluster.yaml ] && rm -f "$c" && rmdir "$stage/etc/tf" ||
    { echo "cluster.yaml: $(tail -n 1 "$c" 2>&1)"; installed_files "$stage"; return 1; }
}

pc_fields() {
  local pcfile=$usr/lib/pkgconfig/tf.pc
  grep -qx 'prefix=/usr/local' "$pcfile" && grep -qx "Version: $version" "$pcfile" &&
    [ "$(pc --modversion tf)" = "$version" ] &&
    [ "$(echo $(pc --cflags tf))" = "-I$usr/include" ] &&
    [ "$(echo $(pc --libs tf))" = "-L$usr/lib -ltf" ] &&
    pc --static --libs tf | grep -q -- '-lopenblas' ||
    { cat "$pcfile"; echo "cflags: $(pc --cflags tf); libs: $(pc --libs tf)"; return 1; }
}

want_out() { printf 'tf %s\ny = [1, 4, 9, 16]\n' "$version"; }

shared_program() {
  # shellcheck disable=SC2046 # the flags are words
  $cc -std=c11 $sanflags -o "$tmp/square" examples/square/square.c \
    $(pc --cflags --libs tf) || return 1
  readelf -d "$tmp/square" | grep -q "NEEDED.*\[libtf.so.$major\]" ||
    { echo "square does not need libtf.so.$major"; return 1; }
  LD_LIBRARY_PATH=$usr/lib "$tmp/square" >"$tmp/out.txt" || return 1
  want_out | diff -u - "$tmp/out.txt"
}

# The installed headers alone are valid C++ (with the same strict flags as
# test/unit/cxx/api_cxx_test.cc).
cxx_headers() {
  printf '#include "tf/tf.h"\nint main() { return tf_shape_of(1, 3).rank == 1 ? 0 : 1; }\n' >"$tmp/h.cc"
  # shellcheck disable=SC2046
  ${CXX:-g++} -std=c++17 -Wall -Wextra -Werror -pedantic-errors $sanflags -o "$tmp/hcc" "$tmp/h.cc" \
    $(pc --cflags --libs tf) && LD_LIBRARY_PATH=$usr/lib "$tmp/hcc"
}

installed_tfctl() {
  LD_LIBRARY_PATH=$usr/lib "$usr/bin/tfctl" --help | grep -q '^usage: tfctl' &&
    [ "$(LD_LIBRARY_PATH=$usr/lib "$usr/bin/tfctl" --version)" = "tfctl $version" ]
}

# The installed completion offers the commands, then a command's options.
completion() {
  bash -c '. "$1"; COMP_WORDS=(tfctl ""); COMP_CWORD=1; _tfctl; echo "${COMPREPLY[*]}"' _ \
    "$usr/share/bash-completion/completions/tfctl" |
    grep -qx 'health devices top run graph cluster submit jobs status step pause resume cancel logs checkpoint checkpoints restore inspect help' &&
  bash -c '. "$1"; COMP_WORDS=(tfctl run --o); COMP_CWORD=2; _tfctl; echo "${COMPREPLY[*]}"' _ \
    "$usr/share/bash-completion/completions/tfctl" | grep -qx -- '--out' &&
  bash -c '. "$1"; COMP_WORDS=(tfctl status j --f); COMP_CWORD=3; _tfctl; echo "${COMPREPLY[*]}"' _ \
    "$usr/share/bash-completion/completions/tfctl" | grep -qx -- '--follow' &&
  bash -c '. "$1"; COMP_WORDS=(tfctl inspect d --e); COMP_CWORD=3; _tfctl; echo "${COMPREPLY[*]}"' _ \
    "$usr/share/bash-completion/completions/tfctl" | grep -qx -- '--export' &&
  bash -c '. "$1"; COMP_WORDS=(tfctl top --in); COMP_CWORD=2; _tfctl; echo "${COMPREPLY[*]}"' _ \
    "$usr/share/bash-completion/completions/tfctl" | grep -qx -- '--interval'
}

nothing_left() {
  installed_files "$1" >"$tmp/left.txt"
  [ ! -s "$tmp/left.txt" ] || { echo "left after uninstall:"; cat "$tmp/left.txt"; return 1; }
  for d in "$2/include/tf" "$2/share/tf" "$2/share/doc/tf" "$1/etc/tf"; do
    [ ! -e "$d" ] || { echo "left after uninstall: $d"; return 1; }
  done
}

PC_PATH=$usr/lib/pkgconfig PC_SYSROOT=$stage
check "make install DESTDIR PREFIX=/usr/local" mk install DESTDIR="$stage" PREFIX=/usr/local
check "installed file list" layout
check "installed units' ExecStart" unit_paths
check "tf.pc" pc_fields
check "square.c with pkg-config --cflags --libs tf" shared_program
check "public headers as C++ from the install" cxx_headers
check "installed tfctl runs" installed_tfctl
check "bash completion for tfctl" completion
check "make uninstall" mk uninstall DESTDIR="$stage" PREFIX=/usr/local
check "nothing left after uninstall" nothing_left "$stage" "$usr"
check "an edited cluster.yaml is kept" config_kept

prefix=$tmp/prefix
PC_PATH=$prefix/lib/pkgconfig PC_SYSROOT=
static_program() {
  # shellcheck disable=SC2046
  $cc -std=c11 $sanflags -o "$tmp/square_static" examples/square/square.c \
    $(pc --cflags tf) $(pc --variable=static_libs tf) || return 1
  ! readelf -d "$tmp/square_static" | grep -q 'NEEDED.*libtf' ||
    { echo "square_static still needs libtf.so"; return 1; }
  "$tmp/square_static" >"$tmp/out_static.txt" || return 1
  want_out | diff -u - "$tmp/out_static.txt"
}
check "make install PREFIX=<tmp>" mk install PREFIX="$prefix"
check "units and config under PREFIX=<tmp>" prefix_unit_paths
check "square.c linked statically with tf.pc's static_libs" static_program
check "make uninstall PREFIX=<tmp>" mk uninstall PREFIX="$prefix"
check "nothing left after uninstall (prefix)" nothing_left "$prefix" "$prefix"

pct=$(( (checks - failures) * 100 / checks ))
echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
[ "$failures" -eq 0 ]
