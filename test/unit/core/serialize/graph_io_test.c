/* Tests for graph files: the extension picks the form (.yaml/.yml in any
 * case is YAML, anything else msgpack), both load back identical graphs,
 * and every failure (missing file, directory, unwritable path, corrupt or
 * mismatched contents) carries the path in its message with the right
 * code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test/unit/core/serialize/serialize_testlib.h"

static char dir[64];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/graph_io_XXXXXX");
  ck_assert(mkdtemp(dir) != NULL);
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}

static const char *in_dir(const char *name) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static unsigned char first_byte(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert(f != NULL);
  int c = fgetc(f);
  fclose(f);
  return (unsigned char)c;
}

START_TEST(test_save_load_by_extension) {
  static const struct { const char *name; bool yaml; } files[] = {
      {"g.tfg", false}, {"g.yaml", true}, {"g.yml", true}, {"G.YAML", true},
      {"g", false},     {"g.yaml.tfg", false}, {"dir.yaml", true},
  };
  tf_graph *g = st_rich_graph();
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    const char *path = in_dir(files[i].name);
    tf_status st;
    ck_assert_msg(tf_graph_save(g, path, &st) == TF_OK, "%s", st.msg);
    /* msgpack starts with a fixmap of 2; our YAML with its comment */
    ck_assert_int_eq(first_byte(path), files[i].yaml ? '#' : 0x82);
    tf_graph *back = tf_graph_new();
    ck_assert_msg(tf_graph_load(back, path, &st) == TF_OK, "%s", st.msg);
    st_assert_graphs_equal(g, back);
    tf_graph_free(back);
  }
  tf_graph_free(g);
}
END_TEST

START_TEST(test_errors_name_the_path) {
  tf_graph *g = st_rich_graph();
  tf_graph *h = tf_graph_new();
  tf_status st;
  const char *missing = in_dir("missing.tfg");
  ck_assert_int_eq(tf_graph_load(h, missing, &st), TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, missing));
  ck_assert_int_eq(tf_graph_load(h, dir, &st), TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(st.msg, dir));
  const char *nodir = in_dir("no/such/dir/g.yaml");
  ck_assert_int_eq(tf_graph_save(g, nodir, &st), TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, nodir));
  ck_assert_int_ne(tf_graph_save(g, dir, &st), TF_OK);
  ck_assert_ptr_nonnull(strstr(st.msg, dir));
  /* YAML text in a .tfg file, msgpack in a .yaml file, garbage */
  char path[256];
  snprintf(path, sizeof path, "%s", in_dir("g.yaml"));
  ck_assert(tf_graph_save(g, path, &st) == TF_OK);
  const char *renamed = in_dir("g_yaml.tfg");
  ck_assert_int_eq(rename(path, renamed), 0);
  ck_assert_int_eq(tf_graph_load(h, renamed, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, renamed));
  ck_assert(tf_graph_save(g, in_dir("g.tfg"), &st) == TF_OK);
  snprintf(path, sizeof path, "%s", in_dir("g_tfg.yaml"));
  ck_assert_int_eq(rename(in_dir("g.tfg"), path), 0);
  ck_assert_int_eq(tf_graph_load(h, path, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, path));
  FILE *f = fopen(in_dir("short.tfg"), "wb");
  fputs("\x82\xa7version", f);
  fclose(f);
  ck_assert_int_eq(tf_graph_load(h, in_dir("short.tfg"), &st), TF_DATA_LOSS);
  ck_assert_ptr_nonnull(strstr(st.msg, "short.tfg"));
  ck_assert_int_eq(tf_graph_num_nodes(h), 0);
  /* An empty file is not a graph in either form. */
  f = fopen(in_dir("empty.yaml"), "wb");
  fclose(f);
  ck_assert_int_eq(tf_graph_load(h, in_dir("empty.yaml"), &st),
                   TF_INVALID_ARGUMENT);
  f = fopen(in_dir("empty.tfg"), "wb");
  fclose(f);
  ck_assert_int_eq(tf_graph_load(h, in_dir("empty.tfg"), &st), TF_DATA_LOSS);
  tf_graph_free(g);
  tf_graph_free(h);
}
END_TEST

START_TEST(test_unreadable_file) {
  if (geteuid() == 0) {
    fprintf(stderr, "running as root: permission test skipped\n");
    return;
  }
  tf_graph *g = st_rich_graph();
  tf_status st;
  const char *path = in_dir("locked.tfg");
  ck_assert(tf_graph_save(g, path, &st) == TF_OK);
  ck_assert_int_eq(chmod(path, 0), 0);
  tf_graph *h = tf_graph_new();
  ck_assert_int_eq(tf_graph_load(h, path, &st), TF_PERMISSION_DENIED);
  ck_assert_ptr_nonnull(strstr(st.msg, path));
  tf_graph_free(h);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("graph_io");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_save_load_by_extension);
  tcase_add_test(tc, test_errors_name_the_path);
  tcase_add_test(tc, test_unreadable_file);
  suite_add_tcase(s, tc);
  return s;
}
