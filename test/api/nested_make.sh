# nested_make.sh: sourced by the test/api scripts that run `make install`
# inside make check (install_test, systemd_test, nspawn_test). Keeps the
# caller's make variables (OPT=, SANITIZE=, ..., so nothing rebuilds) but
# not its jobserver, which is not passed to scripts, and defines
#   mk ARGS...  make -C "$root" ARGS with output in "$tmp/make.log"; fails
#               (printing why) when make fails, when the flags stamp in
#               "$build" changed (the tree was rebuilt with other flags) or
#               when make compiled or archived anything.
# The caller sets root, build and tmp before calling mk.
MAKEFLAGS=$(printf '%s' "${MAKEFLAGS:-}" | sed -E 's/--jobserver-(auth|fds)=[^ ]*//g; s/(^| )-j[0-9]*( |$)/ /g')
export MAKEFLAGS

mk() {
  local before after
  before=$(cat "$build/flags.stamp" 2>/dev/null)
  make --no-print-directory -C "$root" "$@" >"$tmp/make.log" 2>&1 ||
    { cat "$tmp/make.log"; return 1; }
  after=$(cat "$build/flags.stamp" 2>/dev/null)
  [ "$before" = "$after" ] || { echo "make $*: the flags stamp changed (a rebuild)"; return 1; }
  ! grep -qE -e "-o $build/|^ar " "$tmp/make.log" ||
    { echo "make $* built something:"; grep -E -e "-o $build/|^ar " "$tmp/make.log" | head -5; return 1; }
}
