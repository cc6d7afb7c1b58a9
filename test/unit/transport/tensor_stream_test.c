/* Tests for the tensor stream (lib/transport/tensor_stream.h), the
 * working paths: the frame codec (prefix and header round trips, every
 * rejection named), the checks a sender makes, bad options and URLs, round
 * trips of every numeric dtype over loopback TCP (scalar, empty and
 * multi-dimensional shapes, bytes compared), dead values, 2,000 frames in
 * order on one connection, 8 threads sharing a client, 4 clients on 4
 * threads into one server (each client's order kept), and a 256 MiB tensor
 * checked element by element. The failure paths are in
 * tensor_stream_faults_test.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/msgpack_map.h"
#include "test/unit/transport/tstream_testlib.h"

/* ---- codec -------------------------------------------------------------- */

START_TEST(test_prefix_round_trip_and_rejections) {
  uint8_t p[TF__TSTREAM_PREFIX_BYTES];
  tf__tstream_prefix got;
  tf_status st;
  tf__tstream_prefix_write(p, 300, 0x0102030405ull);
  ck_assert(memcmp(p, "TFT\x01\x2c\x01\x00\x00\x05\x04\x03\x02\x01\x00\x00\x00", 16) == 0);
  ck_assert_int_eq(tf__tstream_prefix_read(p, 1ull << 40, &got, &st), TF_OK);
  ck_assert_uint_eq(got.header_len, 300);
  ck_assert_uint_eq(got.payload_len, 0x0102030405ull);
  ck_assert_int_eq(tf__tstream_prefix_read(p, 100, &got, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "payload length 4328719365 is over the limit of 100 bytes");
  tf__tstream_prefix_write(p, 0, 0);
  ck_assert_int_eq(tf__tstream_prefix_read(p, 100, &got, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "header length 0 is not in 1..65536");
  tf__tstream_prefix_write(p, UINT32_MAX, 0);
  ck_assert_int_eq(tf__tstream_prefix_read(p, 100, &got, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "header length 4294967295 is not in 1..65536");
  tf__tstream_prefix_write(p, 10, 0);
  p[3] = 2;
  ck_assert_int_eq(tf__tstream_prefix_read(p, 100, &got, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "unsupported version 2 (this build speaks 1)");
  p[0] = 'X';
  ck_assert_int_eq(tf__tstream_prefix_read(p, 100, &got, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "bad magic 58 46 54 (want \"TFT\")");
}
END_TEST

START_TEST(test_header_round_trip) {
  tf_tensor *t = NULL;
  tf_status st;
  tf_shape sh = tf_shape_of(3, 2, 0, 5);
  ck_assert_int_eq(tf_tensor_new(TF_INT16, &sh, &t, &st), TF_OK);
  tf_tstream_hdr h = hdr(UINT64_MAX, "a;b;c:0;0:0");
  void *b = NULL;
  size_t n = 0;
  ck_assert_int_eq(tf__tstream_header_pack(&h, t, &b, &n, &st), TF_OK);
  tf__tstream_decoded d;
  ck_assert_int_eq(tf__tstream_header_decode(b, n, 0, &d, &st), TF_OK);
  ck_assert_uint_eq(d.h.step_id, UINT64_MAX);
  ck_assert_str_eq(d.h.key, "a;b;c:0;0:0");
  ck_assert_str_eq(d.h.from, PEER);
  ck_assert_str_eq(d.h.to, SELF);
  ck_assert_uint_eq(d.h.from_inc, 7);
  ck_assert_uint_eq(d.h.to_inc, SELF_INC);
  ck_assert(!d.h.is_dead);
  ck_assert_int_eq(d.h.dtype, TF_INT16);
  ck_assert(tf_shape_equal(&d.h.shape, &sh));
  /* The same header against a payload it does not describe. */
  tf__tstream_decoded_fini(&d);
  ck_assert_int_eq(tf__tstream_header_decode(b, n, 2, &d, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "header: int16[2,0,5] is 0 bytes, the payload length is 2");
  ck_assert(d.strs == NULL);
  free(b);
  tf_tensor_unref(t);
  tf__tstream_decoded_fini(NULL);
}
END_TEST

/* Packs a header map from a list of (key, kind, value) entries. */
typedef struct kv {
  const char *k;
  char kind; /* u: uint, i: negative int, s: str, b: bool, a: array of uint, n: nil */
  int64_t v;
  const char *s;
} kv;

static size_t pack_map(const kv *e, int n, char **out) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, (size_t)n);
  for (int i = 0; i < n; i++) {
    msgpack_pack_str_with_body(&pk, e[i].k, strlen(e[i].k));
    switch (e[i].kind) {
      case 'u': msgpack_pack_uint64(&pk, (uint64_t)e[i].v); break;
      case 'i': msgpack_pack_int64(&pk, e[i].v); break;
      case 's': msgpack_pack_str_with_body(&pk, e[i].s, (size_t)e[i].v); break;
      case 'b': e[i].v ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk); break;
      case 'n': msgpack_pack_nil(&pk); break;
      default:
        msgpack_pack_array(&pk, (size_t)e[i].v);
        for (int64_t j = 0; j < e[i].v; j++) {
          msgpack_pack_uint64(&pk, e[i].s ? (uint64_t)INT64_MAX : 3);
        }
    }
  }
  *out = sb.data;
  return sb.size;
}

START_TEST(test_header_rejections) {
  /* A valid float32[3] header, then one field changed per case. */
  kv base[9] = {{"step", 'u', 1}, {"key", 's', 1, "k"}, {"dead", 'b', 0},
                {"dt", 'u', 1}, {"shape", 'a', 1}, {"from", 's', 0, ""},
                {"from_inc", 'u', 0}, {"to", 's', 1, "t"}, {"to_inc", 'u', 0}};
  struct {
    int field;   /* which entry to replace (-1: none, 9: append) */
    kv with;
    uint64_t payload;
    int n;       /* entries packed */
    const char *want;
  } cases[] = {
      {-1, {0}, 12, 9, NULL},
      {-1, {0}, 12, 8, "header: field 'to_inc' missing"},
      {9, {"step", 'u', 2}, 12, 10, "header: field 'step' appears twice"},
      {9, {"extra", 'u', 2}, 12, 10, "header: entry 9: unknown key (a str)"},
      {0, {"step", 'i', -1}, 12, 9, "header: field 'step' is a int, not an unsigned integer"},
      {1, {"key", 's', 0, ""}, 12, 9, "header: field 'key' is empty"},
      {1, {"key", 's', 3, "a\0b"}, 12, 9, "header: field 'key' holds a NUL byte"},
      {7, {"to", 'n', 0}, 12, 9, "header: field 'to' is a nil, not a string"},
      {2, {"dead", 'u', 1}, 12, 9, "header: field 'dead' is a int, not a bool"},
      {3, {"dt", 'u', 7}, 12, 9, "header: dt 7 is not a numeric or bool dtype"},
      {3, {"dt", 'u', 1000}, 12, 9, "header: dt 1000 is not a numeric or bool dtype"},
      {3, {"dt", 'u', 0}, 12, 9, "header: dt 0 is not a numeric or bool dtype"},
      {4, {"shape", 'a', 9}, 12, 9, "header: shape of rank 9 (at most 8)"},
      {4, {"shape", 'a', 2, "big"}, 12, 9, "header: shape [9223372036854775807,9223372036854775807] has more elements than fit in int64"},
      {4, {"shape", 'n', 0}, 12, 9, "header: field 'shape' is a nil, not an array"},
      {-1, {0}, 16, 9, "header: float32[3] is 12 bytes, the payload length is 16"},
      {2, {"dead", 'b', 1}, 12, 9, "header: a dead value with dt 1, shape [3] and a 12-byte payload (want 0, [] and none)"},
  };
  for (size_t i = 0; i < N_OF(cases); i++) {
    kv e[10];
    memcpy(e, base, sizeof base);
    if (cases[i].field >= 0) {
      e[cases[i].field] = cases[i].with;
    }
    char *b = NULL;
    size_t n = pack_map(e, cases[i].n, &b);
    tf__tstream_decoded d;
    tf_status st;
    tf_status_init(&st);
    tf_code c = tf__tstream_header_decode(b, n, cases[i].payload, &d, &st);
    if (cases[i].want == NULL) {
      ck_assert_msg(c == TF_OK, "case %zu: %s", i, st.msg);
      tf__tstream_decoded_fini(&d);
    } else {
      ck_assert_msg(c == TF_INVALID_ARGUMENT, "case %zu accepted", i);
      ck_assert_msg(strstr(st.msg, cases[i].want) != NULL, "case %zu: '%s'", i, st.msg);
      ck_assert(d.strs == NULL);
    }
    free(b);
  }
  /* Not msgpack, and a map cut short. */
  tf__tstream_decoded d;
  tf_status st;
  ck_assert_int_eq(tf__tstream_header_decode("\xc1", 1, 0, &d, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strncmp(st.msg, "header: ", 8) == 0, "%s", st.msg);
  ck_assert_int_eq(tf__tstream_header_decode("\x89\xa4step", 6, 0, &d, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "declares 18 elements but only 5 bytes follow"), "%s", st.msg);
  ck_assert_int_eq(tf__tstream_header_decode("\x93\x01\x02\x03", 4, 0, &d, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "header: a array, not a map");
}
END_TEST

START_TEST(test_send_side_checks) {
  sink k;
  sink_init(&k, false);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_client *c = client_for(s, NULL);
  tf_status st;
  tf_tensor *f = tf_tensor_scalar_f32(1);
  tf_tensor *str = NULL;
  tf_shape one = tf_shape_of(1, 1);
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &one, &str, &st), TF_OK);
  tf_tstream_hdr h = hdr(1, "k");
  ck_assert_int_eq(send_sync(c, &h, str, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "key 'k': string tensors are not carried by the tensor stream"), "%s", st.msg);
  ck_assert_msg(strstr(st.msg, tf_tstream_server_url(s)), "%s", st.msg);
  ck_assert_int_eq(send_sync(c, &h, NULL, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "a live value needs a tensor"), "%s", st.msg);
  h.is_dead = true;
  ck_assert_int_eq(send_sync(c, &h, f, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "a dead value carries no tensor"), "%s", st.msg);
  h = hdr(1, "");
  ck_assert_int_eq(send_sync(c, &h, f, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "the rendezvous key is empty"), "%s", st.msg);
  h = hdr(1, "k");
  h.to = NULL;
  ck_assert_int_eq(send_sync(c, &h, f, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "the receiving task (to) is empty"), "%s", st.msg);
  tf_tstream_client_free(c);
  tf_tstream_server_stop(s);
  ck_assert_int_eq(k.n, 0);
  tf_tensor_unref(f);
  tf_tensor_unref(str);
  sink_fini(&k);
}
END_TEST

START_TEST(test_bad_options_and_urls) {
  sink k;
  sink_init(&k, false);
  tf_status st;
  tf_tstream_server *s = (tf_tstream_server *)1;
  tf_tstream_server_opts o = server_opts(&k);
  o.url = "tls+tcp://127.0.0.1:0";
  ck_assert_int_eq(tf_tstream_server_start(&o, deliver, &k, &s, &st), TF_FAILED_PRECONDITION);
  ck_assert_str_eq(st.msg, "cannot listen on tls+tcp://127.0.0.1:0: no TLS configuration "
                   "(the cluster spec's tls: section, or --cert for tfctl)");
  ck_assert(s == NULL);
  o.url = "ipc:///tmp/x";
  ck_assert_int_eq(tf_tstream_server_start(&o, deliver, &k, &s, &st), TF_UNIMPLEMENTED);
  o = server_opts(&k);
  o.max_tensor_bytes = 0;
  ck_assert_int_eq(tf_tstream_server_start(&o, deliver, &k, &s, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "tensor stream server on tcp://127.0.0.1:0: max_tensor_bytes must be > 0");
  o = server_opts(&k);
  o.self_task = "";
  ck_assert_int_eq(tf_tstream_server_start(&o, deliver, &k, &s, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "self_task must name this task"), "%s", st.msg);
  o = server_opts(&k);
  o.idle_ms = 0;
  ck_assert_int_eq(tf_tstream_server_start(&o, deliver, &k, &s, &st), TF_INVALID_ARGUMENT);
  /* A port in use. */
  o = server_opts(&k);
  tf_tstream_server *a = start_server(&o, &k);
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", tf_tstream_server_port(a));
  ck_assert_str_eq(tf_tstream_server_url(a), url);
  o.url = url;
  ck_assert_int_eq(tf_tstream_server_start(&o, deliver, &k, &s, &st), TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, "cannot listen on ") && strstr(st.msg, url), "%s", st.msg);
  tf_tstream_server_stop(a);
  tf_tstream_server_stop(NULL);
  tf_tstream_client *c = (tf_tstream_client *)1;
  ck_assert_int_eq(tf_tstream_client_new("inproc://x", NULL, &c, &st), TF_UNIMPLEMENTED);
  ck_assert_str_eq(st.msg, "cannot dial inproc://x: the tensor stream supports only tcp:// and tls+tcp:// URLs");
  ck_assert(c == NULL);
  ck_assert_int_eq(tf_tstream_client_new(NULL, NULL, &c, &st), TF_INVALID_ARGUMENT);
  tf_tstream_client_opts co = tf_tstream_client_opts_default();
  co.max_connections = 0;
  ck_assert_int_eq(tf_tstream_client_new("tcp://127.0.0.1:1", &co, &c, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "tensor stream client for tcp://127.0.0.1:1: max_connections must be > 0");
  tf_tstream_client_free(NULL);
  sink_fini(&k);
}
END_TEST

/* ---- round trips -------------------------------------------------------- */

static const tf_dtype NUMERIC[] = {
    TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_UINT8, TF_INT16, TF_INT8,
    TF_COMPLEX64, TF_INT64, TF_BOOL, TF_BFLOAT16, TF_UINT16, TF_FLOAT16,
    TF_UINT32, TF_UINT64};

START_TEST(test_round_trip_every_dtype_and_shape) {
  tt_rng_reseed(tt_seed() ^ 0x75);
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_client *c = client_for(s, NULL);
  const tf_shape shapes[] = {tf_shape_scalar(), tf_shape_of(1, 0), tf_shape_of(1, 7),
                             tf_shape_of(3, 3, 0, 2), tf_shape_of(3, 2, 3, 5),
                             tf_shape_of(8, 1, 2, 1, 2, 1, 2, 1, 3)};
  int n_dt = (int)N_OF(NUMERIC), n_sh = (int)N_OF(shapes);
  tf_tensor *sent[96];
  for (int i = 0; i < n_dt * n_sh; i++) {
    tf_status st;
    ck_assert_int_eq(tf_tensor_new(NUMERIC[i / n_sh], &shapes[i % n_sh], &sent[i], &st), TF_OK);
    fill_random(sent[i]);
    char key[32];
    snprintf(key, sizeof key, "edge_%d;0:0", i);
    tf_tstream_hdr h = hdr(1000 + (uint64_t)i, key);
    ck_assert_msg(send_sync(c, &h, sent[i], &st) == TF_OK, "%s", st.msg);
  }
  sink_wait(&k, n_dt * n_sh);
  /* One connection at a time was needed: frames arrive in send order. */
  for (int i = 0; i < n_dt * n_sh; i++) {
    got *g = &k.v[i];
    char key[32], a[256], b[256];
    snprintf(key, sizeof key, "edge_%d;0:0", i);
    ck_assert_str_eq(g->key, key);
    ck_assert_uint_eq(g->step, 1000 + (uint64_t)i);
    ck_assert_str_eq(g->from, PEER);
    ck_assert_str_eq(g->to, SELF);
    ck_assert_uint_eq(g->from_inc, 7);
    ck_assert_uint_eq(g->to_inc, SELF_INC);
    ck_assert(!g->dead);
    ck_assert_int_eq(g->dtype, sent[i]->dtype);
    ck_assert(tf_shape_equal(&g->shape, &sent[i]->shape));
    ck_assert_msg(tf_tensor_equal(g->t, sent[i]), "%s vs %s",
                  tf_tensor_str(g->t, a, sizeof a), tf_tensor_str(sent[i], b, sizeof b));
    ck_assert(g->t->data != sent[i]->data);
    tf_tensor_unref(sent[i]);
  }
  tf_tstream_server_stats x = stats_frames(s, (uint64_t)(n_dt * n_sh));
  ck_assert_uint_eq(x.frames, (uint64_t)(n_dt * n_sh));
  ck_assert_uint_eq(x.bad_frames + x.broken + x.wrong_task + x.deliver_errors, 0);
  tf_tstream_client_free(c);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

START_TEST(test_dead_values) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_client *c = client_for(s, NULL);
  tf_tstream_hdr h = hdr(5, "dead_one");
  h.is_dead = true;
  tf_status st;
  ck_assert_msg(send_sync(c, &h, NULL, &st) == TF_OK, "%s", st.msg);
  tf_tensor *f = tf_tensor_scalar_f64(2.5);
  h = hdr(5, "live_one");
  ck_assert_msg(send_sync(c, &h, f, &st) == TF_OK, "%s", st.msg);
  sink_wait(&k, 2);
  ck_assert(k.v[0].dead);
  ck_assert(k.v[0].t == NULL);
  ck_assert_int_eq(k.v[0].dtype, TF_DTYPE_INVALID);
  ck_assert_int_eq(k.v[0].shape.rank, 0);
  ck_assert_str_eq(k.v[0].key, "dead_one");
  ck_assert(!k.v[1].dead);
  ck_assert(tf_tensor_equal(k.v[1].t, f));
  tf_tensor_unref(f);
  tf_tstream_client_free(c);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

/* 2,000 frames queued at once on a one-connection client arrive in order
 * over one connection. */
static atomic_int many_done, many_fail;

static void many_cb(void *arg, const tf_status *st) {
  atomic_fetch_add(&many_done, 1);
  if (st->code != TF_OK) {
    atomic_fetch_add(&many_fail, 1);
  }
}

START_TEST(test_many_frames_on_one_connection) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_client_opts co = tf_tstream_client_opts_default();
  co.max_connections = 1;
  co.max_queued = 4096;
  tf_tstream_client *c = client_for(s, &co);
  enum { N = 2000 };
  for (int i = 0; i < N; i++) {
    int32_t v[3] = {i, -i, i * 7};
    tf_tensor *t = tf_tensor_vec_i32(3, v);
    tf_tstream_hdr h = hdr((uint64_t)i, "seq");
    tf_tstream_send(c, &h, t, many_cb, NULL);
    tf_tensor_unref(t); /* the client holds its own reference */
  }
  sink_wait(&k, N);
  for (int i = 0; i < N; i++) {
    ck_assert_uint_eq(k.v[i].step, (uint64_t)i);
    const int32_t *d = k.v[i].t->data;
    ck_assert(d[0] == i && d[1] == -i && d[2] == i * 7);
  }
  tf_tstream_client_free(c);
  ck_assert_int_eq(atomic_load(&many_done), N);
  ck_assert_int_eq(atomic_load(&many_fail), 0);
  tf_tstream_server_stats x = stats_frames(s, N);
  ck_assert_uint_eq(x.accepted, 1);
  ck_assert_uint_eq(x.frames, N);
  ck_assert_uint_eq(x.payload_bytes, (uint64_t)N * 12);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

/* 8 threads share one client; every frame's bytes are a function of its
 * (thread, index), checked by the receiver. */
typedef struct sender_arg {
  tf_tstream_client *c;
  int id;
} sender_arg;

enum { SENDERS = 8, PER_SENDER = 60 };

static uint8_t pattern(int id, int i, size_t j) {
  return (uint8_t)((uint32_t)(id * 131 + i * 17) * 2654435761u >> 24 ^ (j * 40503u >> 5));
}

static size_t frame_len(int id, int i) {
  return (size_t)((id * 7919 + i * 104729) % 300000);
}

static void *sender_main(void *arg) {
  sender_arg *a = arg;
  for (int i = 0; i < PER_SENDER; i++) {
    size_t n = frame_len(a->id, i);
    tf_shape sh = tf_shape_of(1, n);
    tf_tensor *t = NULL;
    if (tf_tensor_new(TF_UINT8, &sh, &t, NULL) != TF_OK) {
      abort();
    }
    uint8_t *b = t->data;
    for (size_t j = 0; j < n; j++) {
      b[j] = pattern(a->id, i, j);
    }
    char key[32];
    snprintf(key, sizeof key, "%d/%d", a->id, i);
    tf_tstream_hdr h = hdr((uint64_t)a->id, key);
    tf_tstream_send(a->c, &h, t, many_cb, NULL);
    tf_tensor_unref(t);
  }
  return NULL;
}

START_TEST(test_eight_threads_send_at_once) {
  atomic_store(&many_done, 0);
  atomic_store(&many_fail, 0);
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_client *c = client_for(s, NULL);
  pthread_t th[SENDERS];
  sender_arg args[SENDERS];
  for (int i = 0; i < SENDERS; i++) {
    args[i] = (sender_arg){c, i};
    pthread_create(&th[i], NULL, sender_main, &args[i]);
  }
  for (int i = 0; i < SENDERS; i++) {
    pthread_join(th[i], NULL);
  }
  sink_wait(&k, SENDERS * PER_SENDER);
  bool seen[SENDERS][PER_SENDER] = {{false}};
  for (int f = 0; f < k.n; f++) {
    int id = -1, i = -1;
    ck_assert_int_eq(sscanf(k.v[f].key, "%d/%d", &id, &i), 2);
    ck_assert(id >= 0 && id < SENDERS && i >= 0 && i < PER_SENDER && !seen[id][i]);
    seen[id][i] = true;
    ck_assert_uint_eq(k.v[f].step, (uint64_t)id);
    const tf_tensor *t = k.v[f].t;
    ck_assert_uint_eq(t->nbytes, frame_len(id, i));
    const uint8_t *b = t->data;
    size_t j = 0;
    while (j < t->nbytes && b[j] == pattern(id, i, j)) {
      j++;
    }
    ck_assert_msg(j == t->nbytes, "frame %s: byte %zu differs", k.v[f].key, j);
  }
  tf_tstream_client_free(c);
  ck_assert_int_eq(atomic_load(&many_done), SENDERS * PER_SENDER);
  ck_assert_int_eq(atomic_load(&many_fail), 0);
  tf_tstream_server_stats x = tf_tstream_server_stats_get(s);
  ck_assert_uint_le(x.accepted, 2); /* the client's connection cap */
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

START_TEST(test_256_mib_tensor) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  o.max_tensor_bytes = 512ull << 20;
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_client *c = client_for(s, NULL);
  const int64_t n = 64ll << 20; /* float32: 256 MiB */
  tf_shape sh = tf_shape_of(2, n / 1024, 1024);
  tf_tensor *t = NULL;
  tf_status st;
  ck_assert_int_eq(tf_tensor_new(TF_FLOAT32, &sh, &t, &st), TF_OK);
  float *d = t->data;
  for (int64_t i = 0; i < n; i++) {
    d[i] = (float)(i % 16777216) * ((i & 1) ? -0.5f : 0.25f);
  }
  tf_tstream_hdr h = hdr(9, "big");
  ck_assert_msg(send_sync(c, &h, t, &st) == TF_OK, "%s", st.msg);
  sink_wait(&k, 1);
  const tf_tensor *r = k.v[0].t;
  ck_assert(tf_shape_equal(&r->shape, &sh));
  const float *e = r->data;
  for (int64_t i = 0; i < n; i++) {
    float want = (float)(i % 16777216) * ((i & 1) ? -0.5f : 0.25f);
    if (e[i] != want) {
      ck_abort_msg("element %lld is %g, want %g", (long long)i, e[i], want);
    }
  }
  ck_assert_uint_eq(stats_frames(s, 1).payload_bytes, 256ull << 20);
  tf_tensor_unref(t);
  tf_tstream_client_free(c);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

/* Several streams at once: 4 clients on 4 threads, each with one
 * connection, send 25 frames of up to 512 KiB to one server. Every
 * frame's bytes are checked, and each client's frames arrive in its
 * order (one connection, one server thread each). */
enum { CLIENTS = 4, PER_CLIENT = 25 };

typedef struct client_arg {
  const char *url;
  int id;
  atomic_int done, failed;
} client_arg;

static void client_cb(void *arg, const tf_status *st) {
  client_arg *a = arg;
  if (st->code != TF_OK) {
    atomic_fetch_add(&a->failed, 1);
  }
  atomic_fetch_add(&a->done, 1);
}

static void *client_main(void *arg) {
  client_arg *a = arg;
  tf_tstream_client_opts co = tf_tstream_client_opts_default();
  co.max_connections = 1;
  tf_tstream_client *c = NULL;
  if (tf_tstream_client_new(a->url, &co, &c, NULL) != TF_OK) {
    abort();
  }
  for (int i = 0; i < PER_CLIENT; i++) {
    size_t n = (size_t)((a->id * 7919 + i * 104729) % (512 * 1024));
    tf_shape sh = tf_shape_of(1, n);
    tf_tensor *t = NULL;
    if (tf_tensor_new(TF_UINT8, &sh, &t, NULL) != TF_OK) {
      abort();
    }
    uint8_t *b = t->data;
    for (size_t j = 0; j < n; j++) {
      b[j] = pattern(a->id + 100, i, j);
    }
    char key[32];
    snprintf(key, sizeof key, "%d/%d", a->id, i);
    tf_tstream_hdr h = hdr((uint64_t)a->id, key);
    tf_tstream_send(c, &h, t, client_cb, a);
    tf_tensor_unref(t);
  }
  /* Freeing fails what is still queued: wait for the dones first. */
  for (int64_t end = now_ms() + WAIT_MS;
       atomic_load(&a->done) < PER_CLIENT && now_ms() < end;) {
    sleep_ms(2);
  }
  tf_tstream_client_free(c);
  return NULL;
}

START_TEST(test_several_clients_at_once) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  pthread_t th[CLIENTS];
  client_arg args[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    args[i] = (client_arg){.url = tf_tstream_server_url(s), .id = i};
    pthread_create(&th[i], NULL, client_main, &args[i]);
  }
  for (int i = 0; i < CLIENTS; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(atomic_load(&args[i].done), PER_CLIENT);
    ck_assert_int_eq(atomic_load(&args[i].failed), 0);
  }
  sink_wait(&k, CLIENTS * PER_CLIENT);
  int next[CLIENTS] = {0};
  for (int f = 0; f < k.n; f++) {
    int id = -1, i = -1;
    ck_assert_int_eq(sscanf(k.v[f].key, "%d/%d", &id, &i), 2);
    ck_assert(id >= 0 && id < CLIENTS);
    ck_assert_msg(i == next[id], "client %d: frame %d arrived, want %d", id, i, next[id]);
    next[id]++;
    const tf_tensor *t = k.v[f].t;
    const uint8_t *b = t->data;
    size_t j = 0;
    while (j < t->nbytes && b[j] == pattern(id + 100, i, j)) {
      j++;
    }
    ck_assert_msg(j == t->nbytes, "frame %s: byte %zu differs", k.v[f].key, j);
  }
  tf_tstream_server_stats x = stats_frames(s, CLIENTS * PER_CLIENT);
  ck_assert_uint_eq(x.accepted, CLIENTS);
  ck_assert_uint_eq(x.frames, CLIENTS * PER_CLIENT);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("tensor_stream");
  TCase *tc = tcase_create("codec");
  tcase_add_test(tc, test_prefix_round_trip_and_rejections);
  tcase_add_test(tc, test_header_round_trip);
  tcase_add_test(tc, test_header_rejections);
  tcase_add_test(tc, test_send_side_checks);
  tcase_add_test(tc, test_bad_options_and_urls);
  suite_add_tcase(s, tc);
  tc = tcase_create("round_trip");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_round_trip_every_dtype_and_shape);
  tcase_add_test(tc, test_dead_values);
  tcase_add_test(tc, test_many_frames_on_one_connection);
  tcase_add_test(tc, test_eight_threads_send_at_once);
  tcase_add_test(tc, test_256_mib_tensor);
  tcase_add_test(tc, test_several_clients_at_once);
  suite_add_tcase(s, tc);
  return s;
}
