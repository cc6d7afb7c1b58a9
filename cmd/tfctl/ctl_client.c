/* ctl_client.c: GetStatus, ClusterStatus and ListDevices as blocking
 * calls with deadlines, their reply bodies decoded into tf_ctl_* structs
 * (field names as in docs/wire.md). */
#include "cmd/tfctl/ctl_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/transport/rpc.h"
#include "lib/transport/wire.h"

void tf_ctl_task_fini(tf_ctl_task *t) {
  if (t == NULL) {
    return;
  }
  for (int i = 0; i < t->n_devices; i++) {
    free(t->devices[i]);
  }
  free(t->devices);
  free(t->job);
  free(t->url);
  free(t->error);
  memset(t, 0, sizeof *t);
}

void tf_ctl_tasks_free(tf_ctl_task *ts, int n) {
  for (int i = 0; ts != NULL && i < n; i++) {
    tf_ctl_task_fini(&ts[i]);
  }
  free(ts);
}

void tf_ctl_devices_free(tf_ctl_device *ds, int n) {
  for (int i = 0; ds != NULL && i < n; i++) {
    free(ds[i].name);
    free(ds[i].type);
    free(ds[i].task);
    free(ds[i].url);
  }
  free(ds);
}

/* One call with a nil body, meant for task `to` (NULL: whoever answers);
 * *reply on OK. */
static tf_code call_to(const char *url, int method, const char *to, int64_t timeout_ms,
                       tf_wire_msg **reply, tf_status *st) {
  tf_rpc_client *c = NULL;
  if (tf_rpc_client_new(url, 0, &c, st) != TF_OK) {
    return st->code;
  }
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .request_id = tf_rpc_new_request_id(),
                      .deadline_ms = timeout_ms, .to = to};
  tf_wire_writer *w = tf_wire_writer_new(&h);
  nng_msg *m = NULL;
  tf_code code = tf_wire_finish(w, &m, st);
  if (code == TF_OK) {
    code = tf_rpc_call(c, m, timeout_ms > 0 ? timeout_ms : 1, reply, st);
  }
  tf_rpc_client_free(c);
  return code;
}

static tf_code call(const char *url, int method, int64_t timeout_ms, tf_wire_msg **reply,
                    tf_status *st) {
  return call_to(url, method, NULL, timeout_ms, reply, st);
}

/* A copy of the str under key, or "" when absent. */
static char *opt_str(const msgpack_object *map, const char *key) {
  const msgpack_object *o = tf_wire_get(map, key);
  char *s = o != NULL ? tf_wire_strdup(o) : NULL;
  return s != NULL ? s : strdup("");
}

/* An integer under key, or dflt when absent or not an integer. */
static int64_t opt_int(const msgpack_object *map, const char *key, int64_t dflt) {
  const msgpack_object *o = tf_wire_get(map, key);
  if (o == NULL) {
    return dflt;
  }
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    return (int64_t)o->via.u64;
  }
  if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
    return o->via.i64;
  }
  return dflt;
}

/* Fills t->devices from an array of strs or of maps with "name". */
static tf_code decode_devices(const msgpack_object *map, const char *what,
                              tf_ctl_task *t, tf_status *st) {
  const msgpack_object_array *a = tf_wire_get_array(map, "devices", what, st);
  if (a == NULL) {
    return st->code;
  }
  t->devices = calloc(a->size > 0 ? a->size : 1, sizeof *t->devices);
  for (uint32_t i = 0; i < a->size; i++) {
    const msgpack_object *o = &a->ptr[i];
    const msgpack_object *name = o->type == MSGPACK_OBJECT_MAP ? tf_wire_get(o, "name") : o;
    char *s = name != NULL ? tf_wire_strdup(name) : NULL;
    if (s == NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: devices[%u] is not a device name",
                           what, (unsigned)i);
    }
    t->devices[t->n_devices++] = s;
  }
  return TF_OK;
}

/* GetStatus meant for task `to` (NULL: any); from[0..n) gets the reply
 * header's sender ("" when the server leaves it out). */
static tf_code get_status_to(const char *url, const char *to, int64_t timeout_ms,
                             tf_ctl_task *out, char *from, size_t n, tf_status *st) {
  memset(out, 0, sizeof *out);
  out->url = strdup(url);
  out->error = strdup("");
  out->last_ok_ms = -1;
  out->running_steps = -1;
  from[0] = '\0';
  tf_wire_msg *r = NULL;
  if (call_to(url, TF_M_GET_STATUS, to, timeout_ms, &r, st) != TF_OK) {
    return st->code;
  }
  snprintf(from, n, "%s", r->h.from != NULL ? r->h.from : "");
  const msgpack_object *b = &r->body;
  int64_t task = 0;
  tf_code code = TF_OK;
  if (tf_wire_get_str(b, "job", "GetStatus reply", &out->job, st) != TF_OK ||
      tf_wire_get_i64(b, "task", "GetStatus reply", &task, st) != TF_OK ||
      tf_wire_get_u64(b, "incarnation", "GetStatus reply", &out->incarnation, st) != TF_OK ||
      decode_devices(b, "GetStatus reply", out, st) != TF_OK) {
    code = st->code;
  }
  out->running_steps = (int)opt_int(b, "running_steps", -1);
  tf_wire_msg_free(r);
  out->task = (int)task;
  out->up = code == TF_OK;
  out->last_ok_ms = code == TF_OK ? 0 : -1;
  return code;
}

tf_code tf_ctl_get_status(const char *url, int64_t timeout_ms, tf_ctl_task *out,
                          tf_status *st) {
  char from[256];
  return get_status_to(url, NULL, timeout_ms, out, from, sizeof from, st);
}

tf_code tf_ctl_probe_task(const char *url, const char *job, int task, int64_t timeout_ms,
                          tf_status *st) {
  char want[160], from[256];
  snprintf(want, sizeof want, "/job:%s/replica:0/task:%d", job, task);
  tf_ctl_task t;
  tf_code code = get_status_to(url, want, timeout_ms, &t, from, sizeof from, st);
  if (code == TF_OK && (strcmp(t.job, job) != 0 || t.task != task ||
                        (from[0] != '\0' && strcmp(from, want) != 0))) {
    char is[256];
    if (from[0] != '\0' && strcmp(from, want) != 0) {
      snprintf(is, sizeof is, "%s", from);
    } else {
      snprintf(is, sizeof is, "/job:%.60s/replica:0/task:%d", t.job, t.task);
    }
    code = tf_status_set(st, TF_FAILED_PRECONDITION, "wrong task at address: %s is %s, "
                         "expected %s", url, is, want);
  }
  tf_ctl_task_fini(&t);
  return code;
}

bool tf_ctl_answers(const char *url, int64_t timeout_ms) {
  tf_status st;
  tf_status_init(&st);
  nng_url *u = NULL;
  if (url == NULL || nng_url_parse(&u, url) != 0) return false; /* bad URL */
  nng_url_free(u);
  tf_wire_msg *r = NULL;
  tf_code code = call(url, TF_M_GET_STATUS, timeout_ms, &r, &st);
  tf_wire_msg_free(r);
  return code != TF_DEADLINE_EXCEEDED && code != TF_UNAVAILABLE && code != TF_CANCELLED;
}

/* Decodes one ClusterStatus entry. */
static tf_code decode_task(const msgpack_object *o, tf_ctl_task *t, tf_status *st) {
  const char *what = "ClusterStatus reply: task";
  int64_t task = 0;
  t->last_ok_ms = -1;
  t->running_steps = -1;
  if (tf_wire_get_str(o, "job", what, &t->job, st) != TF_OK ||
      tf_wire_get_i64(o, "task", what, &task, st) != TF_OK ||
      tf_wire_get_bool(o, "up", what, &t->up, st) != TF_OK) {
    return st->code;
  }
  t->task = (int)task;
  t->url = opt_str(o, "url");
  t->error = opt_str(o, "error");
  t->incarnation = (uint64_t)opt_int(o, "incarnation", 0);
  t->last_ok_ms = opt_int(o, "last_ok_ms", -1);
  if (tf_wire_get(o, "devices") != NULL) {
    return decode_devices(o, what, t, st);
  }
  return TF_OK;
}

tf_code tf_ctl_cluster_status(const char *master_url, int64_t timeout_ms,
                              tf_ctl_task **out, int *n, tf_status *st) {
  *out = NULL;
  *n = 0;
  tf_wire_msg *r = NULL;
  if (call(master_url, TF_M_CLUSTER_STATUS, timeout_ms, &r, st) != TF_OK) {
    return st->code;
  }
  const msgpack_object_array *a =
      tf_wire_get_array(&r->body, "tasks", "ClusterStatus reply", st);
  if (a == NULL) {
    tf_wire_msg_free(r);
    return st->code;
  }
  uint32_t size = a->size; /* a lives in r */
  tf_ctl_task *ts = calloc(size + 1, sizeof *ts);
  int k = 1;
  bool has_master = false;
  tf_code code = TF_OK;
  for (uint32_t i = 0; i < size && code == TF_OK; i++) {
    code = decode_task(&a->ptr[i], &ts[k], st);
    if (code == TF_OK && strcmp(ts[k].job, "master") == 0) {
      has_master = true;
      tf_ctl_task tmp = ts[0];
      ts[0] = ts[k];
      ts[k] = tmp;
      tf_ctl_task_fini(&ts[k]);
      continue;
    }
    k++;
  }
  tf_wire_msg_free(r);
  if (code != TF_OK) {
    tf_ctl_tasks_free(ts, (int)size + 1);
    return code;
  }
  if (!has_master) {
    ts[0] = (tf_ctl_task){.job = strdup("master"), .task = 0, .url = strdup(master_url),
                          .up = true, .last_ok_ms = 0, .error = strdup("")};
  }
  *out = ts;
  *n = k;
  return TF_OK;
}

/* Decodes one ListDevices entry. */
static tf_code decode_device(const msgpack_object *o, tf_ctl_device *d, tf_status *st) {
  const char *what = "ListDevices reply: device";
  if (tf_wire_get_str(o, "name", what, &d->name, st) != TF_OK) {
    return st->code;
  }
  d->type = opt_str(o, "type");
  d->task = opt_str(o, "task");
  d->url = opt_str(o, "url");
  d->incarnation = (uint64_t)opt_int(o, "incarnation", 0);
  return TF_OK;
}

tf_code tf_ctl_list_devices(const char *master_url, int64_t timeout_ms,
                            tf_ctl_device **out, int *n, tf_status *st) {
  *out = NULL;
  *n = 0;
  tf_wire_msg *r = NULL;
  if (call(master_url, TF_M_LIST_DEVICES, timeout_ms, &r, st) != TF_OK) {
    return st->code;
  }
  const msgpack_object_array *a =
      tf_wire_get_array(&r->body, "devices", "ListDevices reply", st);
  if (a == NULL) {
    tf_wire_msg_free(r);
    return st->code;
  }
  uint32_t size = a->size; /* a lives in r */
  tf_ctl_device *ds = calloc(size > 0 ? size : 1, sizeof *ds);
  tf_code code = TF_OK;
  uint32_t i = 0;
  for (; i < size && code == TF_OK; i++) {
    code = decode_device(&a->ptr[i], &ds[i], st);
  }
  tf_wire_msg_free(r);
  if (code != TF_OK) {
    tf_ctl_devices_free(ds, (int)i);
    return code;
  }
  *out = ds;
  *n = (int)size;
  return TF_OK;
}
