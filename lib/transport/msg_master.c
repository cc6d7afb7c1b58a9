/* msg_master.c: the bodies of the master service's session and step
 * methods (messages.h, docs/wire.md "Methods"): CreateSession,
 * ExtendSession, RunStep and Reset. Decoders check every field and refuse
 * lists over the caps; encoders pack exactly the documented maps. */
#include <stdio.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/serialize/msgpack_map.h"
#include "lib/transport/msg_util.h"

#define CAP_TENSORS TF_MSG_MAX_TENSORS, "TF_MSG_MAX_TENSORS"
#define CAP_NAMES TF_MSG_MAX_NAMES, "TF_MSG_MAX_NAMES"

/* ---- CreateSession, ExtendSession ---------------------------------------- */

static const char CREATE[] = "CreateSession", CREATE_REPLY[] = "CreateSession reply",
                  EXTEND[] = "ExtendSession";

void tf_msg_create_session_req_encode(tf_wire_writer *w,
                                      const tf_msg_create_session_req *m) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), m->has_graph ? 1 : 0);
  if (m->has_graph) {
    tf__mp_map_key(&b, "graph");
    tf__msg_pack_bin(w, CREATE, "graph", m->graph, m->graph_len);
  }
  tf__mp_map_end(&b);
}

tf_code tf_msg_create_session_req_decode(const tf_wire_msg *r,
                                         tf_msg_create_session_req *out,
                                         tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"graph", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_CREATE_SESSION, false, CREATE, f, 1, st));
  if (f[0].val == NULL) {
    return TF_OK; /* the graph comes later, with ExtendSession */
  }
  tf_code c = tf__msg_get_bin(f[0].val, CREATE, "graph", &out->graph, &out->graph_len, st);
  out->has_graph = c == TF_OK;
  return c;
}

void tf_msg_create_session_req_fini(tf_msg_create_session_req *m) {
  memset(m, 0, sizeof *m);
}

void tf_msg_create_session_reply_encode(tf_wire_writer *w,
                                        const tf_msg_create_session_reply *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 1 + (m->session_ttl_ms > 0) + (m->max_message_bytes > 0));
  tf__mp_map_key(&b, "session");
  msgpack_pack_uint64(pk, m->session);
  if (m->session_ttl_ms > 0) {
    tf__mp_map_key(&b, "session_ttl_ms");
    msgpack_pack_int64(pk, m->session_ttl_ms);
  }
  if (m->max_message_bytes > 0) {
    tf__mp_map_key(&b, "max_message_bytes");
    msgpack_pack_int64(pk, m->max_message_bytes);
  }
  tf__mp_map_end(&b);
}

tf_code tf_msg_create_session_reply_decode(const tf_wire_msg *r,
                                           tf_msg_create_session_reply *out,
                                           tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"session", NULL}, {"session_ttl_ms", NULL},
                       {"max_message_bytes", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_CREATE_SESSION, true, CREATE_REPLY, f, 3, st));
  TF_TRY(tf__msg_get_u64(f[0].val, CREATE_REPLY, "session", -1, &out->session, st));
  if (f[1].val != NULL) {
    TF_TRY(tf__msg_get_int(f[1].val, CREATE_REPLY, "session_ttl_ms", -1, 1,
                           INT64_MAX / 1000000, &out->session_ttl_ms, st));
  }
  if (f[2].val == NULL) return TF_OK;
  return tf__msg_get_int(f[2].val, CREATE_REPLY, "max_message_bytes", -1, 1, INT64_MAX,
                         &out->max_message_bytes, st);
}

void tf_msg_create_session_reply_fini(tf_msg_create_session_reply *m) {
  memset(m, 0, sizeof *m);
}

void tf_msg_extend_session_req_encode(tf_wire_writer *w,
                                      const tf_msg_extend_session_req *m) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 1);
  tf__mp_map_key(&b, "graph");
  tf__msg_pack_bin(w, EXTEND, "graph", m->graph, m->graph_len);
  tf__mp_map_end(&b);
}

tf_code tf_msg_extend_session_req_decode(const tf_wire_msg *r,
                                         tf_msg_extend_session_req *out,
                                         tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"graph", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_EXTEND_SESSION, false, EXTEND, f, 1, st));
  tf_code c = tf__msg_get_bin(f[0].val, EXTEND, "graph", &out->graph, &out->graph_len, st);
  if (c != TF_OK) {
    memset(out, 0, sizeof *out);
  }
  return c;
}

void tf_msg_extend_session_req_fini(tf_msg_extend_session_req *m) {
  memset(m, 0, sizeof *m);
}

/* ---- RunStep ------------------------------------------------------------- */

static const char STEP[] = "RunStep", STEP_REPLY[] = "RunStep reply";

void tf_msg_run_step_req_encode(tf_wire_writer *w, const tf_msg_run_step_req *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 4);
  tf__mp_map_key(&b, "feeds");
  if (tf__msg_pack_list(w, STEP, "feeds", (size_t)m->n_feeds, CAP_TENSORS)) {
    for (int i = 0; i < m->n_feeds; i++) {
      msgpack_pack_array(pk, 2);
      tf__msg_pack_str(w, STEP, "feeds", m->feed_names[i]);
      tf__msg_pack_tensor(w, m->feed_values[i]);
    }
  }
  tf__mp_map_key(&b, "fetches");
  tf__msg_pack_strs(w, STEP, "fetches", m->fetches, m->n_fetches, CAP_TENSORS);
  tf__mp_map_key(&b, "targets");
  tf__msg_pack_strs(w, STEP, "targets", m->targets, m->n_targets, CAP_NAMES);
  tf__mp_map_key(&b, "trace");
  tf__msg_pack_bool(pk, m->trace);
  tf__mp_map_end(&b);
}

static tf_code decode_feeds(const tf_wire_msg *r, const msgpack_object *o,
                            tf_msg_run_step_req *out, tf_status *st) {
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_get_list(o, STEP, "feeds", CAP_TENSORS, &a, st));
  out->feed_names = tf__msg_alloc(&out->mem, (size_t)a->size * sizeof *out->feed_names);
  out->feed_values = tf__msg_alloc(&out->mem, (size_t)a->size * sizeof *out->feed_values);
  out->n_feeds = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    const msgpack_object *e = &a->ptr[i];
    if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 2 ||
        e->via.array.ptr[0].type != MSGPACK_OBJECT_STR) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: feeds[%u] is not [name, "
                           "tensor]", STEP, i);
    }
    TF_TRY(tf__msg_get_str(&out->mem, &e->via.array.ptr[0], STEP, "feeds", i,
                           &out->feed_names[i], st));
    if (tf_wire_unpack_tensor(r, &e->via.array.ptr[1], &out->feed_values[i], st) != TF_OK) {
      return tf_status_prefix(st, "%s: feed '%s'", STEP, out->feed_names[i]);
    }
  }
  return TF_OK;
}

static tf_code decode_step(const tf_wire_msg *r, tf_msg_run_step_req *out,
                           tf_status *st) {
  tf__msg_field f[] = {{"feeds", NULL}, {"fetches", NULL}, {"targets", NULL},
                       {"trace", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_RUN_STEP, false, STEP, f, 4, st));
  TF_TRY(tf__msg_get_strs(&out->mem, f[1].val, STEP, "fetches", CAP_TENSORS,
                          &out->fetches, &out->n_fetches, st));
  TF_TRY(tf__msg_get_strs(&out->mem, f[2].val, STEP, "targets", CAP_NAMES,
                          &out->targets, &out->n_targets, st));
  TF_TRY(tf__msg_get_bool(f[3].val, STEP, "trace", -1, &out->trace, st));
  return decode_feeds(r, f[0].val, out, st); /* tensors last: they cost most */
}

tf_code tf_msg_run_step_req_decode(const tf_wire_msg *r, tf_msg_run_step_req *out,
                                   tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_step(r, out, st);
  if (c != TF_OK) {
    tf_msg_run_step_req_fini(out);
  }
  return c;
}

void tf_msg_run_step_req_fini(tf_msg_run_step_req *m) {
  for (int i = 0; m->feed_values != NULL && i < m->n_feeds; i++) {
    tf_tensor_unref(m->feed_values[i]);
  }
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

void tf_msg_run_step_reply_encode(tf_wire_writer *w, const tf_msg_run_step_reply *m) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 1);
  tf__mp_map_key(&b, "fetches");
  if (tf__msg_pack_list(w, STEP_REPLY, "fetches", (size_t)m->n_fetches, CAP_TENSORS)) {
    for (int i = 0; i < m->n_fetches; i++) {
      tf__msg_pack_tensor(w, m->fetches[i]);
    }
  }
  tf__mp_map_end(&b);
}

tf_code tf_msg_run_step_reply_decode(const tf_wire_msg *r, tf_msg_run_step_reply *out,
                                     tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"fetches", NULL}};
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_body(r, TF_M_RUN_STEP, true, STEP_REPLY, f, 1, st));
  TF_TRY(tf__msg_get_list(f[0].val, STEP_REPLY, "fetches", CAP_TENSORS, &a, st));
  out->fetches = tf__msg_alloc(&out->mem, (size_t)a->size * sizeof *out->fetches);
  out->n_fetches = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    if (tf__msg_get_tensor(r, &a->ptr[i], STEP_REPLY, "fetches", i, false,
                           &out->fetches[i], st) != TF_OK) {
      tf_msg_run_step_reply_fini(out);
      return st->code;
    }
  }
  return TF_OK;
}

void tf_msg_run_step_reply_fini(tf_msg_run_step_reply *m) {
  for (int i = 0; m->fetches != NULL && i < m->n_fetches; i++) {
    tf_tensor_unref(m->fetches[i]);
  }
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- Reset --------------------------------------------------------------- */

static const char RESET[] = "Reset";

void tf_msg_reset_req_encode(tf_wire_writer *w, const tf_msg_reset_req *m) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 1);
  tf__mp_map_key(&b, "containers");
  tf__msg_pack_strs(w, RESET, "containers", m->containers, m->n_containers, CAP_NAMES);
  tf__mp_map_end(&b);
}

tf_code tf_msg_reset_req_decode(const tf_wire_msg *r, tf_msg_reset_req *out,
                                tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"containers", NULL}};
  tf_code c = tf__msg_body(r, TF_M_RESET, false, RESET, f, 1, st);
  if (c == TF_OK) {
    c = tf__msg_get_strs(&out->mem, f[0].val, RESET, "containers", CAP_NAMES,
                         &out->containers, &out->n_containers, st);
  }
  if (c != TF_OK) {
    tf_msg_reset_req_fini(out);
  }
  return c;
}

void tf_msg_reset_req_fini(tf_msg_reset_req *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}
