/* msg_testlib.h: what the tests of the typed messages (msg_*_test.c)
 * share: encoding a struct into a parsed message, comparing tensors byte
 * for byte, the hostile-body tables (a valid body with one value replaced
 * or removed along a path, which must be refused with an error naming the
 * field), seeded byte flips run through the fuzz harness's checks
 * (msg_fuzz.h), and the exact bytes of a body packed key by key as
 * docs/wire.md lists it. */
#ifndef TF_TEST_UNIT_TRANSPORT_MSG_TESTLIB_H
#define TF_TEST_UNIT_TRANSPORT_MSG_TESTLIB_H

#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/msgpack_map.h"
#include "lib/transport/messages.h"
#include "test/fuzz/msg_fuzz.h"
#include "test/unit/testutil.h"

/* A writer for a message of method (a reply or not), as a peer sends it. */
static inline tf_wire_writer *mt_writer(int method, bool reply) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .request_id = 5, .session = 6, .step_id = 7,
                      .from = "/job:master/replica:0/task:0", .from_inc = 1,
                      .to = "/job:worker/replica:0/task:0", .to_inc = 2,
                      .is_reply = reply, .error = ""};
  return tf_wire_writer_new(&h);
}

/* Finishes w and parses the message back. */
static inline tf_wire_msg *mt_parse(tf_wire_writer *w) {
  nng_msg *m = NULL;
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert_msg(tf_wire_finish(w, &m, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(tf_wire_parse(m, &r, &st) == TF_OK, "%s", st.msg);
  return r;
}

/* Finishes w, which must fail with INVALID_ARGUMENT naming want. */
static inline void mt_finish_fails(tf_wire_writer *w, const char *want) {
  nng_msg *m = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_wire_finish(w, &m, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(m);
  ck_assert_msg(strstr(st.msg, want) != NULL, "'%s' does not say '%s'", st.msg, want);
}

/* Same dtype, shape and bytes (strings element by element). */
static inline void mt_same_tensor(const tf_tensor *a, const tf_tensor *b) {
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq(a->dtype, b->dtype);
  ck_assert(tf_shape_equal(&a->shape, &b->shape));
  if (a->dtype != TF_STRING) {
    ck_assert_uint_eq(a->nbytes, b->nbytes);
    ck_assert(a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
  }
  ck_assert(tf_tensor_equal(a, b));
}

/* A tensor of dt and shape with seeded random contents. */
static inline tf_tensor *mt_tensor(tf_dtype dt, tf_shape shape) {
  tf_tensor *t = NULL;
  tf_status st;
  ck_assert_msg(tf_tensor_new(dt, &shape, &t, &st) == TF_OK, "%s", st.msg);
  for (int64_t i = 0; i < t->n; i++) {
    if (dt == TF_STRING) {
      char buf[24];
      size_t len = tt_rand_u64() % sizeof buf;
      for (size_t k = 0; k < len; k++) buf[k] = (char)tt_rand_u64();
      ck_assert(tf_tensor_set_string(t, i, buf, len, &st) == TF_OK);
    } else if (dt == TF_BOOL) {
      ((uint8_t *)t->data)[i] = tt_rand_u64() & 1;
    }
  }
  if (dt != TF_STRING && dt != TF_BOOL) {
    for (size_t k = 0; k < t->nbytes; k++) ((uint8_t *)t->data)[k] = (uint8_t)tt_rand_u64();
  }
  return t;
}

/* The dtypes the round trips cover (every flat kind, strings and bools). */
static const tf_dtype mt_dtypes[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32,  TF_UINT8,
                                     TF_INT16,   TF_INT8,    TF_STRING, TF_COMPLEX64,
                                     TF_INT64,   TF_BOOL,    TF_BFLOAT16, TF_UINT16,
                                     TF_FLOAT16, TF_UINT32,  TF_UINT64};
#define MT_N_DTYPES ((int)(sizeof mt_dtypes / sizeof mt_dtypes[0]))

/* ---- hostile bodies ------------------------------------------------------ */

typedef enum mt_kind {
  MT_DEL,     /* remove the entry (map key or array element) */
  MT_NIL,
  MT_INT,     /* the integer i (negative allowed) */
  MT_HUGE,    /* 2^64 - 1 */
  MT_STR,     /* a str of i bytes 'a' */
  MT_STRNUL,  /* "a\0b" */
  MT_TRUE,
  MT_ARRAY,   /* an array of i nils */
  MT_MAP,     /* {} */
  MT_BIN,     /* 3 bytes */
  MT_DUP,     /* the map entry at path appears twice */
  MT_INTKEY,  /* the map at path gains an entry whose key is the int 1 */
} mt_kind;

typedef struct mt_case {
  const char *path; /* "handle", "args.0", "feeds.1.0", "" (the body) */
  mt_kind kind;
  int64_t i;
  const char *want; /* a substring of the refusal */
} mt_case;

static inline msgpack_object mt_leaf(msgpack_zone *z, mt_kind kind, int64_t i) {
  msgpack_object o = {.type = MSGPACK_OBJECT_NIL};
  if (kind == MT_INT || kind == MT_HUGE) {
    o.type = kind == MT_INT && i < 0 ? MSGPACK_OBJECT_NEGATIVE_INTEGER
                                     : MSGPACK_OBJECT_POSITIVE_INTEGER;
    o.via.i64 = i;
    if (kind == MT_HUGE) o.via.u64 = UINT64_MAX;
  } else if (kind == MT_STR || kind == MT_STRNUL) {
    size_t n = kind == MT_STR ? (size_t)i : 3;
    char *p = msgpack_zone_malloc(z, n + 1);
    memset(p, 'a', n);
    if (kind == MT_STRNUL) memcpy(p, "a\0b", 3);
    o.type = MSGPACK_OBJECT_STR;
    o.via.str.ptr = p;
    o.via.str.size = (uint32_t)n;
  } else if (kind == MT_TRUE) {
    o.type = MSGPACK_OBJECT_BOOLEAN;
    o.via.boolean = true;
  } else if (kind == MT_ARRAY) {
    o.type = MSGPACK_OBJECT_ARRAY;
    o.via.array.size = (uint32_t)i;
    o.via.array.ptr = msgpack_zone_malloc(z, (size_t)i * sizeof(msgpack_object) + 1);
    for (int64_t k = 0; k < i; k++) o.via.array.ptr[k].type = MSGPACK_OBJECT_NIL;
  } else if (kind == MT_MAP) {
    o.type = MSGPACK_OBJECT_MAP;
  } else if (kind == MT_BIN) {
    o.type = MSGPACK_OBJECT_BIN;
    o.via.bin.ptr = "\x01\x02\x03";
    o.via.bin.size = 3;
  }
  return o;
}

/* A copy of o with the entry at path (dot-separated keys and indexes)
 * changed as c says. */
static inline msgpack_object mt_mutate(msgpack_zone *z, const msgpack_object *o,
                                       const char *path, const mt_case *c) {
  char comp[64];
  size_t n = strcspn(path, ".");
  ck_assert_uint_lt(n, sizeof comp);
  memcpy(comp, path, n);
  comp[n] = '\0';
  const char *rest = path[n] == '.' ? path + n + 1 : NULL;
  msgpack_object out = *o;
  bool here = rest == NULL;
  if (o->type == MSGPACK_OBJECT_MAP) {
    uint32_t size = o->via.map.size;
    msgpack_object_kv *kv = msgpack_zone_malloc(z, (size + 2) * sizeof *kv);
    uint32_t k = 0;
    bool found = false;
    for (uint32_t i = 0; i < size; i++) {
      const msgpack_object_kv *e = &o->via.map.ptr[i];
      bool hit = n > 0 && e->key.type == MSGPACK_OBJECT_STR && e->key.via.str.size == n &&
                 memcmp(e->key.via.str.ptr, comp, n) == 0;
      found |= hit;
      if (hit && here && c->kind == MT_DEL) continue;
      kv[k] = *e;
      if (hit && here && c->kind == MT_DUP) kv[++k] = *e;
      else if (hit && here) kv[k].val = mt_leaf(z, c->kind, c->i);
      else if (hit) kv[k].val = mt_mutate(z, &e->val, rest, c);
      k++;
    }
    if (n == 0 && c->kind == MT_INTKEY) {
      kv[k].key = mt_leaf(z, MT_INT, 1);
      kv[k++].val = mt_leaf(z, MT_NIL, 0);
      found = true;
    }
    ck_assert_msg(found, "no key '%s' in the body", comp);
    out.via.map.ptr = kv;
    out.via.map.size = k;
    return out;
  }
  ck_assert_msg(o->type == MSGPACK_OBJECT_ARRAY, "path component '%s' in a %d", comp, o->type);
  uint32_t idx = (uint32_t)atoi(comp), size = o->via.array.size, k = 0;
  ck_assert_uint_lt(idx, size);
  msgpack_object *a = msgpack_zone_malloc(z, (size + 1) * sizeof *a);
  for (uint32_t i = 0; i < size; i++) {
    if (i == idx && here && c->kind == MT_DEL) continue;
    a[k++] = i != idx ? o->via.array.ptr[i]
             : here   ? mt_leaf(z, c->kind, c->i)
                      : mt_mutate(z, &o->via.array.ptr[i], rest, c);
  }
  out.via.array.ptr = a;
  out.via.array.size = k;
  return out;
}

/* Each case applied to the body of valid (a message ops decodes): the
 * decoder must refuse it with INVALID_ARGUMENT naming c->want and leave
 * its struct empty. valid is freed. */
static inline void mt_hostile(const msg_fuzz_ops *ops, tf_wire_msg *valid,
                              const mt_case *cases, int n) {
  const uint8_t *body, *pay;
  size_t blen, plen;
  raw_split(valid->msg, &body, &blen, &pay, &plen);
  for (int i = 0; i < n; i++) {
    const mt_case *c = &cases[i];
    msgpack_zone z;
    ck_assert(msgpack_zone_init(&z, 4096));
    msgpack_object o = mt_mutate(&z, &valid->body, c->path, c);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_object(&pk, o);
    tf_wire_header h = valid->h;
    tf_wire_msg *r = NULL;
    tf_status st;
    ck_assert(tf_wire_parse(raw_build(&h, sb.data, sb.size, pay, plen), &r, &st) == TF_OK);
    void *m = malloc(ops->size);
    tf_code rc = ops->decode(r, m, &st);
    ck_assert_msg(rc == TF_INVALID_ARGUMENT, "case %d (%s): code %d (%s)", i, c->path, rc,
                  rc == TF_OK ? "accepted" : st.msg);
    ck_assert_msg(strstr(st.msg, c->want) != NULL, "case %d (%s): '%s' does not say '%s'",
                  i, c->path, st.msg, c->want);
    ck_assert(msg_fuzz_is_zero(m, ops->size));
    free(m);
    tf_wire_msg_free(r);
    msgpack_sbuffer_destroy(&sb);
    msgpack_zone_destroy(&z);
  }
  tf_wire_msg_free(valid);
}

/* n seeded mutations (byte flips, truncations, inserted bytes) of the body
 * and payloads of valid, each run through the fuzz harness's checks
 * (msg_fuzz_one aborts on a violation). valid is freed. Returns how many
 * decoded. */
static inline int mt_flips(const msg_fuzz_ops *ops, tf_wire_msg *valid, int n) {
  const uint8_t *body, *pay;
  size_t blen, plen;
  raw_split(valid->msg, &body, &blen, &pay, &plen);
  size_t len = blen + plen;
  uint8_t *orig = malloc(len + 1), *buf = malloc(len + 9);
  memcpy(orig, body, blen);
  memcpy(orig + blen, pay, plen);
  int ok = 0;
  for (int k = 0; k < n; k++) {
    memcpy(buf, orig, len);
    size_t cur = len;
    int edits = 1 + (int)(tt_rand_u64() % 3);
    for (int e = 0; e < edits && cur > 0; e++) {
      size_t at = tt_rand_u64() % cur;
      uint64_t kind = tt_rand_u64() % 4;
      if (kind == 0) {
        buf[at] ^= (uint8_t)(1u << (tt_rand_u64() % 8));
      } else if (kind == 1) {
        buf[at] = (uint8_t)tt_rand_u64();
      } else if (kind == 2) {
        cur = at; /* truncate */
      } else {
        static const uint8_t marks[] = {0xc0, 0xcc, 0xcf, 0xd3, 0xdc, 0xff, 0x00, 0x7f};
        buf[at] = marks[tt_rand_u64() % sizeof marks];
      }
    }
    ok += msg_fuzz_one(ops, buf, cur);
  }
  ck_assert(msg_fuzz_one(ops, orig, len)); /* the valid body itself */
  free(orig);
  free(buf);
  tf_wire_msg_free(valid);
  return ok;
}

/* The body bytes of r. */
static inline void mt_body_bytes(const tf_wire_msg *r, const uint8_t **b, size_t *n) {
  const uint8_t *pay;
  size_t plen;
  raw_split(r->msg, b, n, &pay, &plen);
}

/* r's body equals the bytes packed in sb (the layout docs/wire.md lists). */
static inline void mt_same_bytes(const tf_wire_msg *r, const msgpack_sbuffer *sb) {
  const uint8_t *b;
  size_t n;
  mt_body_bytes(r, &b, &n);
  ck_assert_uint_eq(n, sb->size);
  ck_assert(memcmp(b, sb->data, n) == 0);
}

#endif
