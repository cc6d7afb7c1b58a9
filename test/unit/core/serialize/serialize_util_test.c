/* serialize_util_test.c: the codec helpers of lib/core/serialize/serialize_util.c,
 * called directly: whole-file reads and writes (binary round trips at
 * buffer-size edges, a FIFO whose size is unknown up front, and every error
 * naming the path with the right code), the decoder arena (zeroed, aligned,
 * non-overlapping memory across blocks, big allocations in blocks of their
 * own, tensor references released by fini, overflow panics), attr type name
 * parsing, import errors rewritten as INVALID_ARGUMENT, duplicate attr
 * detection, and UTF-8 validation against a plain reference decoder written
 * from the Unicode well-formed byte table. Everything here is exact. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/serialize/serialize_util.h"
#include "test/unit/testutil.h"

static void assert_has(const char *msg, const char *needle) {
  ck_assert_msg(strstr(msg, needle) != NULL, "'%s' lacks '%s'", msg, needle);
}

/* A fresh directory under /tmp; the caller removes it with rm_dir. */
static void make_dir(char *dir, size_t size) {
  snprintf(dir, size, "/tmp/serialize_util_test_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_dir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* ---- files --------------------------------------------------------------- */

START_TEST(test_file_round_trip_sizes) {
  char dir[128], path[256];
  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/data.bin", dir);
  /* Around the 4096-byte first chunk and the st_size + 1 capacity. */
  static const size_t sizes[] = {0, 1, 2, 4095, 4096, 4097, 8193, 100003};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    unsigned char *data = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
      data[i] = (unsigned char)(tt_rand_u64() & 0xff); /* NULs included */
    }
    tf_status st;
    ck_assert_int_eq(tf__write_file(path, data, n, &st), TF_OK);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq((long long)sb.st_size, (long long)n);
    char *buf = NULL;
    size_t len = 12345;
    ck_assert_int_eq(tf__read_file(path, &buf, &len, &st), TF_OK);
    ck_assert_uint_eq(len, n);
    ck_assert_msg(n == 0 || memcmp(buf, data, n) == 0, "size %zu differs", n);
    ck_assert_int_eq(buf[n], '\0'); /* NUL-terminated for text parsers */
    free(buf);
    free(data);
  }
  /* A shorter write truncates; an empty write leaves an empty file. */
  tf_status st;
  ck_assert_int_eq(tf__write_file(path, "abc", 3, &st), TF_OK);
  ck_assert_int_eq(tf__write_file(path, NULL, 0, &st), TF_OK);
  char *buf;
  size_t len;
  ck_assert_int_eq(tf__read_file(path, &buf, &len, &st), TF_OK);
  ck_assert_uint_eq(len, 0);
  ck_assert_str_eq(buf, "");
  free(buf);
  rm_dir(dir);
}
END_TEST

typedef struct fifo_writer {
  const char *path;
  const unsigned char *data;
  size_t n;
} fifo_writer;

static void *write_fifo(void *arg) {
  const fifo_writer *w = arg;
  int fd = open(w->path, O_WRONLY);
  if (fd < 0) {
    return NULL;
  }
  size_t off = 0;
  while (off < w->n) {
    ssize_t k = write(fd, w->data + off, w->n - off > 1000 ? 1000 : w->n - off);
    if (k <= 0) {
      break;
    }
    off += (size_t)k;
  }
  close(fd);
  return NULL;
}

/* A FIFO reports st_size 0: the reader must grow its buffer as it goes. */
START_TEST(test_read_fifo_of_unknown_size) {
  char dir[128], path[256];
  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/pipe", dir);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  size_t n = 3 * 4096 + 17;
  unsigned char *data = malloc(n);
  for (size_t i = 0; i < n; i++) {
    data[i] = (unsigned char)(i * 131 + 7);
  }
  fifo_writer w = {path, data, n};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, write_fifo, &w), 0);
  char *buf;
  size_t len;
  tf_status st;
  tf_code c = tf__read_file(path, &buf, &len, &st);
  pthread_join(th, NULL);
  ck_assert_msg(c == TF_OK, "%s", st.msg);
  ck_assert_uint_eq(len, n);
  ck_assert(memcmp(buf, data, n) == 0);
  ck_assert_int_eq(buf[n], '\0');
  free(buf);
  free(data);
  rm_dir(dir);
}
END_TEST

START_TEST(test_read_errors_name_the_path) {
  char dir[128], path[256];
  make_dir(dir, sizeof dir);
  tf_status st;
  char *buf = (char *)&st;
  size_t len = 99;
  snprintf(path, sizeof path, "%s/missing.tfg", dir);
  ck_assert_int_eq(tf__read_file(path, &buf, &len, &st), TF_NOT_FOUND);
  ck_assert_ptr_null(buf); /* outputs cleared on error */
  ck_assert_uint_eq(len, 0);
  assert_has(st.msg, "cannot open");
  assert_has(st.msg, path);
  assert_has(st.msg, strerror(ENOENT));
  /* A path through a regular file: ENOTDIR is also NOT_FOUND. */
  snprintf(path, sizeof path, "%s/file", dir);
  ck_assert_int_eq(tf__write_file(path, "x", 1, &st), TF_OK);
  snprintf(path, sizeof path, "%s/file/below", dir);
  ck_assert_int_eq(tf__read_file(path, &buf, &len, &st), TF_NOT_FOUND);
  assert_has(st.msg, path);
  /* A directory opens but cannot be read as a file. */
  ck_assert_int_eq(tf__read_file(dir, &buf, &len, &st), TF_FAILED_PRECONDITION);
  assert_has(st.msg, "cannot read");
  assert_has(st.msg, dir);
  assert_has(st.msg, strerror(EISDIR));
  ck_assert_ptr_null(buf);
  /* An unreadable file (root reads anything, so only checked otherwise). */
  snprintf(path, sizeof path, "%s/file", dir);
  ck_assert_int_eq(chmod(path, 0), 0);
  if (geteuid() != 0) {
    ck_assert_int_eq(tf__read_file(path, &buf, &len, &st), TF_PERMISSION_DENIED);
    assert_has(st.msg, path);
    ck_assert_int_eq(tf__write_file(path, "y", 1, &st), TF_PERMISSION_DENIED);
    assert_has(st.msg, "cannot create");
  } else {
    fprintf(stderr, "running as root: permission errors not checked\n");
  }
  rm_dir(dir);
}
END_TEST

START_TEST(test_write_errors_name_the_path) {
  char dir[128], path[256];
  make_dir(dir, sizeof dir);
  tf_status st;
  snprintf(path, sizeof path, "%s/no/such/dir/out.tfg", dir);
  ck_assert_int_eq(tf__write_file(path, "x", 1, &st), TF_NOT_FOUND);
  assert_has(st.msg, "cannot create");
  assert_has(st.msg, path);
  ck_assert_int_eq(tf__write_file(dir, "x", 1, &st), TF_FAILED_PRECONDITION);
  assert_has(st.msg, dir);
  assert_has(st.msg, strerror(EISDIR));
  /* /dev/full accepts the open and fails the write (at the latest when
   * fclose flushes): ENOSPC. */
  if (access("/dev/full", W_OK) == 0) {
    char big[8192] = {0};
    ck_assert_int_eq(tf__write_file("/dev/full", big, sizeof big, &st),
                     TF_RESOURCE_EXHAUSTED);
    assert_has(st.msg, "cannot write '/dev/full'");
    assert_has(st.msg, strerror(ENOSPC));
    ck_assert_int_eq(tf__write_file("/dev/full", "x", 1, &st),
                     TF_RESOURCE_EXHAUSTED);
  }
  /* /dev/null reads as an empty file. */
  char *buf;
  size_t len;
  ck_assert_int_eq(tf__read_file("/dev/null", &buf, &len, &st), TF_OK);
  ck_assert_uint_eq(len, 0);
  ck_assert_int_eq(buf[0], '\0');
  free(buf);
  rm_dir(dir);
}
END_TEST

/* ---- arena --------------------------------------------------------------- */

static bool all_bytes(const void *p, size_t n, unsigned char v) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    if (b[i] != v) {
      return false;
    }
  }
  return true;
}

/* Many allocations of random sizes (small ones spanning several blocks,
 * some bigger than a quarter block): each zeroed and aligned, none
 * overlapping another (each is filled with its own byte and checked after
 * all were made). */
START_TEST(test_arena_alloc_zeroed_aligned_disjoint) {
  tf__arena a;
  memset(&a, 0x5a, sizeof a);
  tf__arena_init(&a);
  ck_assert_ptr_null(a.blocks);
  ck_assert_uint_eq(a.n_tensors, 0);
  enum { N = 2000 };
  unsigned char **p = malloc(N * sizeof *p);
  size_t *sz = malloc(N * sizeof *sz);
  for (int i = 0; i < N; i++) {
    uint64_t r = tt_rand_u64();
    sz[i] = r % 10 == 0 ? 4097 + r % 20000 : r % 300; /* 0 included */
    size_t count = sz[i] % 2 ? sz[i] : sz[i] / 2, size = sz[i] % 2 ? 1 : 2;
    p[i] = tf__arena_calloc(&a, count, size);
    ck_assert_ptr_nonnull(p[i]);
    ck_assert_msg((uintptr_t)p[i] % alignof(max_align_t) == 0,
                  "allocation %d misaligned", i);
    ck_assert_msg(all_bytes(p[i], sz[i], 0), "allocation %d not zeroed", i);
    memset(p[i], (unsigned char)(i % 251 + 1), sz[i]);
  }
  for (int i = 0; i < N; i++) {
    ck_assert_msg(all_bytes(p[i], sz[i], (unsigned char)(i % 251 + 1)),
                  "allocation %d (%zu bytes) was overwritten", i, sz[i]);
  }
  tf__arena_fini(&a);
  ck_assert_ptr_null(a.blocks);
  /* A finished arena can be used again. */
  void *q = tf__arena_calloc(&a, 3, 8);
  ck_assert(all_bytes(q, 24, 0));
  tf__arena_fini(&a);
  free(p);
  free(sz);
}
END_TEST

/* A big allocation gets a block of its own and leaves the current block
 * first: the next small allocation continues right after the last one. */
START_TEST(test_arena_big_block_keeps_current) {
  tf__arena a;
  tf__arena_init(&a);
  char *s1 = tf__arena_calloc(&a, 1, 24);
  char *big = tf__arena_calloc(&a, 1, 100000);
  char *s2 = tf__arena_calloc(&a, 1, 8);
  size_t step = (24 + alignof(max_align_t) - 1) / alignof(max_align_t) *
                alignof(max_align_t);
  ck_assert_ptr_eq(s2, s1 + step);
  ck_assert(big + 100000 <= s1 || big >= s1 + step + 8);
  ck_assert(all_bytes(big, 100000, 0));
  /* A big allocation as the very first one. */
  tf__arena b;
  tf__arena_init(&b);
  char *first = tf__arena_calloc(&b, 5000, 2);
  ck_assert(all_bytes(first, 10000, 0));
  ck_assert_ptr_nonnull(tf__arena_calloc(&b, 0, 1)); /* count 0 is fine */
  ck_assert_ptr_nonnull(tf__arena_calloc(&b, 7, 0));
  tf__arena_fini(&b);
  tf__arena_fini(&a);
}
END_TEST

START_TEST(test_arena_strndup) {
  tf__arena a;
  tf__arena_init(&a);
  char *s = tf__arena_strndup(&a, "hello world", 5);
  ck_assert_str_eq(s, "hello");
  char *e = tf__arena_strndup(&a, "ignored", 0);
  ck_assert_str_eq(e, "");
  char *z = tf__arena_strndup(&a, "a\0b", 3); /* embedded NUL copied */
  ck_assert(memcmp(z, "a\0b", 4) == 0);
  char *n = tf__arena_strndup(&a, NULL, 0);
  ck_assert_str_eq(n, "");
  tf__arena_fini(&a);
}
END_TEST

/* The arena holds one reference to each tensor it owns; fini drops them
 * (more tensors than the first table size, so the table grows). */
START_TEST(test_arena_owns_tensors) {
  tf__arena a;
  tf__arena_init(&a);
  enum { N = 40 };
  tf_tensor *t[N];
  for (int i = 0; i < N; i++) {
    t[i] = tf_tensor_scalar_i32(i);
    tf_tensor_ref(t[i]); /* ours */
    tf__arena_own_tensor(&a, t[i]);
    ck_assert_int_eq(atomic_load(&t[i]->refs), 2);
  }
  ck_assert_uint_eq(a.n_tensors, N);
  tf__arena_fini(&a);
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(atomic_load(&t[i]->refs), 1);
    ck_assert_int_eq(*(int32_t *)t[i]->data, i);
    tf_tensor_unref(t[i]);
  }
  ck_assert_ptr_null(a.tensors);
}
END_TEST

/* count * size overflowing size_t is a bug in the caller: a panic. */
START_TEST(test_arena_overflow_panics) {
  tf__arena a;
  tf__arena_init(&a);
  tf__arena_calloc(&a, SIZE_MAX / 2, 3);
  ck_abort_msg("overflowing allocation returned");
}
END_TEST

START_TEST(test_arena_huge_panics) {
  tf__arena a;
  tf__arena_init(&a);
  tf__arena_calloc(&a, 1, SIZE_MAX / 2);
  ck_abort_msg("huge allocation returned");
}
END_TEST

/* ---- attr type names ----------------------------------------------------- */

START_TEST(test_attr_type_parse) {
  for (int k = TF_ATTR_INT; k < TF_ATTR_TYPE_COUNT; k++) {
    for (int list = 0; list < 2; list++) {
      const char *name = tf_attr_type_name((tf_attr_type)k, list);
      tf_attr_type t = TF_ATTR_NONE;
      bool is_list = !list;
      ck_assert_msg(tf__attr_type_parse(name, strlen(name), &t, &is_list),
                    "%s", name);
      ck_assert_int_eq(t, k);
      ck_assert_int_eq(is_list, list);
    }
  }
  /* Only the first n bytes count. */
  tf_attr_type t;
  bool is_list;
  ck_assert(tf__attr_type_parse("intx", 3, &t, &is_list));
  ck_assert(t == TF_ATTR_INT && !is_list);
  ck_assert(tf__attr_type_parse("list(shape))", 11, &t, &is_list));
  ck_assert(t == TF_ATTR_SHAPE && is_list);
  static const char *bad[] = {"none", "list(none)", "invalid", "", "in",
                              "Int", "list(int", "list()", "list(list(int))",
                              " int", "int "};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    t = TF_ATTR_FLOAT;
    ck_assert_msg(!tf__attr_type_parse(bad[i], strlen(bad[i]), &t, &is_list),
                  "'%s' accepted", bad[i]);
  }
  ck_assert(!tf__attr_type_parse("int", 2, &t, &is_list));
}
END_TEST

/* ---- import and attr checks ---------------------------------------------- */

/* Import failures caused by the decoded contents come back as
 * INVALID_ARGUMENT with import's own message; nothing is added. */
START_TEST(test_import_decoded_rewrites_codes) {
  tf_attr_kv ph[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}};
  const char *in_ghost[] = {"ghost"};
  tf_node_def unknown[] = {{.name = "a", .op = "NoSuchOp"}};
  tf_node_def dup[] = {{.name = "a", .op = "NoOp"}, {.name = "a", .op = "NoOp"}};
  tf_node_def missing[] = {
      {.name = "i", .op = "Identity", .n_inputs = 1, .inputs = in_ghost}};
  tf_node_def noattr[] = {{.name = "p", .op = "Placeholder"}};
  const tf_node_def *cases[] = {unknown, dup, missing, noattr};
  const int counts[] = {1, 2, 1, 1};
  for (int k = 0; k < 4; k++) {
    tf_graph *g = tf_graph_new(), *h = tf_graph_new();
    tf_status st, direct;
    tf_code raw = tf_graph_import(h, cases[k], counts[k], &direct);
    ck_assert_int_ne(raw, TF_OK);
    ck_assert_int_eq(tf__graph_import_decoded(g, cases[k], counts[k], &st),
                     TF_INVALID_ARGUMENT);
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    ck_assert_str_eq(st.msg, direct.msg);
    ck_assert_int_eq(tf_graph_num_nodes(g), 0);
    tf_graph_free(g);
    tf_graph_free(h);
  }
  /* Success adds the nodes. */
  tf_graph *g = tf_graph_new();
  tf_node_def ok[] = {{.name = "p", .op = "Placeholder", .n_attrs = 1, .attrs = ph},
                      {.name = "n", .op = "NoOp"}};
  tf_status st;
  ck_assert_int_eq(tf__graph_import_decoded(g, ok, 2, &st), TF_OK);
  ck_assert_int_eq(tf_graph_num_nodes(g), 2);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_attrs_check_unique) {
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf__attrs_check_unique(NULL, 0, "node 'x'", &st), TF_OK);
  tf_attr_kv one[] = {{"a", tf_attr_int(1)}};
  ck_assert_int_eq(tf__attrs_check_unique(one, 1, "node 'x'", &st), TF_OK);
  tf_attr_kv kv[] = {{"b", tf_attr_int(1)}, {"a", tf_attr_int(2)},
                     {"c", tf_attr_int(3)}, {"ab", tf_attr_int(4)},
                     {"a", tf_attr_int(5)}};
  ck_assert_int_eq(tf__attrs_check_unique(kv, 4, "node 'x'", &st), TF_OK);
  /* The duplicate is found however far apart the two are. */
  ck_assert_int_eq(tf__attrs_check_unique(kv, 5, "node 'x'", &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "node 'x': attr 'a' appears twice");
  /* Long names are cut at 100 characters. */
  char longname[300];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  tf_attr_kv two[] = {{longname, tf_attr_int(1)}, {longname, tf_attr_int(2)}};
  ck_assert_int_eq(tf__attrs_check_unique(two, 2, "w", &st), TF_INVALID_ARGUMENT);
  char want[160];
  snprintf(want, sizeof want, "w: attr '%.100s' appears twice", longname);
  ck_assert_str_eq(st.msg, want);
}
END_TEST

/* ---- UTF-8 --------------------------------------------------------------- */

/* Reference: the well-formed byte sequences of Unicode's table 3-7. */
static size_t ref_utf8_len(const unsigned char *s, size_t n) {
  static const struct { unsigned char lo0, hi0, lo1, hi1; int len; } rows[] = {
      {0x00, 0x7f, 0, 0, 1},       {0xc2, 0xdf, 0x80, 0xbf, 2},
      {0xe0, 0xe0, 0xa0, 0xbf, 3}, {0xe1, 0xec, 0x80, 0xbf, 3},
      {0xed, 0xed, 0x80, 0x9f, 3}, {0xee, 0xef, 0x80, 0xbf, 3},
      {0xf0, 0xf0, 0x90, 0xbf, 4}, {0xf1, 0xf3, 0x80, 0xbf, 4},
      {0xf4, 0xf4, 0x80, 0x8f, 4}};
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    if (s[0] < rows[r].lo0 || s[0] > rows[r].hi0) {
      continue;
    }
    size_t len = (size_t)rows[r].len;
    if (n < len || (len > 1 && (s[1] < rows[r].lo1 || s[1] > rows[r].hi1))) {
      return 0;
    }
    for (size_t k = 2; k < len; k++) {
      if (s[k] < 0x80 || s[k] > 0xbf) {
        return 0;
      }
    }
    return len;
  }
  return 0;
}

static bool ref_utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t k = ref_utf8_len(s + i, n - i);
    if (k == 0) {
      return false;
    }
    i += k;
  }
  return true;
}

START_TEST(test_utf8_hand_cases) {
  static const struct { const char *s; size_t n; bool ok; } cases[] = {
      {"", 0, true},
      {"plain ascii", 11, true},
      {"a\0b", 3, true},                  /* NUL is ASCII */
      {"\xc3\xa9", 2, true},              /* é */
      {"\xe2\x82\xac", 3, true},          /* € */
      {"\xf0\x9f\x98\x80", 4, true},      /* U+1F600 */
      {"\xf4\x8f\xbf\xbf", 4, true},      /* U+10FFFF */
      {"\xc0\x80", 2, false},             /* overlong NUL */
      {"\xc1\xbf", 2, false},             /* overlong */
      {"\xe0\x80\x80", 3, false},         /* overlong */
      {"\xf0\x80\x80\x80", 4, false},     /* overlong */
      {"\xed\xa0\x80", 3, false},         /* surrogate U+D800 */
      {"\xed\xbf\xbf", 3, false},         /* surrogate U+DFFF */
      {"\xf4\x90\x80\x80", 4, false},     /* U+110000 */
      {"\x80", 1, false},                 /* stray continuation */
      {"\xc3", 1, false},                 /* truncated */
      {"\xe2\x82", 2, false},             /* truncated */
      {"ab\xf0\x9f\x98", 5, false},       /* truncated at the end */
      {"\xc3\x28", 2, false},             /* bad continuation */
      {"\xf8\x88\x80\x80\x80", 5, false}, /* 5-byte form */
      {"\xfe", 1, false},
      {"\xff", 1, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_msg(tf__utf8_valid(cases[i].s, cases[i].n) == cases[i].ok,
                  "case %zu", i);
    ck_assert_msg(ref_utf8_valid((const unsigned char *)cases[i].s,
                                 cases[i].n) == cases[i].ok,
                  "reference disagrees on case %zu", i);
  }
  /* Only n bytes are read: a valid prefix of an invalid buffer. */
  ck_assert(tf__utf8_valid("ok\xff", 2));
}
END_TEST

/* Every 1- and 2-byte string and every 3-byte string starting with a lead
 * byte, against the reference; then random mixes of valid sequences with
 * one corrupted byte. */
START_TEST(test_utf8_exhaustive_vs_reference) {
  unsigned char b[4];
  for (int x = 0; x < 256; x++) {
    b[0] = (unsigned char)x;
    ck_assert_int_eq(tf__utf8_valid((char *)b, 1), ref_utf8_valid(b, 1));
    for (int y = 0; y < 256; y++) {
      b[1] = (unsigned char)y;
      if (tf__utf8_valid((char *)b, 2) != ref_utf8_valid(b, 2)) {
        ck_abort_msg("%02x %02x", x, y);
      }
    }
  }
  for (int x = 0xe0; x < 0x100; x++) {
    for (int y = 0; y < 256; y++) {
      for (int z = 0; z < 256; z++) {
        b[0] = (unsigned char)x, b[1] = (unsigned char)y, b[2] = (unsigned char)z;
        if (tf__utf8_valid((char *)b, 3) != ref_utf8_valid(b, 3)) {
          ck_abort_msg("%02x %02x %02x", x, y, z);
        }
      }
    }
  }
  unsigned char s[64];
  for (int it = 0; it < 20000; it++) {
    size_t n = 0;
    while (n < 56) { /* random code points, encoded by hand */
      uint32_t cp = (uint32_t)(tt_rand_u64() % 0x110000);
      if (cp >= 0xd800 && cp <= 0xdfff) {
        continue;
      }
      if (cp < 0x80) {
        s[n++] = (unsigned char)cp;
      } else if (cp < 0x800) {
        s[n++] = (unsigned char)(0xc0 | cp >> 6);
        s[n++] = (unsigned char)(0x80 | (cp & 63));
      } else if (cp < 0x10000) {
        s[n++] = (unsigned char)(0xe0 | cp >> 12);
        s[n++] = (unsigned char)(0x80 | ((cp >> 6) & 63));
        s[n++] = (unsigned char)(0x80 | (cp & 63));
      } else {
        s[n++] = (unsigned char)(0xf0 | cp >> 18);
        s[n++] = (unsigned char)(0x80 | ((cp >> 12) & 63));
        s[n++] = (unsigned char)(0x80 | ((cp >> 6) & 63));
        s[n++] = (unsigned char)(0x80 | (cp & 63));
      }
    }
    if (!tf__utf8_valid((char *)s, n)) {
      ck_abort_msg("valid text rejected (iteration %d)", it);
    }
    s[tt_rand_u64() % n] = (unsigned char)tt_rand_u64();
    size_t cut = (size_t)(tt_rand_u64() % (n + 1));
    if (tf__utf8_valid((char *)s, cut) != ref_utf8_valid(s, cut)) {
      ck_abort_msg("corrupted text: kernel and reference differ (iteration %d)",
                   it);
    }
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("serialize_util");
  TCase *tf = tcase_create("files");
  tcase_add_test(tf, test_file_round_trip_sizes);
  tcase_add_test(tf, test_read_fifo_of_unknown_size);
  tcase_add_test(tf, test_read_errors_name_the_path);
  tcase_add_test(tf, test_write_errors_name_the_path);
  suite_add_tcase(s, tf);
  TCase *ta = tcase_create("arena");
  tcase_add_test(ta, test_arena_alloc_zeroed_aligned_disjoint);
  tcase_add_test(ta, test_arena_big_block_keeps_current);
  tcase_add_test(ta, test_arena_strndup);
  tcase_add_test(ta, test_arena_owns_tensors);
  tcase_add_test_raise_signal(ta, test_arena_overflow_panics, SIGABRT);
  tcase_add_test_raise_signal(ta, test_arena_huge_panics, SIGABRT);
  suite_add_tcase(s, ta);
  TCase *tm = tcase_create("misc");
  tcase_add_test(tm, test_attr_type_parse);
  tcase_add_test(tm, test_import_decoded_rewrites_codes);
  tcase_add_test(tm, test_attrs_check_unique);
  tcase_add_test(tm, test_utf8_hand_cases);
  tcase_add_test(tm, test_utf8_exhaustive_vs_reference);
  suite_add_tcase(s, tm);
  return s;
}
