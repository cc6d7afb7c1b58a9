/* msgpack_map_test.c: the counted map writer packs exactly the bytes of
 * msgpack_pack_map plus str keys (fixmap, map16 and map32 headers, nested
 * maps, empty maps); a map given fewer keys than declared aborts at its
 * end, one given more aborts before the extra key is packed, and the abort
 * names the file and line that began the map and both counts; a failing
 * writer is reported through the return values. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/core/serialize/msgpack_map.h"
#include "test/unit/testutil.h"

/* The abort tests expect a panic line on stderr; keep it out of the log. */
static void quiet_stderr(void) {
  FILE *f = freopen("/dev/null", "w", stderr);
  ck_assert_ptr_nonnull(f);
}

/* Key i of a map: lengths cycle through 0..40 (fixstr and str8 both). */
static void key_of(int i, char *buf) {
  int len = i % 41;
  for (int k = 0; k < len; k++) buf[k] = (char)('a' + (i + k) % 26);
  buf[len] = '\0';
}

/* {key_i: i} for i < n, packed by hand and by the writer. */
static void pack_raw(msgpack_packer *pk, int n) {
  char k[48];
  msgpack_pack_map(pk, (size_t)n);
  for (int i = 0; i < n; i++) {
    key_of(i, k);
    msgpack_pack_str_with_body(pk, k, strlen(k));
    msgpack_pack_int(pk, i);
  }
}

static void pack_counted(msgpack_packer *pk, int n) {
  char k[48];
  tf__mp_map m;
  ck_assert_int_eq(tf__mp_map_begin(&m, pk, (size_t)n), 0);
  for (int i = 0; i < n; i++) {
    key_of(i, k);
    ck_assert_int_eq(tf__mp_map_key(&m, k), 0);
    msgpack_pack_int(pk, i);
  }
  tf__mp_map_end(&m);
}

START_TEST(test_bytes_match_raw_packing) {
  /* 0, fixmap limits, map16 from 16 on, map32 from 65536 on. */
  const int sizes[] = {0, 1, 7, 15, 16, 17, 300, 65535, 65536, 70001};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    msgpack_sbuffer a, b;
    msgpack_sbuffer_init(&a);
    msgpack_sbuffer_init(&b);
    msgpack_packer pa, pb;
    msgpack_packer_init(&pa, &a, msgpack_sbuffer_write);
    msgpack_packer_init(&pb, &b, msgpack_sbuffer_write);
    pack_raw(&pa, sizes[s]);
    pack_counted(&pb, sizes[s]);
    ck_assert_msg(a.size == b.size && memcmp(a.data, b.data, a.size) == 0,
                  "map of %d keys: %zu vs %zu bytes", sizes[s], a.size, b.size);
    msgpack_sbuffer_destroy(&a);
    msgpack_sbuffer_destroy(&b);
  }
}
END_TEST

/* {"a": {"x": 1, "y": {}}, "b": [{"z": nil}]}: each level counted on its
 * own, the bytes equal the hand-packed ones. */
START_TEST(test_nested_maps) {
  msgpack_sbuffer a, b;
  msgpack_sbuffer_init(&a);
  msgpack_sbuffer_init(&b);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &a, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "a", 1);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "x", 1);
  msgpack_pack_int(&pk, 1);
  msgpack_pack_str_with_body(&pk, "y", 1);
  msgpack_pack_map(&pk, 0);
  msgpack_pack_str_with_body(&pk, "b", 1);
  msgpack_pack_array(&pk, 1);
  msgpack_pack_map(&pk, 1);
  msgpack_pack_str_with_body(&pk, "z", 1);
  msgpack_pack_nil(&pk);

  msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
  tf__mp_map top, inner, empty, elem;
  tf__mp_map_begin(&top, &pk, 2);
  tf__mp_map_key(&top, "a");
  tf__mp_map_begin(&inner, &pk, 2);
  tf__mp_map_key(&inner, "x");
  msgpack_pack_int(&pk, 1);
  tf__mp_map_key(&inner, "y");
  tf__mp_map_begin(&empty, &pk, 0);
  tf__mp_map_end(&empty);
  tf__mp_map_end(&inner);
  tf__mp_map_key(&top, "b");
  msgpack_pack_array(&pk, 1);
  tf__mp_map_begin(&elem, &pk, 1);
  tf__mp_map_key(&elem, "z");
  msgpack_pack_nil(&pk);
  tf__mp_map_end(&elem);
  tf__mp_map_end(&top);
  ck_assert_uint_eq(a.size, b.size);
  ck_assert(memcmp(a.data, b.data, a.size) == 0);
  msgpack_sbuffer_destroy(&a);
  msgpack_sbuffer_destroy(&b);
}
END_TEST

/* {"job": 1, "task": 2} declared with `declared` entries (3: a field
 * left out); *line gets the line that begins the map. */
static void pack_job_task(msgpack_packer *pk, size_t declared, int *line) {
  tf__mp_map m;
  *line = __LINE__ + 1;
  tf__mp_map_begin(&m, pk, declared);
  tf__mp_map_key(&m, "job");
  msgpack_pack_int(pk, 1);
  tf__mp_map_key(&m, "task");
  msgpack_pack_int(pk, 2);
  tf__mp_map_end(&m);
}

static void with_packer(void (*f)(msgpack_packer *pk)) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  f(&pk);
  msgpack_sbuffer_destroy(&sb);
}

static void pack_short(msgpack_packer *pk) {
  int line;
  pack_job_task(pk, 3, &line);
}

/* One key too many: aborts before "extra" reaches the buffer. */
static void pack_long(msgpack_packer *pk) {
  tf__mp_map m;
  tf__mp_map_begin(&m, pk, 0);
  tf__mp_map_key(&m, "extra");
}

START_TEST(test_too_few_keys_aborts) {
  quiet_stderr();
  with_packer(pack_short);
  ck_abort_msg("a map with a missing key was accepted");
}
END_TEST

START_TEST(test_too_many_keys_aborts) {
  quiet_stderr();
  with_packer(pack_long);
  ck_abort_msg("a key beyond the declared count was packed");
}
END_TEST

/* Runs f in a child whose stderr goes to a pipe; out gets what it
 * printed, *sig the signal that ended it (0: it exited). */
static void capture(void (*f)(msgpack_packer *pk), char *out, size_t size,
                    int *sig) {
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    with_packer(f);
    _exit(0);
  }
  close(fds[1]);
  size_t off = 0;
  ssize_t r;
  while (off + 1 < size && (r = read(fds[0], out + off, size - 1 - off)) > 0) {
    off += (size_t)r;
  }
  out[off] = '\0';
  close(fds[0]);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  *sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

START_TEST(test_abort_names_site_and_counts) {
  char out[1024], want[64];
  int sig, line;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  pack_job_task(&pk, 2, &line); /* correctly counted: fine, and the line */
  msgpack_sbuffer_destroy(&sb);
  capture(pack_short, out, sizeof out, &sig);
  ck_assert_int_eq(sig, SIGABRT);
  snprintf(want, sizeof want, "msgpack_map_test.c:%d:", line);
  ck_assert_msg(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
  ck_assert_msg(strstr(out, "declared 3 entries, but 2 keys were packed") != NULL,
                "got: %s", out);
  capture(pack_long, out, sizeof out, &sig);
  ck_assert_int_eq(sig, SIGABRT);
  ck_assert_msg(strstr(out, "declared 0 entries, but key 'extra' would be "
                            "entry 1") != NULL, "got: %s", out);
}
END_TEST

/* The packer's write callback fails: begin and key report -1 (and keep
 * counting, so a writer that ignores errors still ends cleanly). */
static int failing_write(void *data, const char *buf, size_t len) {
  (void)data, (void)buf, (void)len;
  return -1;
}

START_TEST(test_writer_failure_is_returned) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, NULL, failing_write);
  tf__mp_map m;
  ck_assert_int_eq(tf__mp_map_begin(&m, &pk, 1), -1);
  ck_assert_int_eq(tf__mp_map_key(&m, "k"), -1);
  tf__mp_map_end(&m);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("msgpack_map");
  TCase *tc = tcase_create("msgpack_map");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_bytes_match_raw_packing);
  tcase_add_test(tc, test_nested_maps);
  tcase_add_test_raise_signal(tc, test_too_few_keys_aborts, SIGABRT);
  tcase_add_test_raise_signal(tc, test_too_many_keys_aborts, SIGABRT);
  tcase_add_test(tc, test_abort_names_site_and_counts);
  tcase_add_test(tc, test_writer_failure_is_returned);
  suite_add_tcase(s, tc);
  return s;
}
