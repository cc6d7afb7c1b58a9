/* msg_worker.c: the bodies of the worker service's graph and step methods
 * (messages.h, docs/wire.md "Methods"): RegisterGraph, RunGraph,
 * TensorPush, AbortStep, DeregisterGraph and WorkerReset. Decoders check
 * every field and refuse lists over the caps; encoders pack exactly the
 * documented maps. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/serialize/msgpack_map.h"
#include "lib/core/serialize/tensor_msgpack.h"
#include "lib/transport/msg_util.h"

#define CAP_TENSORS TF_MSG_MAX_TENSORS, "TF_MSG_MAX_TENSORS"
#define CAP_NAMES TF_MSG_MAX_NAMES, "TF_MSG_MAX_NAMES"
#define CAP_TIMINGS TF_MSG_MAX_TIMINGS, "TF_MSG_MAX_TIMINGS"

/* ---- RegisterGraph ------------------------------------------------------- */

static const char RG[] = "RegisterGraph", RG_REPLY[] = "RegisterGraph reply";

void tf_msg_register_graph_req_encode(tf_wire_writer *w,
                                      const tf_msg_register_graph_req *m) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 1);
  tf__mp_map_key(&b, "graph");
  tf__msg_pack_bin(w, RG, "graph", m->graph, m->graph_len);
  tf__mp_map_end(&b);
}

tf_code tf_msg_register_graph_req_decode(const tf_wire_msg *r,
                                         tf_msg_register_graph_req *out,
                                         tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"graph", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_REGISTER_GRAPH, false, RG, f, 1, st));
  tf_code c = tf__msg_get_bin(f[0].val, RG, "graph", &out->graph, &out->graph_len, st);
  if (c != TF_OK) {
    memset(out, 0, sizeof *out);
  }
  return c;
}

void tf_msg_register_graph_req_fini(tf_msg_register_graph_req *m) {
  memset(m, 0, sizeof *m);
}

/* A body that is only {handle: u64} (RegisterGraph's reply,
 * DeregisterGraph's request). */
static void handle_encode(tf_wire_writer *w, uint64_t handle) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 1);
  tf__mp_map_key(&b, "handle");
  msgpack_pack_uint64(pk, handle);
  tf__mp_map_end(&b);
}

static tf_code handle_decode(const tf_wire_msg *r, int method, bool reply,
                             const char *what, uint64_t *handle, tf_status *st) {
  tf__msg_field f[] = {{"handle", NULL}};
  TF_TRY(tf__msg_body(r, method, reply, what, f, 1, st));
  return tf__msg_get_u64(f[0].val, what, "handle", -1, handle, st);
}

void tf_msg_register_graph_reply_encode(tf_wire_writer *w,
                                        const tf_msg_register_graph_reply *m) {
  handle_encode(w, m->handle);
}

tf_code tf_msg_register_graph_reply_decode(const tf_wire_msg *r,
                                           tf_msg_register_graph_reply *out,
                                           tf_status *st) {
  memset(out, 0, sizeof *out);
  return handle_decode(r, TF_M_REGISTER_GRAPH, true, RG_REPLY, &out->handle, st);
}

void tf_msg_register_graph_reply_fini(tf_msg_register_graph_reply *m) {
  memset(m, 0, sizeof *m);
}

/* ---- RunGraph ------------------------------------------------------------ */

static const char RUN[] = "RunGraph", RUN_REPLY[] = "RunGraph reply";

/* Drops every tensor of v[0..n) and the array's slots. */
static void unref_all(tf_tensor **v, int n) {
  for (int i = 0; v != NULL && i < n; i++) {
    tf_tensor_unref(v[i]);
    v[i] = NULL;
  }
}

void tf_msg_run_graph_req_encode(tf_wire_writer *w, const tf_msg_run_graph_req *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 4);
  tf__mp_map_key(&b, "handle");
  msgpack_pack_uint64(pk, m->handle);
  tf__mp_map_key(&b, "args");
  if (tf__msg_pack_list(w, RUN, "args", (size_t)m->n_args, CAP_TENSORS)) {
    for (int i = 0; i < m->n_args; i++) {
      tf__msg_pack_tensor(w, m->args[i]);
    }
  }
  tf__mp_map_key(&b, "n_rets");
  int n_rets = m->n_rets;
  if (n_rets < 0 || n_rets > TF_MSG_MAX_TENSORS) {
    tf_status st;
    tf_status_set(&st, TF_INVALID_ARGUMENT, "%s: 'n_rets' %d is not in [0, %d] "
                  "(TF_MSG_MAX_TENSORS)", RUN, n_rets, TF_MSG_MAX_TENSORS);
    tf_wire_writer_fail(w, &st);
    n_rets = 0;
  }
  msgpack_pack_int(pk, n_rets);
  tf__mp_map_key(&b, "trace");
  tf__msg_pack_bool(pk, m->trace);
  tf__mp_map_end(&b);
}

static tf_code decode_run(const tf_wire_msg *r, tf_msg_run_graph_req *out,
                          tf_status *st) {
  tf__msg_field f[] = {{"handle", NULL}, {"args", NULL}, {"n_rets", NULL},
                       {"trace", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_RUN_GRAPH, false, RUN, f, 4, st));
  int64_t n_rets = 0;
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_get_u64(f[0].val, RUN, "handle", -1, &out->handle, st));
  TF_TRY(tf__msg_get_int(f[2].val, RUN, "n_rets", -1, 0, TF_MSG_MAX_TENSORS, &n_rets, st));
  TF_TRY(tf__msg_get_bool(f[3].val, RUN, "trace", -1, &out->trace, st));
  TF_TRY(tf__msg_get_list(f[1].val, RUN, "args", CAP_TENSORS, &a, st));
  out->n_rets = (int)n_rets;
  out->args = tf__msg_alloc(&out->mem, (size_t)a->size * sizeof *out->args);
  out->n_args = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    TF_TRY(tf__msg_get_tensor(r, &a->ptr[i], RUN, "args", i, false, &out->args[i], st));
  }
  return TF_OK;
}

tf_code tf_msg_run_graph_req_decode(const tf_wire_msg *r, tf_msg_run_graph_req *out,
                                    tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_run(r, out, st);
  if (c != TF_OK) {
    tf_msg_run_graph_req_fini(out);
  }
  return c;
}

void tf_msg_run_graph_req_fini(tf_msg_run_graph_req *m) {
  unref_all(m->args, m->n_args);
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* Packs the timings; entries beyond the cap are dropped (they only feed
 * the master's cost model). */
static void pack_timings(tf_wire_writer *w, const tf_msg_run_graph_reply *m) {
  msgpack_packer *pk = tf_wire_body(w);
  int n = m->n_timings < TF_MSG_MAX_TIMINGS ? m->n_timings : TF_MSG_MAX_TIMINGS;
  msgpack_pack_array(pk, (size_t)(n > 0 ? n : 0));
  for (int i = 0; i < n; i++) {
    msgpack_pack_array(pk, 3);
    tf__msg_pack_str(w, RUN_REPLY, "timings", m->timings[i].node);
    msgpack_pack_int64(pk, m->timings[i].start_ns);
    msgpack_pack_int64(pk, m->timings[i].end_ns);
  }
}

void tf_msg_run_graph_reply_encode(tf_wire_writer *w, const tf_msg_run_graph_reply *m) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 2);
  tf__mp_map_key(&b, "rets");
  if (tf__msg_pack_list(w, RUN_REPLY, "rets", (size_t)m->n_rets, CAP_TENSORS)) {
    for (int i = 0; i < m->n_rets; i++) {
      tf__msg_pack_tensor(w, m->rets[i]); /* nil: dead */
    }
  }
  tf__mp_map_key(&b, "timings");
  pack_timings(w, m);
  tf__mp_map_end(&b);
}

static tf_code decode_timing(tf_msg_mem *mem, const msgpack_object *o, uint32_t i,
                             tf_msg_timing *t, tf_status *st) {
  if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: timings[%u] is not [node, "
                         "start_ns, end_ns]", RUN_REPLY, i);
  }
  const msgpack_object *e = o->via.array.ptr;
  TF_TRY(tf__msg_get_str(mem, &e[0], RUN_REPLY, "timings", i, &t->node, st));
  TF_TRY(tf__msg_get_int(&e[1], RUN_REPLY, "timings", i, 0, INT64_MAX, &t->start_ns, st));
  TF_TRY(tf__msg_get_int(&e[2], RUN_REPLY, "timings", i, 0, INT64_MAX, &t->end_ns, st));
  if (t->end_ns < t->start_ns) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: timings[%u] ends before it "
                         "starts", RUN_REPLY, i);
  }
  return TF_OK;
}

static tf_code decode_run_reply(const tf_wire_msg *r, tf_msg_run_graph_reply *out,
                                tf_status *st) {
  tf__msg_field f[] = {{"rets", NULL}, {"timings", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_RUN_GRAPH, true, RUN_REPLY, f, 2, st));
  const msgpack_object_array *rets = NULL, *tm = NULL;
  TF_TRY(tf__msg_get_list(f[0].val, RUN_REPLY, "rets", CAP_TENSORS, &rets, st));
  TF_TRY(tf__msg_get_list(f[1].val, RUN_REPLY, "timings", CAP_TIMINGS, &tm, st));
  out->timings = tf__msg_alloc(&out->mem, (size_t)tm->size * sizeof *out->timings);
  for (uint32_t i = 0; i < tm->size; i++) {
    TF_TRY(decode_timing(&out->mem, &tm->ptr[i], i, &out->timings[i], st));
  }
  out->n_timings = (int)tm->size;
  out->rets = tf__msg_alloc(&out->mem, (size_t)rets->size * sizeof *out->rets);
  out->n_rets = (int)rets->size;
  for (uint32_t i = 0; i < rets->size; i++) {
    TF_TRY(tf__msg_get_tensor(r, &rets->ptr[i], RUN_REPLY, "rets", i, true,
                              &out->rets[i], st));
  }
  return TF_OK;
}

tf_code tf_msg_run_graph_reply_decode(const tf_wire_msg *r, tf_msg_run_graph_reply *out,
                                      tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_run_reply(r, out, st);
  if (c != TF_OK) {
    tf_msg_run_graph_reply_fini(out);
  }
  return c;
}

void tf_msg_run_graph_reply_fini(tf_msg_run_graph_reply *m) {
  unref_all(m->rets, m->n_rets);
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- TensorPush ---------------------------------------------------------- */

static const char PUSH[] = "TensorPush";

void tf_msg_tensor_push_req_encode(tf_wire_writer *w, const tf_msg_tensor_push_req *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 3);
  tf__mp_map_key(&b, "key");
  tf__msg_pack_str(w, PUSH, "key", m->key);
  tf__mp_map_key(&b, "dead");
  tf__msg_pack_bool(pk, m->dead);
  tf__mp_map_key(&b, "tensor");
  tf__msg_pack_tensor(w, m->dead ? NULL : m->tensor);
  tf__mp_map_end(&b);
}

static tf_code decode_push(const tf_wire_msg *r, tf_msg_tensor_push_req *out,
                           tf_status *st) {
  tf__msg_field f[] = {{"key", NULL}, {"dead", NULL}, {"tensor", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_TENSOR_PUSH, false, PUSH, f, 3, st));
  TF_TRY(tf__msg_get_str(&out->mem, f[0].val, PUSH, "key", -1, &out->key, st));
  TF_TRY(tf__msg_get_bool(f[1].val, PUSH, "dead", -1, &out->dead, st));
  char what[512];
  snprintf(what, sizeof what, "%s '%s'", PUSH, out->key);
  const msgpack_object *t = f[2].val;
  if (out->dead) {
    if (t != NULL && t->type != MSGPACK_OBJECT_NIL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: a dead value with a "
                           "'tensor' (a %s; want nil)", what,
                           tf__msgpack_type_name(t));
    }
    return TF_OK;
  }
  return tf__msg_get_tensor(r, t, what, "tensor", -1, false, &out->tensor, st);
}

tf_code tf_msg_tensor_push_req_decode(const tf_wire_msg *r, tf_msg_tensor_push_req *out,
                                      tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_push(r, out, st);
  if (c != TF_OK) {
    tf_msg_tensor_push_req_fini(out);
  }
  return c;
}

void tf_msg_tensor_push_req_fini(tf_msg_tensor_push_req *m) {
  tf_tensor_unref(m->tensor);
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- AbortStep ----------------------------------------------------------- */

static const char ABORT[] = "AbortStep";

void tf_msg_abort_step_req_encode(tf_wire_writer *w, const tf_msg_abort_step_req *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 2);
  tf__mp_map_key(&b, "code");
  msgpack_pack_int(pk, (int)m->code);
  tf__mp_map_key(&b, "msg");
  tf__msg_pack_str(w, ABORT, "msg", m->msg);
  tf__mp_map_end(&b);
}

tf_code tf_msg_abort_step_req_decode(const tf_wire_msg *r, tf_msg_abort_step_req *out,
                                     tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"code", NULL}, {"msg", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_ABORT_STEP, false, ABORT, f, 2, st));
  int64_t code = 0;
  tf_code c = tf__msg_get_int(f[0].val, ABORT, "code", -1, 1, TF_CODE_COUNT - 1,
                              &code, st);
  if (c == TF_OK) {
    out->code = (tf_code)code;
    c = tf__msg_get_str(&out->mem, f[1].val, ABORT, "msg", -1, &out->msg, st);
  }
  if (c != TF_OK) {
    tf_msg_abort_step_req_fini(out);
  }
  return c;
}

void tf_msg_abort_step_req_fini(tf_msg_abort_step_req *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- DeregisterGraph ----------------------------------------------------- */

static const char DEREG[] = "DeregisterGraph";

void tf_msg_deregister_graph_req_encode(tf_wire_writer *w,
                                        const tf_msg_deregister_graph_req *m) {
  handle_encode(w, m->handle);
}

tf_code tf_msg_deregister_graph_req_decode(const tf_wire_msg *r,
                                           tf_msg_deregister_graph_req *out,
                                           tf_status *st) {
  memset(out, 0, sizeof *out);
  return handle_decode(r, TF_M_DEREGISTER_GRAPH, false, DEREG, &out->handle, st);
}

void tf_msg_deregister_graph_req_fini(tf_msg_deregister_graph_req *m) {
  memset(m, 0, sizeof *m);
}

/* ---- WorkerReset --------------------------------------------------------- */

static const char WRESET[] = "WorkerReset";

void tf_msg_worker_reset_req_encode(tf_wire_writer *w, const tf_msg_worker_reset_req *m) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 1);
  tf__mp_map_key(&b, "containers");
  tf__msg_pack_strs(w, WRESET, "containers", m->containers, m->n_containers, CAP_NAMES);
  tf__mp_map_end(&b);
}

tf_code tf_msg_worker_reset_req_decode(const tf_wire_msg *r, tf_msg_worker_reset_req *out,
                                       tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"containers", NULL}};
  tf_code c = tf__msg_body(r, TF_M_WORKER_RESET, false, WRESET, f, 1, st);
  if (c == TF_OK) {
    c = tf__msg_get_strs(&out->mem, f[0].val, WRESET, "containers", CAP_NAMES,
                         &out->containers, &out->n_containers, st);
  }
  if (c != TF_OK) {
    tf_msg_worker_reset_req_fini(out);
  }
  return c;
}

void tf_msg_worker_reset_req_fini(tf_msg_worker_reset_req *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}
