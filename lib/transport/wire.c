/* wire.c: the message envelope (docs/wire.md): writing a header, a msgpack
 * body and 64-byte aligned tensor payloads into one NNG message allocated
 * at its final size, and parsing untrusted bytes back with every length
 * and offset checked before use. Tensor payloads are copied exactly once on
 * each side: into the message by tf_wire_finish, out of it by
 * tf_wire_unpack_tensor. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/core/serialize/tensor_msgpack.h"
#include "lib/core/base/util.h"
#include "lib/transport/auth.h"
#include "lib/transport/wire.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "payloads are the host's little-endian element bytes");

#define WIRE_PREFIX 8 /* "TFW" 0x01 | u32 LE msgpack length */
#define WIRE_ALIGN 64
/* Payloads this large become tensors that alias the received message. */
#define WIRE_ALIAS_MIN ((size_t)64 << 10)

static void release_msg(void *arg) { tf_wire_msg_free(arg); }

static const char wire_magic[3] = {'T', 'F', 'W'};

const char *tf_method_name(int method) {
  switch (method) {
  case TF_M_GET_STATUS: return "GetStatus";
  case TF_M_REGISTER_GRAPH: return "RegisterGraph";
  case TF_M_RUN_GRAPH: return "RunGraph";
  case TF_M_TENSOR_PUSH: return "TensorPush";
  case TF_M_CLEANUP_GRAPH: return "CleanupGraph";
  case TF_M_ABORT_STEP: return "AbortStep";
  case TF_M_DEREGISTER_GRAPH: return "DeregisterGraph";
  case TF_M_WORKER_RESET: return "WorkerReset";
  case TF_M_CREATE_SESSION: return "CreateSession";
  case TF_M_EXTEND_SESSION: return "ExtendSession";
  case TF_M_RUN_STEP: return "RunStep";
  case TF_M_CLOSE_SESSION: return "CloseSession";
  case TF_M_LIST_DEVICES: return "ListDevices";
  case TF_M_RESET: return "Reset";
  case TF_M_CLUSTER_STATUS: return "ClusterStatus";
  case TF_M_KEEP_ALIVE: return "KeepAlive";
  case TF_M_SUBMIT_JOB: return "SubmitJob";
  case TF_M_LIST_JOBS: return "ListJobs";
  case TF_M_JOB_STATUS: return "JobStatus";
  case TF_M_JOB_CONTROL: return "JobControl";
  case TF_M_JOB_LOGS: return "JobLogs";
  case TF_M_JOB_CHECKPOINTS: return "JobCheckpoints";
  default: return "unknown";
  }
}

/* Asks for transparent huge pages on the whole pages inside [p, p+n)
 * before the first write to fresh memory: faulting in 4 KiB pages costs
 * more than the copy itself for large payloads. A hint only. */
static void hint_huge_pages(void *p, size_t n) {
  if (n < ((size_t)4 << 20)) {
    return;
  }
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~(page - 1);
  if (hi > lo) {
    madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
  }
}

static uint64_t align_up(uint64_t x) {
  return (x + (WIRE_ALIGN - 1)) & ~(uint64_t)(WIRE_ALIGN - 1);
}

/* ---- writing ------------------------------------------------------------ */

typedef struct payload {
  tf_tensor *t;  /* reference held until finish */
  uint64_t off;  /* offset in the payload area */
} payload;

struct tf_wire_writer {
  msgpack_sbuffer sb;   /* prefix placeholder + [header, body] */
  msgpack_packer pk;
  size_t body_start;    /* sb.size once the header is packed */
  payload *p;
  int n, cap;
  uint64_t area_len;    /* end of the last payload in the area */
  tf_status err;        /* first error of tf_wire_pack_tensor */
};

static void pack_header(msgpack_packer *pk, const tf_wire_header *h) {
  tf__mp_map m;
  tf__mp_map_begin(&m, pk, h->is_reply ? 14 : 11);
  tf__mp_map_key(&m, "v");
  msgpack_pack_uint64(pk, TF_WIRE_VERSION);
  tf__mp_map_key(&m, "m");
  msgpack_pack_int64(pk, h->method);
  tf__mp_map_key(&m, "id");
  msgpack_pack_uint64(pk, h->request_id);
  tf__mp_map_key(&m, "sess");
  msgpack_pack_uint64(pk, h->session);
  tf__mp_map_key(&m, "step");
  msgpack_pack_uint64(pk, h->step_id);
  tf__mp_map_key(&m, "dl");
  msgpack_pack_int64(pk, h->deadline_ms);
  tf__mp_map_key(&m, "auth");
  msgpack_pack_nil(pk);
  tf__mp_map_key(&m, "from");
  tf__msgpack_pack_cstr(pk, h->from != NULL ? h->from : "");
  tf__mp_map_key(&m, "from_inc");
  msgpack_pack_uint64(pk, h->from_inc);
  tf__mp_map_key(&m, "to");
  tf__msgpack_pack_cstr(pk, h->to != NULL ? h->to : "");
  tf__mp_map_key(&m, "to_inc");
  msgpack_pack_uint64(pk, h->to_inc);
  if (h->is_reply) {
    tf__mp_map_key(&m, "reply");
    msgpack_pack_true(pk);
    tf__mp_map_key(&m, "code");
    msgpack_pack_int64(pk, h->code);
    tf__mp_map_key(&m, "err");
    tf__msgpack_pack_cstr(pk, h->error != NULL ? h->error : "");
  }
  tf__mp_map_end(&m);
}

tf_wire_writer *tf_wire_writer_new(const tf_wire_header *h) {
  tf_wire_writer *w = tf__xcalloc(1, sizeof *w);
  msgpack_sbuffer_init(&w->sb);
  msgpack_packer_init(&w->pk, &w->sb, msgpack_sbuffer_write);
  tf_status_init(&w->err);
  /* The 8-byte prefix is rewritten at finish; packing the msgpack part
   * after it keeps finish to one copy of the whole part. */
  static const char zero[WIRE_PREFIX] = {0};
  msgpack_sbuffer_write(&w->sb, zero, WIRE_PREFIX);
  msgpack_pack_array(&w->pk, 2);
  pack_header(&w->pk, h);
  w->body_start = w->sb.size;
  return w;
}

msgpack_packer *tf_wire_body(tf_wire_writer *w) { return &w->pk; }

static void pack_desc(tf_wire_writer *w, const tf_tensor *t, uint64_t off) {
  msgpack_packer *pk = &w->pk;
  tf__mp_map m;
  tf__mp_map_begin(&m, pk, 4);
  tf__mp_map_key(&m, "dt");
  msgpack_pack_int64(pk, (int64_t)t->dtype);
  tf__mp_map_key(&m, "shape");
  msgpack_pack_array(pk, (size_t)t->shape.rank);
  for (int i = 0; i < t->shape.rank; i++) {
    msgpack_pack_int64(pk, t->shape.dims[i]);
  }
  tf__mp_map_key(&m, "off");
  msgpack_pack_uint64(pk, off);
  tf__mp_map_key(&m, "len");
  msgpack_pack_uint64(pk, (uint64_t)t->nbytes);
  tf__mp_map_end(&m);
}

void tf_wire_pack_tensor(tf_wire_writer *w, const tf_tensor *t) {
  if (t->dtype == TF_STRING) {
    tf_status st;
    if (tf__pack_tensor(&w->pk, t, &st) != TF_OK) {
      msgpack_pack_nil(&w->pk); /* keeps the body one well-formed object */
      if (w->err.code == TF_OK) {
        w->err = st;
      }
    }
    return;
  }
  uint64_t off = align_up(w->area_len);
  pack_desc(w, t, off);
  if (w->n == w->cap) {
    w->cap = w->cap ? 2 * w->cap : 4;
    w->p = tf__xrealloc(w->p, (size_t)w->cap * sizeof *w->p);
  }
  w->p[w->n++] = (payload){tf_tensor_ref((tf_tensor *)t), off};
  w->area_len = off + (uint64_t)t->nbytes;
}

void tf_wire_writer_fail(tf_wire_writer *w, const tf_status *st) {
  if (w->err.code == TF_OK && st->code != TF_OK) {
    w->err = *st;
  }
}

void tf_wire_writer_free(tf_wire_writer *w) {
  if (w == NULL) {
    return;
  }
  for (int i = 0; i < w->n; i++) {
    tf_tensor_unref(w->p[i].t);
  }
  free(w->p);
  msgpack_sbuffer_destroy(&w->sb);
  free(w);
}

/* Copies the msgpack part and every payload into m's body, zeroing pads. */
static void fill_message(tf_wire_writer *w, uint8_t *dst, size_t total,
                         size_t area) {
  size_t n = w->sb.size - WIRE_PREFIX;
  memcpy(dst, w->sb.data, w->sb.size);
  memcpy(dst, wire_magic, sizeof wire_magic);
  dst[3] = TF_WIRE_VERSION;
  for (int i = 0; i < 4; i++) {
    dst[4 + i] = (uint8_t)(n >> (8 * i));
  }
  size_t pos = w->sb.size;
  for (int i = 0; i < w->n; i++) {
    size_t at = area + (size_t)w->p[i].off;
    memset(dst + pos, 0, at - pos);
    memcpy(dst + at, w->p[i].t->data, w->p[i].t->nbytes);
    pos = at + w->p[i].t->nbytes;
  }
  if (pos < total) {
    memset(dst + pos, 0, total - pos);
  }
}

tf_code tf_wire_finish(tf_wire_writer *w, nng_msg **out, tf_status *st) {
  *out = NULL;
  tf_code c = TF_OK;
  if (w->err.code != TF_OK) {
    c = tf_status_set(st, w->err.code, "%s", w->err.msg);
    goto done;
  }
  if (w->sb.size == w->body_start) {
    msgpack_pack_nil(&w->pk);
  }
  size_t n = w->sb.size - WIRE_PREFIX;
  if (n > UINT32_MAX) {
    c = tf_status_set(st, TF_INVALID_ARGUMENT,
                      "message msgpack part of %zu bytes exceeds 4 GiB", n);
    goto done;
  }
  uint64_t area = w->n > 0 ? align_up(w->sb.size) : w->sb.size;
  if (w->area_len > (uint64_t)SIZE_MAX - area) {
    c = tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                      "message of %llu + %llu bytes does not fit in memory",
                      (unsigned long long)area,
                      (unsigned long long)w->area_len);
    goto done;
  }
  size_t total = (size_t)(area + w->area_len);
  nng_msg *m;
  /* Room in front for the auth prefix, so signing does not copy it. */
  if (total > SIZE_MAX - TF_AUTH_PREFIX_BYTES ||
      nng_msg_alloc(&m, total + TF_AUTH_PREFIX_BYTES) != 0) {
    c = tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                      "out of memory for a %zu-byte message", total);
    goto done;
  }
  nng_msg_trim(m, TF_AUTH_PREFIX_BYTES);
  hint_huge_pages(nng_msg_body(m), total);
  fill_message(w, nng_msg_body(m), total, (size_t)area);
  *out = m;
done:
  tf_wire_writer_free(w);
  return c;
}

tf_wire_writer *tf_wire_reply_writer(const tf_wire_msg *req) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = req->h.method,
                      .request_id = req->h.request_id,
                      .session = req->h.session, .step_id = req->h.step_id,
                      .from = req->h.to, .from_inc = req->h.to_inc,
                      .to = req->h.from, .to_inc = req->h.from_inc,
                      .is_reply = true, .code = TF_OK, .error = ""};
  return tf_wire_writer_new(&h);
}

tf_code tf_wire_error_reply(const tf_wire_header *req, const tf_status *st,
                            nng_msg **out, tf_status *err) {
  tf_wire_header h = {0};
  if (req != NULL) {
    h = *req;
    h.from = req->to; /* the reply comes from the task asked */
    h.from_inc = req->to_inc;
    h.to = req->from;
    h.to_inc = req->from_inc;
  }
  h.version = TF_WIRE_VERSION;
  h.is_reply = true;
  h.code = st->code;
  h.error = st->msg;
  h.deadline_ms = 0;
  return tf_wire_finish(tf_wire_writer_new(&h), out, err);
}

/* ---- reading ------------------------------------------------------------ */

static tf_code hdr_uint(const msgpack_object *v, const char *key, uint64_t max,
                        uint64_t *out, tf_status *st) {
  if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 > max) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: '%s' is a %s, not an integer in [0, %llu]",
                         key, tf__msgpack_type_name(v),
                         (unsigned long long)max);
  }
  *out = v->via.u64;
  return TF_OK;
}

/* Copies a str into the message's zone as a NUL-terminated string. */
static tf_code hdr_str(tf_wire_msg *r, const msgpack_object *v,
                       const char *key, const char **out, tf_status *st) {
  if (v->type != MSGPACK_OBJECT_STR) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: '%s' is a %s, not a str", key,
                         tf__msgpack_type_name(v));
  }
  char *s = msgpack_zone_malloc(&r->zone, (size_t)v->via.str.size + 1);
  if (s == NULL) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory for a header string");
  }
  memcpy(s, v->via.str.ptr, v->via.str.size);
  s[v->via.str.size] = '\0';
  *out = s;
  return TF_OK;
}

/* One header field; unknown keys (and "auth", reserved) are ignored so
 * that later versions may add fields. *seen gets bit 1 for "v", 2 for
 * "m". */
static tf_code hdr_field(tf_wire_msg *r, const msgpack_object_kv *kv,
                         unsigned *seen, tf_status *st) {
  const msgpack_object *k = &kv->key, *v = &kv->val;
  tf_wire_header *h = &r->h;
  uint64_t u = 0;
  if (tf__msgpack_str_eq(k, "v")) {
    TF_TRY(hdr_uint(v, "v", UINT32_MAX, &u, st));
    if (u != TF_WIRE_VERSION) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "unsupported wire version %llu",
                           (unsigned long long)u);
    }
    h->version = (int)u;
    *seen |= 1;
  } else if (tf__msgpack_str_eq(k, "m")) {
    TF_TRY(hdr_uint(v, "m", INT_MAX, &u, st));
    h->method = (int)u;
    *seen |= 2;
  } else if (tf__msgpack_str_eq(k, "id")) {
    return hdr_uint(v, "id", UINT64_MAX, &h->request_id, st);
  } else if (tf__msgpack_str_eq(k, "sess")) {
    return hdr_uint(v, "sess", UINT64_MAX, &h->session, st);
  } else if (tf__msgpack_str_eq(k, "step")) {
    return hdr_uint(v, "step", UINT64_MAX, &h->step_id, st);
  } else if (tf__msgpack_str_eq(k, "dl")) {
    if (!tf__msgpack_get_i64(v, &h->deadline_ms)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "header: 'dl' is a %s, not an int64",
                           tf__msgpack_type_name(v));
    }
  } else if (tf__msgpack_str_eq(k, "reply")) {
    if (v->type != MSGPACK_OBJECT_BOOLEAN) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "header: 'reply' is a %s, not a bool",
                           tf__msgpack_type_name(v));
    }
    h->is_reply = v->via.boolean;
  } else if (tf__msgpack_str_eq(k, "code")) {
    TF_TRY(hdr_uint(v, "code", TF_CODE_COUNT - 1, &u, st));
    h->code = (int)u;
  } else if (tf__msgpack_str_eq(k, "err")) {
    return hdr_str(r, v, "err", &h->error, st);
  } else if (tf__msgpack_str_eq(k, "from")) {
    return hdr_str(r, v, "from", &h->from, st);
  } else if (tf__msgpack_str_eq(k, "from_inc")) {
    return hdr_uint(v, "from_inc", UINT64_MAX, &h->from_inc, st);
  } else if (tf__msgpack_str_eq(k, "to")) {
    return hdr_str(r, v, "to", &h->to, st);
  } else if (tf__msgpack_str_eq(k, "to_inc")) {
    return hdr_uint(v, "to_inc", UINT64_MAX, &h->to_inc, st);
  }
  return TF_OK;
}

static tf_code parse_header(tf_wire_msg *r, const msgpack_object *o,
                            tf_status *st) {
  if (o->type != MSGPACK_OBJECT_MAP) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header is a %s, not a map",
                         tf__msgpack_type_name(o));
  }
  r->h.error = "";
  r->h.from = "";
  r->h.to = "";
  unsigned seen = 0;
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    const msgpack_object_kv *kv = &o->via.map.ptr[i];
    if (kv->key.type != MSGPACK_OBJECT_STR) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "header: key %u is a %s, not a str", i,
                           tf__msgpack_type_name(&kv->key));
    }
    TF_TRY(hdr_field(r, kv, &seen, st));
  }
  if (!(seen & 1)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "header: missing 'v'");
  }
  if (!(seen & 2)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "header: missing 'm'");
  }
  return TF_OK;
}

/* Checks the 8-byte prefix; *n gets the msgpack part's length. */
static tf_code parse_prefix(const uint8_t *b, size_t len, size_t *n,
                            tf_status *st) {
  if (len < WIRE_PREFIX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "message too short (%zu bytes)", len);
  }
  if (memcmp(b, wire_magic, sizeof wire_magic) != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "bad magic 0x%02x%02x%02x (want \"TFW\")", b[0],
                         b[1], b[2]);
  }
  if (b[3] != TF_WIRE_VERSION) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "unsupported wire version %u", b[3]);
  }
  uint64_t v = 0;
  for (int i = 3; i >= 0; i--) {
    v = (v << 8) | b[4 + i];
  }
  if (v > len - WIRE_PREFIX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "msgpack part of %llu bytes overruns the %zu-byte "
                         "message",
                         (unsigned long long)v, len);
  }
  *n = (size_t)v;
  return TF_OK;
}

static tf_code parse_into(tf_wire_msg *r, tf_status *st) {
  const uint8_t *b = nng_msg_body(r->msg);
  size_t len = nng_msg_len(r->msg), n = 0, end = 0, off = 0;
  TF_TRY(parse_prefix(b, len, &n, st));
  const char *mp = (const char *)b + WIRE_PREFIX;
  tf_code c = tf__msgpack_check(mp, n, TF_MSGPACK_MAX_DEPTH, &end, st);
  if (c != TF_OK) { /* DATA_LOSS there: here the peer sent bad bytes */
    tf_status_prefix(st, "message");
    if (st != NULL) {
      st->code = TF_INVALID_ARGUMENT;
    }
    return TF_INVALID_ARGUMENT;
  }
  if (end != n) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "message: %zu bytes after the msgpack object in the "
                         "%zu-byte msgpack part",
                         n - end, n);
  }
  msgpack_object top;
  msgpack_unpack_return ur = msgpack_unpack(mp, n, &off, &r->zone, &top);
  if (ur == MSGPACK_UNPACK_NOMEM_ERROR) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory unpacking a %zu-byte header", n);
  }
  if (ur != MSGPACK_UNPACK_SUCCESS) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "message: msgpack parse error in %zu bytes", n);
  }
  if (top.type != MSGPACK_OBJECT_ARRAY || top.via.array.size != 2) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "message: msgpack part is a %s, not [header, body]",
                         tf__msgpack_type_name(&top));
  }
  TF_TRY(parse_header(r, &top.via.array.ptr[0], st));
  r->body = top.via.array.ptr[1];
  uint64_t area = align_up(WIRE_PREFIX + (uint64_t)n);
  r->payload_start = area < len ? (size_t)area : len;
  return TF_OK;
}

tf_code tf_wire_parse(nng_msg *m, tf_wire_msg **out, tf_status *st) {
  *out = NULL;
  tf_wire_msg *r = tf__xcalloc(1, sizeof *r);
  tf__ref_init(&r->refs, 1);
  r->msg = m;
  if (!msgpack_zone_init(&r->zone, 2048)) {
    TF_PANIC("out of memory for a msgpack zone");
  }
  tf_code c = parse_into(r, st);
  if (c != TF_OK) {
    tf_wire_msg_free(r);
    return c;
  }
  *out = r;
  return TF_OK;
}

static void wire_msg_release(void *arg) {
  tf_wire_msg *r = arg;
  msgpack_zone_destroy(&r->zone);
  nng_msg_free(r->msg);
  free(r);
}

void tf_wire_msg_free(tf_wire_msg *r) {
  if (r != NULL) tf__ref_put(&r->refs, wire_msg_release, r);
}

int tf__wire_method_of(nng_msg *m) {
  const uint8_t *b = nng_msg_body(m);
  size_t len = nng_msg_len(m), n = 0, end = 0, off = 0;
  if (parse_prefix(b, len, &n, NULL) != TF_OK || n < 2 ||
      b[WIRE_PREFIX] != 0x92) {
    return -1;
  }
  const char *hp = (const char *)b + WIRE_PREFIX + 1;
  if (tf__msgpack_check(hp, n - 1, 2, &end, NULL) != TF_OK) {
    return -1;
  }
  msgpack_zone z;
  msgpack_object o;
  int method = -1;
  if (!msgpack_zone_init(&z, 512)) {
    return -1;
  }
  if (msgpack_unpack(hp, end, &off, &z, &o) == MSGPACK_UNPACK_SUCCESS &&
      o.type == MSGPACK_OBJECT_MAP) {
    for (uint32_t i = 0; i < o.via.map.size; i++) {
      const msgpack_object_kv *kv = &o.via.map.ptr[i];
      if (tf__msgpack_str_eq(&kv->key, "m") &&
          kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
          kv->val.via.u64 <= INT_MAX) {
        method = (int)kv->val.via.u64;
      }
    }
  }
  msgpack_zone_destroy(&z);
  return method;
}

/* ---- tensors ------------------------------------------------------------ */

static tf_code desc_shape(const msgpack_object *desc, tf_shape *shape,
                          tf_status *st) {
  const msgpack_object_array *a = tf_wire_get_array(desc, "shape", "tensor",
                                                    st);
  if (a == NULL) {
    return TF_INVALID_ARGUMENT;
  }
  if (a->size > TF_MAX_RANK) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor: rank %u exceeds %d", a->size, TF_MAX_RANK);
  }
  shape->rank = (int32_t)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    if (!tf__msgpack_get_i64(&a->ptr[i], &shape->dims[i])) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "tensor: shape[%u] is a %s, not an int", i,
                           tf__msgpack_type_name(&a->ptr[i]));
    }
  }
  return TF_OK;
}

/* Checks the descriptor's fields; *src gets the payload bytes. */
static tf_code desc_check(const tf_wire_msg *r, const msgpack_object *desc,
                          tf_dtype *dt, tf_shape *shape, const uint8_t **src,
                          size_t *nbytes, tf_status *st) {
  int64_t d;
  uint64_t off, len;
  TF_TRY(tf_wire_get_i64(desc, "dt", "tensor", &d, st));
  if (d < 0 || d >= TF_DTYPE_MAX || !tf_dtype_is_valid((tf_dtype)d) ||
      d == TF_STRING) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor: 'dt' %lld is not a flat dtype", (long long)d);
  }
  *dt = (tf_dtype)d;
  TF_TRY(desc_shape(desc, shape, st));
  int64_t n;
  tf_code c = tf_shape_check(shape, tf_dtype_size(*dt), &n, st);
  if (c != TF_OK) {
    tf_status_prefix(st, "tensor");
    return c;
  }
  TF_TRY(tf_wire_get_u64(desc, "off", "tensor", &off, st));
  TF_TRY(tf_wire_get_u64(desc, "len", "tensor", &len, st));
  uint64_t want = (uint64_t)n * tf_dtype_size(*dt);
  if (len != want) {
    char sh[128];
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor: 'len' %llu does not match %s%s (%llu bytes)",
                         (unsigned long long)len, tf_dtype_name(*dt),
                         tf_shape_str(shape, sh, sizeof sh),
                         (unsigned long long)want);
  }
  size_t area = nng_msg_len(r->msg) - r->payload_start;
  if (off > area || len > area - off) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor: payload at 'off' %llu of 'len' %llu lies "
                         "outside the %zu-byte payload area",
                         (unsigned long long)off, (unsigned long long)len,
                         area);
  }
  if (off % WIRE_ALIGN != 0) { /* tf_wire_pack_tensor aligns every payload */
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor: payload 'off' %llu is not a multiple of %d",
                         (unsigned long long)off, WIRE_ALIGN);
  }
  *src = (const uint8_t *)nng_msg_body(r->msg) + r->payload_start + off;
  *nbytes = (size_t)len;
  return TF_OK;
}

tf_code tf_wire_unpack_tensor(const tf_wire_msg *r, const msgpack_object *desc,
                              tf_tensor **out, tf_status *st) {
  *out = NULL;
  if (desc == NULL || desc->type != MSGPACK_OBJECT_MAP) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor: descriptor is a %s, not a map",
                         desc == NULL ? "nothing" : tf__msgpack_type_name(desc));
  }
  if (tf_wire_get(desc, "data") != NULL) { /* msgpack form (strings) */
    tf_code c = tf__unpack_tensor(desc, out, st);
    if (c != TF_OK) {
      tf_status_prefix(st, "tensor");
    }
    return c;
  }
  tf_dtype dt = TF_DTYPE_INVALID;
  tf_shape shape = {0};
  const uint8_t *src = NULL;
  size_t nbytes = 0;
  TF_TRY(desc_check(r, desc, &dt, &shape, &src, &nbytes, st));
  if (dt == TF_BOOL) {
    for (size_t i = 0; i < nbytes; i++) {
      if (src[i] > 1) {
        return tf_status_set(st, TF_INVALID_ARGUMENT,
                             "tensor: bool element %zu is 0x%02x, not 0 or 1",
                             i, src[i]);
      }
    }
  }
  /* NNG's req/rep bodies start 4 bytes into a 16-aligned buffer (the
   * protocol's request id is trimmed off), so payloads land 4 mod 16:
   * aliasing needs only the element's natural alignment. */
  size_t esize = tf_dtype_size(dt);
  if (nbytes >= WIRE_ALIAS_MIN && ((uintptr_t)src % esize) == 0) {
    tf_wire_msg *owner = (tf_wire_msg *)r;
    tf__ref_get(&owner->refs);
    return tf_tensor_wrap(dt, &shape, (void *)src, nbytes, release_msg, owner,
                          out, st);
  }
  TF_TRY(tf_tensor_new(dt, &shape, out, st));
  hint_huge_pages((*out)->data, nbytes);
  memcpy((*out)->data, src, nbytes);
  return TF_OK;
}
