/* starvation_test.c: 64 concurrent steps that cross two workers, against
 * daemons with 4 RPC threads each, all complete with the right values in
 * no more wall time than the same 64 steps run one after another (median
 * of 3 rounds of each), and the cluster stays healthy throughout (a
 * monitor asks the master for every task's health every 50 ms; no task is
 * ever down). Before the services were asynchronous, 18 such steps jammed
 * a worker for good: each RunGraph held one of its RPC threads while the
 * TensorPush it waited for needed another. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "test/integration/harness.h"
#include "test/integration/igraph.h"
#include "test/unit/testutil.h"

enum { STEPS = 64, ROUNDS = 3, STEP_MS = 20000 };

typedef struct shared {
  tf_session *s;
  pthread_barrier_t go;
  atomic_int failed;
  char first_error[512];
  pthread_mutex_t mu;
} shared;

static void note_error(shared *sh, const tf_status *st) {
  pthread_mutex_lock(&sh->mu);
  if (atomic_fetch_add(&sh->failed, 1) == 0) {
    snprintf(sh->first_error, sizeof sh->first_error, "%s: %.400s", tf_code_name(st->code),
             st->msg);
  }
  pthread_mutex_unlock(&sh->mu);
}

static void *one_step(void *arg) {
  shared *sh = arg;
  tf_status st;
  pthread_barrier_wait(&sh->go);
  if (ig_run_cross(sh->s, STEP_MS, &st) != TF_OK) {
    note_error(sh, &st);
  }
  return NULL;
}

/* Wall ms of STEPS concurrent steps (threads released together). */
static int64_t concurrent_ms(shared *sh) {
  pthread_t th[STEPS];
  pthread_barrier_init(&sh->go, NULL, STEPS + 1);
  for (int i = 0; i < STEPS; i++) {
    ck_assert_int_eq(pthread_create(&th[i], NULL, one_step, sh), 0);
  }
  pthread_barrier_wait(&sh->go);
  int64_t t0 = tf_ctl_now_ms();
  for (int i = 0; i < STEPS; i++) {
    pthread_join(th[i], NULL);
  }
  int64_t ms = tf_ctl_now_ms() - t0;
  pthread_barrier_destroy(&sh->go);
  return ms;
}

static int64_t sequential_ms(shared *sh) {
  int64_t t0 = tf_ctl_now_ms();
  tf_status st;
  for (int i = 0; i < STEPS; i++) {
    if (ig_run_cross(sh->s, STEP_MS, &st) != TF_OK) {
      note_error(sh, &st);
    }
  }
  return tf_ctl_now_ms() - t0;
}

typedef struct monitor {
  const char *master_url;
  atomic_bool stop;
  atomic_int polls, down;
  char why[512];
} monitor;

static void *watch(void *arg) {
  monitor *mo = arg;
  while (!atomic_load(&mo->stop)) {
    tf_ctl_task *ts = NULL;
    int n = 0;
    tf_status st;
    if (tf_ctl_cluster_status(mo->master_url, 2000, &ts, &n, &st) != TF_OK) {
      if (atomic_fetch_add(&mo->down, 1) == 0) {
        snprintf(mo->why, sizeof mo->why, "ClusterStatus: %.400s", st.msg);
      }
    } else {
      for (int i = 0; i < n; i++) {
        if (!ts[i].up && atomic_fetch_add(&mo->down, 1) == 0) {
          snprintf(mo->why, sizeof mo->why, "/job:%s/task:%d down: %s", ts[i].job,
                   ts[i].task, ts[i].error);
        }
      }
      tf_ctl_tasks_free(ts, n);
    }
    atomic_fetch_add(&mo->polls, 1);
    tf_ctl_sleep_ms(50);
  }
  return NULL;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

START_TEST(test_64_concurrent_cross_task_steps) {
  th_opts o = th_default_opts();
  o.n_ps = 0;
  o.rpc_threads = 4;
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster start");
  th_task *master = th_task_get(c, "master", 0);
  tf_graph *g = ig_cross_graph();
  tf_status st;
  shared sh = {.failed = 0};
  pthread_mutex_init(&sh.mu, NULL);
  sh.s = ig_remote(master->url, g, &st);
  TH_REQUIRE(c, sh.s != NULL, "session: %s", st.msg);
  TH_REQUIRE(c, ig_run_cross(sh.s, STEP_MS, &st) == TF_OK, "warm-up step: %s", st.msg);
  monitor mo = {.master_url = master->url};
  pthread_t mt;
  pthread_create(&mt, NULL, watch, &mo);
  int64_t conc[ROUNDS], seq[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    conc[r] = concurrent_ms(&sh);
    seq[r] = sequential_ms(&sh);
  }
  atomic_store(&mo.stop, true);
  pthread_join(mt, NULL);
  TH_REQUIRE(c, atomic_load(&sh.failed) == 0, "%d of %d steps failed; first: %s",
             atomic_load(&sh.failed), 2 * ROUNDS * STEPS, sh.first_error);
  qsort(conc, ROUNDS, sizeof conc[0], cmp64);
  qsort(seq, ROUNDS, sizeof seq[0], cmp64);
  fprintf(stderr, "starvation: %d steps: concurrent %lld ms, one after another %lld ms "
          "(medians of %d); %d health polls\n", STEPS, (long long)conc[ROUNDS / 2],
          (long long)seq[ROUNDS / 2], ROUNDS, atomic_load(&mo.polls));
  TH_REQUIRE(c, conc[ROUNDS / 2] <= seq[ROUNDS / 2],
             "64 concurrent steps took %lld ms, more than one after another (%lld ms)",
             (long long)conc[ROUNDS / 2], (long long)seq[ROUNDS / 2]);
  TH_REQUIRE(c, atomic_load(&mo.down) == 0 && atomic_load(&mo.polls) > 0,
             "the cluster was unhealthy %d times in %d polls: %s", atomic_load(&mo.down),
             atomic_load(&mo.polls), mo.why);
  TH_REQUIRE(c, tf_session_close(sh.s, &st) == TF_OK, "close: %s", st.msg);
  tf_session_free(sh.s);
  tf_graph_free(g);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("starvation");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_64_concurrent_cross_task_steps);
  suite_add_tcase(s, tc);
  return s;
}
