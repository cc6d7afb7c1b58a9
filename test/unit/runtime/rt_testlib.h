/* rt_testlib.h: an in-process cluster for runtime tests: a master, one ps
 * and n workers on loopback TCP ports chosen free, plus graph helpers that
 * set requested devices. */
#ifndef TF_TEST_RT_TESTLIB_H
#define TF_TEST_RT_TESTLIB_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/runtime/log.h"
#include "lib/runtime/master.h"
#include "lib/runtime/worker.h"
#include "test/unit/testutil.h"
#include "tf/tf.h"

/* A loopback TCP port nobody listens on, distinct within this process. */
static inline int rt_free_port(void) { return tt_free_port(); }

typedef struct rt_cluster {
  tf_cluster_spec *spec;
  tf_master *master;
  tf_worker *ps;
  tf_worker *workers[4];
  int n_workers;       /* in the spec */
  char master_url[64];
} rt_cluster;

/* Spec with n_workers workers (+ extra absent ones listed but not
 * started), registration timeout reg_ms; starts master, ps, workers. */
static inline void rt_start(rt_cluster *c, int n_workers, int absent,
                            int64_t reg_ms) {
  memset(c, 0, sizeof *c);
  char yaml[2048];
  int mp = rt_free_port();
  int n = snprintf(yaml, sizeof yaml,
                   "cluster: test\njobs:\n  master: [127.0.0.1:%d]\n"
                   "  ps: [127.0.0.1:%d]\n  worker: [",
                   mp, rt_free_port());
  for (int i = 0; i < n_workers + absent; i++) {
    n += snprintf(yaml + n, sizeof yaml - (size_t)n, "%s127.0.0.1:%d",
                  i ? ", " : "", rt_free_port());
  }
  snprintf(yaml + n, sizeof yaml - (size_t)n,
           "]\ntimeouts: {registration_ms: %lld, heartbeat_ms: 100, "
           "down_after_ms: 600, rpc_ms: 2000, step_ttl_ms: 5000}\n"
           "threads: {inter_op: 2, rpc: 8}\nlog_level: err\n",
           (long long)reg_ms);
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_cluster_spec_parse(yaml, strlen(yaml), "test.yaml", &c->spec,
                                      &st) == TF_OK, "%s", st.msg);
  tf_log_set_level(c->spec->log_level);
  snprintf(c->master_url, sizeof c->master_url, "tcp://127.0.0.1:%d", mp);
  c->n_workers = n_workers;
  ck_assert_msg(tf_worker_start(c->spec, "ps", 0, &c->ps, &st) == TF_OK, "%s", st.msg);
  for (int i = 0; i < n_workers; i++) {
    ck_assert_msg(tf_worker_start(c->spec, "worker", i, &c->workers[i], &st) == TF_OK,
                  "%s", st.msg);
  }
  ck_assert_msg(tf_master_start(c->spec, &c->master, &st) == TF_OK, "%s", st.msg);
}

static inline void rt_stop(rt_cluster *c) {
  tf_master_free(c->master);
  for (int i = 0; i < c->n_workers; i++) tf_worker_free(c->workers[i]);
  tf_worker_free(c->ps);
  tf_cluster_spec_free(c->spec);
}

/* A node of op on inputs with attrs, requesting device dev (NULL: none). */
static inline tf_node *rt_node(tf_graph *g, const char *op, const char *name,
                               const char *dev, const tf_output *in, int n_in,
                               const tf_attr_kv *attrs, int n_attrs) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  for (int i = 0; i < n_attrs; i++) tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  if (dev != NULL) tf_node_set_device(b, dev);
  tf_status st;
  tf_status_init(&st);
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s: %s", name, st.msg);
  return n;
}

static inline tf_node *rt_const(tf_graph *g, const char *name, const char *dev,
                                tf_tensor *t) {
  tf_attr_kv kv[] = {{"dtype", tf_attr_type_v(t->dtype)}, {"value", tf_attr_tensor(t)}};
  tf_node *n = rt_node(g, "Const", name, dev, NULL, 0, kv, 2);
  tf_tensor_unref(t); /* the attr holds its own reference */
  return n;
}

static inline tf_output rt_out(tf_node *n) { return (tf_output){n, 0}; }

#endif
