/* word2vec_test.c: examples/word2vec against real daemons (1 master, 2 ps,
 * 1 worker): the skip-gram model with its embedding sharded over both ps
 * tasks and sampled softmax trains (the loss falls, every word's nearest
 * neighbour is of its own topic) and ends with exit 0. Its first steps run
 * an init signature before the train signature: the Adagrad slot of a
 * variable on ps 1 must be where the train step's sparse update runs,
 * which holds only because the master places the session's whole graph
 * once for nodes with state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/integration/harness.h"
#include "test/unit/testutil.h"

START_TEST(test_word2vec_on_two_ps) {
  th_opts o = th_default_opts();
  o.n_ps = 2;
  o.n_workers = 1;
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster start");
  char prog[4096];
  snprintf(prog, sizeof prog, "%s/../examples/word2vec/word2vec", TF_BIN_DIR);
  char *argv[] = {prog, "--target", th_task_get(c, "master", 0)->url, "--ps", "2",
                  "--shards", "2", "--steps", "1500", "--log", "500", NULL};
  char *out = NULL, *err = NULL;
  int rc = th_run(c, argv, 120000, &out, &err);
  fprintf(stderr, "%s%s", out ? out : "", err ? err : "");
  TH_REQUIRE(c, rc == 0, "word2vec exit %d: %s", rc, err ? err : "");
  double first = -1, last = -1, acc = -1;
  for (const char *p = out; (p = strstr(p, "sampled softmax loss ")) != NULL; p++) {
    double v = strtod(p + strlen("sampled softmax loss "), NULL);
    if (first < 0) first = v;
    last = v;
  }
  const char *a = strstr(out, "topic_neighbour_accuracy: ");
  if (a != NULL) acc = strtod(a + strlen("topic_neighbour_accuracy: "), NULL);
  TH_REQUIRE(c, first > 0 && last > 0 && last < 0.8 * first,
             "the loss went from %.4f to %.4f", first, last);
  TH_REQUIRE(c, acc >= 0.9, "topic_neighbour_accuracy %.4f (chance 0.1)", acc);
  free(out);
  free(err);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("word2vec");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, test_word2vec_on_two_ps);
  suite_add_tcase(s, tc);
  return s;
}
