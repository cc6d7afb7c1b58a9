/* msg_status.c: the bodies of the status replies (messages.h, docs/wire.md
 * "Methods"): GetStatus (a worker's or the master's), ListDevices and
 * ClusterStatus. Their readers are tfctl and the master's health checks;
 * fields a reader can do without are optional when decoding (with the
 * defaults messages.h states), but a field that is present must have its
 * documented type. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/serialize/msgpack_map.h"
#include "lib/core/serialize/tensor_msgpack.h"
#include "lib/transport/msg_util.h"

#define CAP_DEVICES TF_MSG_MAX_DEVICES, "TF_MSG_MAX_DEVICES"

static const char STATUS[] = "GetStatus reply", LIST[] = "ListDevices reply",
                  CLUSTER[] = "ClusterStatus reply";

/* ---- GetStatus ----------------------------------------------------------- */

/* The counters in packing order, with their has-bits, where they live in
 * the struct and whether they are u64 (else int64 >= 0). */
static const struct {
  const char *key;
  unsigned bit;
  size_t off;
  bool u64;
} counters[] = {
    {"sessions", TF_MSG_STATUS_SESSIONS, offsetof(tf_msg_get_status_reply, sessions), false},
    {"running_steps", TF_MSG_STATUS_RUNNING_STEPS,
     offsetof(tf_msg_get_status_reply, running_steps), false},
    {"step_tables", TF_MSG_STATUS_STEP_TABLES, offsetof(tf_msg_get_status_reply, step_tables),
     false},
    {"buffered_bytes", TF_MSG_STATUS_BUFFERED_BYTES,
     offsetof(tf_msg_get_status_reply, buffered_bytes), false},
    {"graphs", TF_MSG_STATUS_GRAPHS, offsetof(tf_msg_get_status_reply, graphs), false},
    {"steps_run", TF_MSG_STATUS_STEPS_RUN, offsetof(tf_msg_get_status_reply, steps_run), true},
    {"bytes_sent", TF_MSG_STATUS_BYTES_SENT, offsetof(tf_msg_get_status_reply, bytes_sent),
     true},
    {"bytes_received", TF_MSG_STATUS_BYTES_RECEIVED,
     offsetof(tf_msg_get_status_reply, bytes_received), true},
    {"mem_in_use", TF_MSG_STATUS_MEM_IN_USE, offsetof(tf_msg_get_status_reply, mem_in_use),
     false},
    {"mem_peak", TF_MSG_STATUS_MEM_PEAK, offsetof(tf_msg_get_status_reply, mem_peak), false},
};
#define N_COUNTERS ((int)(sizeof counters / sizeof counters[0]))

/* The counter at index i of counters[] in m (an int64_t or, when u64, a
 * uint64_t). */
static void *counter_of(tf_msg_get_status_reply *m, int i) {
  return (char *)m + counters[i].off;
}
static const void *counter_in(const tf_msg_get_status_reply *m, int i) {
  return (const char *)m + counters[i].off;
}

static void pack_status_devices(tf_wire_writer *w, const tf_msg_get_status_reply *m) {
  msgpack_packer *pk = tf_wire_body(w);
  if (!tf__msg_pack_list(w, STATUS, "devices", (size_t)m->n_devices, CAP_DEVICES)) {
    return;
  }
  for (int i = 0; i < m->n_devices; i++) {
    const tf_msg_status_device *d = &m->devices[i];
    tf__mp_map dm;
    tf__mp_map_begin(&dm, pk, 3);
    tf__mp_map_key(&dm, "name");
    tf__msg_pack_str(w, STATUS, "name", d->name);
    tf__mp_map_key(&dm, "type");
    tf__msg_pack_str(w, STATUS, "type", d->type);
    tf__mp_map_key(&dm, "incarnation");
    msgpack_pack_uint64(pk, d->incarnation);
    tf__mp_map_end(&dm);
  }
}

void tf_msg_get_status_reply_encode(tf_wire_writer *w, const tf_msg_get_status_reply *m) {
  msgpack_packer *pk = tf_wire_body(w);
  bool has_stream = m->tensor_stream != NULL && m->tensor_stream[0] != '\0';
  int n = 4 + has_stream;
  for (int i = 0; i < N_COUNTERS; i++) {
    n += (m->has & counters[i].bit) != 0;
  }
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, (size_t)n);
  tf__mp_map_key(&b, "job");
  tf__msg_pack_str(w, STATUS, "job", m->job);
  tf__mp_map_key(&b, "task");
  msgpack_pack_int(pk, m->task);
  tf__mp_map_key(&b, "incarnation");
  msgpack_pack_uint64(pk, m->incarnation);
  tf__mp_map_key(&b, "devices");
  pack_status_devices(w, m);
  for (int i = 0; i < N_COUNTERS; i++) {
    if ((m->has & counters[i].bit) == 0) {
      continue;
    }
    tf__mp_map_key(&b, counters[i].key);
    if (counters[i].u64) {
      msgpack_pack_uint64(pk, *(const uint64_t *)counter_in(m, i));
    } else {
      msgpack_pack_int64(pk, *(const int64_t *)counter_in(m, i));
    }
  }
  if (has_stream) {
    tf__mp_map_key(&b, "tensor_stream");
    tf__msg_pack_str(w, STATUS, "tensor_stream", m->tensor_stream);
  }
  tf__mp_map_end(&b);
}

/* devices[i]: a map {name, type?, incarnation?} or just the name. */
static tf_code decode_status_device(tf_msg_mem *mem, const msgpack_object *o, uint32_t i,
                                    tf_msg_status_device *d, tf_status *st) {
  d->type = "";
  if (o->type == MSGPACK_OBJECT_STR) {
    return tf__msg_get_str(mem, o, STATUS, "devices", i, &d->name, st);
  }
  if (o->type != MSGPACK_OBJECT_MAP) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: devices[%u] is a %s, not a "
                         "device (a map or a name)", STATUS, i, tf__msgpack_type_name(o));
  }
  char what[64];
  snprintf(what, sizeof what, "%s: devices[%u]", STATUS, i);
  tf__msg_field f[] = {{"name", NULL}, {"type", NULL}, {"incarnation", NULL}};
  TF_TRY(tf__msg_map(o, what, "devices", i, f, 3, st));
  TF_TRY(tf__msg_get_str(mem, f[0].val, what, "name", -1, &d->name, st));
  if (f[1].val != NULL) {
    TF_TRY(tf__msg_get_str(mem, f[1].val, what, "type", -1, &d->type, st));
  }
  if (f[2].val != NULL) {
    TF_TRY(tf__msg_get_u64(f[2].val, what, "incarnation", -1, &d->incarnation, st));
  }
  return TF_OK;
}

static tf_code decode_counters(const tf__msg_field *f, tf_msg_get_status_reply *out,
                               tf_status *st) {
  for (int i = 0; i < N_COUNTERS; i++) {
    if (f[i].val == NULL) {
      continue;
    }
    void *v = counter_of(out, i);
    if (counters[i].u64) {
      TF_TRY(tf__msg_get_u64(f[i].val, STATUS, f[i].key, -1, v, st));
    } else {
      TF_TRY(tf__msg_get_int(f[i].val, STATUS, f[i].key, -1, 0, INT64_MAX, v, st));
    }
    out->has |= counters[i].bit;
  }
  return TF_OK;
}

static tf_code decode_status(const tf_wire_msg *r, tf_msg_get_status_reply *out,
                             tf_status *st) {
  tf__msg_field f[5 + N_COUNTERS] = {{"job", NULL}, {"task", NULL},
                                     {"incarnation", NULL}, {"devices", NULL}};
  for (int i = 0; i < N_COUNTERS; i++) {
    f[4 + i].key = counters[i].key;
  }
  f[4 + N_COUNTERS].key = "tensor_stream";
  TF_TRY(tf__msg_body(r, TF_M_GET_STATUS, true, STATUS, f, 5 + N_COUNTERS, st));
  int64_t task = 0;
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_get_str(&out->mem, f[0].val, STATUS, "job", -1, &out->job, st));
  TF_TRY(tf__msg_get_int(f[1].val, STATUS, "task", -1, 0, INT_MAX, &task, st));
  out->task = (int)task;
  TF_TRY(tf__msg_get_u64(f[2].val, STATUS, "incarnation", -1, &out->incarnation, st));
  TF_TRY(tf__msg_get_list(f[3].val, STATUS, "devices", CAP_DEVICES, &a, st));
  out->devices = tf__msg_alloc(&out->mem, (size_t)a->size * sizeof *out->devices);
  out->n_devices = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    TF_TRY(decode_status_device(&out->mem, &a->ptr[i], i, &out->devices[i], st));
  }
  out->tensor_stream = "";
  if (f[4 + N_COUNTERS].val != NULL) {
    TF_TRY(tf__msg_get_str(&out->mem, f[4 + N_COUNTERS].val, STATUS, "tensor_stream", -1,
                           &out->tensor_stream, st));
  }
  return decode_counters(f + 4, out, st);
}

tf_code tf_msg_get_status_reply_decode(const tf_wire_msg *r, tf_msg_get_status_reply *out,
                                       tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_status(r, out, st);
  if (c != TF_OK) {
    tf_msg_get_status_reply_fini(out);
  }
  return c;
}

void tf_msg_get_status_reply_fini(tf_msg_get_status_reply *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- ListDevices --------------------------------------------------------- */

void tf_msg_list_devices_reply_encode(tf_wire_writer *w,
                                      const tf_msg_list_devices_reply *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 1);
  tf__mp_map_key(&b, "devices");
  if (tf__msg_pack_list(w, LIST, "devices", (size_t)m->n_devices, CAP_DEVICES)) {
    for (int i = 0; i < m->n_devices; i++) {
      const tf_msg_device *d = &m->devices[i];
      tf__mp_map dm;
      tf__mp_map_begin(&dm, pk, 5);
      tf__mp_map_key(&dm, "name");
      tf__msg_pack_str(w, LIST, "name", d->name);
      tf__mp_map_key(&dm, "type");
      tf__msg_pack_str(w, LIST, "type", d->type);
      tf__mp_map_key(&dm, "incarnation");
      msgpack_pack_uint64(pk, d->incarnation);
      tf__mp_map_key(&dm, "task");
      tf__msg_pack_str(w, LIST, "task", d->task);
      tf__mp_map_key(&dm, "url");
      tf__msg_pack_str(w, LIST, "url", d->url);
      tf__mp_map_end(&dm);
    }
  }
  tf__mp_map_end(&b);
}

static tf_code decode_device(tf_msg_mem *mem, const msgpack_object *o, uint32_t i,
                             tf_msg_device *d, tf_status *st) {
  char what[64];
  snprintf(what, sizeof what, "%s: devices[%u]", LIST, i);
  tf__msg_field f[] = {{"name", NULL}, {"type", NULL}, {"incarnation", NULL},
                       {"task", NULL}, {"url", NULL}};
  TF_TRY(tf__msg_map(o, LIST, "devices", i, f, 5, st));
  d->type = d->task = d->url = "";
  TF_TRY(tf__msg_get_str(mem, f[0].val, what, "name", -1, &d->name, st));
  const char **opt[] = {NULL, &d->type, NULL, &d->task, &d->url};
  for (int k = 1; k < 5; k++) {
    if (f[k].val != NULL && opt[k] != NULL) {
      TF_TRY(tf__msg_get_str(mem, f[k].val, what, f[k].key, -1, opt[k], st));
    }
  }
  if (f[2].val != NULL) {
    TF_TRY(tf__msg_get_u64(f[2].val, what, "incarnation", -1, &d->incarnation, st));
  }
  return TF_OK;
}

tf_code tf_msg_list_devices_reply_decode(const tf_wire_msg *r,
                                         tf_msg_list_devices_reply *out,
                                         tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"devices", NULL}};
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_body(r, TF_M_LIST_DEVICES, true, LIST, f, 1, st));
  TF_TRY(tf__msg_get_list(f[0].val, LIST, "devices", CAP_DEVICES, &a, st));
  out->devices = tf__msg_alloc(&out->mem, (size_t)a->size * sizeof *out->devices);
  out->n_devices = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    if (decode_device(&out->mem, &a->ptr[i], i, &out->devices[i], st) != TF_OK) {
      tf_msg_list_devices_reply_fini(out);
      return st->code;
    }
  }
  return TF_OK;
}

void tf_msg_list_devices_reply_fini(tf_msg_list_devices_reply *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- ClusterStatus ------------------------------------------------------- */

static void pack_task(tf_wire_writer *w, const tf_msg_task_status *t) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map e;
  tf__mp_map_begin(&e, pk, 9);
  tf__mp_map_key(&e, "job");
  tf__msg_pack_str(w, CLUSTER, "job", t->job);
  tf__mp_map_key(&e, "task");
  msgpack_pack_int(pk, t->task);
  tf__mp_map_key(&e, "url");
  tf__msg_pack_str(w, CLUSTER, "url", t->url);
  tf__mp_map_key(&e, "up");
  tf__msg_pack_bool(pk, t->up);
  tf__mp_map_key(&e, "incarnation");
  msgpack_pack_uint64(pk, t->incarnation);
  tf__mp_map_key(&e, "devices");
  tf__msg_pack_strs(w, CLUSTER, "devices", t->devices, t->n_devices, CAP_DEVICES);
  tf__mp_map_key(&e, "last_ok_ms");
  msgpack_pack_int64(pk, t->last_ok_ms);
  tf__mp_map_key(&e, "error");
  tf__msg_pack_str(w, CLUSTER, "error", t->error);
  tf__mp_map_key(&e, "jobs");
  tf__msg_pack_str(w, CLUSTER, "jobs", t->jobs ? t->jobs : "");
  tf__mp_map_end(&e);
}

void tf_msg_cluster_status_reply_encode(tf_wire_writer *w,
                                        const tf_msg_cluster_status_reply *m) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 1);
  tf__mp_map_key(&b, "tasks");
  if (tf__msg_pack_list(w, CLUSTER, "tasks", (size_t)m->n_tasks, CAP_DEVICES)) {
    for (int i = 0; i < m->n_tasks; i++) {
      pack_task(w, &m->tasks[i]);
    }
  }
  tf__mp_map_end(&b);
}

/* A task's devices: names, or maps with "name" (as in GetStatus). */
static tf_code decode_task_devices(tf_msg_mem *mem, const msgpack_object *o,
                                   const char *what, tf_msg_task_status *t,
                                   tf_status *st) {
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_get_list(o, what, "devices", CAP_DEVICES, &a, st));
  t->devices = tf__msg_alloc(mem, (size_t)a->size * sizeof *t->devices);
  t->n_devices = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    const msgpack_object *d = &a->ptr[i];
    if (d->type == MSGPACK_OBJECT_MAP) {
      tf__msg_field f[] = {{"name", NULL}};
      TF_TRY(tf__msg_map(d, what, "devices", i, f, 1, st));
      d = f[0].val;
      if (d == NULL) {
        return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: devices[%u] has no "
                             "'name'", what, i);
      }
    }
    TF_TRY(tf__msg_get_str(mem, d, what, "devices", i, &t->devices[i], st));
  }
  return TF_OK;
}

static tf_code decode_task(tf_msg_mem *mem, const msgpack_object *o, uint32_t i,
                           tf_msg_task_status *t, tf_status *st) {
  char what[64];
  snprintf(what, sizeof what, "%s: tasks[%u]", CLUSTER, i);
  tf__msg_field f[] = {{"job", NULL}, {"task", NULL}, {"up", NULL}, {"url", NULL},
                       {"error", NULL}, {"incarnation", NULL}, {"last_ok_ms", NULL},
                       {"devices", NULL}, {"jobs", NULL}};
  TF_TRY(tf__msg_map(o, CLUSTER, "tasks", i, f, 9, st));
  int64_t task = 0;
  t->url = t->error = t->jobs = "";
  t->last_ok_ms = -1;
  TF_TRY(tf__msg_get_str(mem, f[0].val, what, "job", -1, &t->job, st));
  TF_TRY(tf__msg_get_int(f[1].val, what, "task", -1, 0, INT_MAX, &task, st));
  t->task = (int)task;
  TF_TRY(tf__msg_get_bool(f[2].val, what, "up", -1, &t->up, st));
  if (f[3].val != NULL) {
    TF_TRY(tf__msg_get_str(mem, f[3].val, what, "url", -1, &t->url, st));
  }
  if (f[4].val != NULL) {
    TF_TRY(tf__msg_get_str(mem, f[4].val, what, "error", -1, &t->error, st));
  }
  if (f[5].val != NULL) {
    TF_TRY(tf__msg_get_u64(f[5].val, what, "incarnation", -1, &t->incarnation, st));
  }
  if (f[6].val != NULL) {
    TF_TRY(tf__msg_get_int(f[6].val, what, "last_ok_ms", -1, -1, INT64_MAX,
                           &t->last_ok_ms, st));
  }
  if (f[8].val != NULL) {
    TF_TRY(tf__msg_get_str(mem, f[8].val, what, "jobs", -1, &t->jobs, st));
  }
  return f[7].val != NULL ? decode_task_devices(mem, f[7].val, what, t, st) : TF_OK;
}

tf_code tf_msg_cluster_status_reply_decode(const tf_wire_msg *r,
                                           tf_msg_cluster_status_reply *out,
                                           tf_status *st) {
  memset(out, 0, sizeof *out);
  tf__msg_field f[] = {{"tasks", NULL}};
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_body(r, TF_M_CLUSTER_STATUS, true, CLUSTER, f, 1, st));
  TF_TRY(tf__msg_get_list(f[0].val, CLUSTER, "tasks", CAP_DEVICES, &a, st));
  out->tasks = tf__msg_alloc(&out->mem, (size_t)a->size * sizeof *out->tasks);
  out->n_tasks = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    if (decode_task(&out->mem, &a->ptr[i], i, &out->tasks[i], st) != TF_OK) {
      tf_msg_cluster_status_reply_fini(out);
      return st->code;
    }
  }
  return TF_OK;
}

void tf_msg_cluster_status_reply_fini(tf_msg_cluster_status_reply *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}
