/* Tests for the .npy codec: exact header bytes, C round trips of every
 * supported dtype (rank 0, empty and random shapes), interop with numpy in
 * both directions (/usr/bin/python3; skipped with a message when numpy is
 * missing), and hostile input: truncation at every offset, seeded byte
 * flips, malformed headers, unsupported descrs, huge declared sizes.
 * Comparisons are exact (bitwise). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/unit/core/serialize/serialize_testlib.h"

static const tf_dtype npy_dtypes[] = {
    TF_FLOAT16, TF_FLOAT32, TF_FLOAT64, TF_INT8,   TF_INT16,
    TF_INT32,   TF_INT64,   TF_UINT8,   TF_UINT16, TF_UINT32,
    TF_UINT64,  TF_BOOL,    TF_COMPLEX64};
#define N_NPY ((int)(sizeof npy_dtypes / sizeof *npy_dtypes))

static bool have_numpy(void) {
  return access("/usr/bin/python3", X_OK) == 0 &&
         system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

START_TEST(test_header_bytes) {
  tf_tensor *t = tf_tensor_vec_f32(6, (float[]){0, 1, 2, 3, 4, 5});
  tf_tensor *v;
  tf_status st;
  ck_assert(tf_tensor_view(t, &(tf_shape){.rank = 2, .dims = {2, 3}}, &v,
                           &st) == TF_OK);
  void *buf;
  size_t len;
  ck_assert(tf_tensor_to_npy(v, &buf, &len, &st) == TF_OK);
  const unsigned char *p = buf;
  ck_assert(memcmp(p, "\x93NUMPY\x01\x00", 8) == 0);
  size_t hlen = p[8] | (size_t)p[9] << 8;
  ck_assert_uint_eq((10 + hlen) % 64, 0);
  ck_assert_uint_eq(len, 10 + hlen + 24);
  const char *dict = "{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (2, 3), }";
  ck_assert(memcmp(p + 10, dict, strlen(dict)) == 0);
  for (size_t i = 10 + strlen(dict); i < 10 + hlen - 1; i++) {
    ck_assert_int_eq(p[i], ' ');
  }
  ck_assert_int_eq(p[10 + hlen - 1], '\n');
  ck_assert(memcmp(p + 10 + hlen, t->data, 24) == 0);
  free(buf);
  /* rank 1 and rank 0 spell their tuples as Python does */
  ck_assert(tf_tensor_to_npy(t, &buf, &len, &st) == TF_OK);
  ck_assert_ptr_nonnull(memmem(buf, len, "'shape': (6,), }", 16));
  free(buf);
  tf_tensor *s = tf_tensor_scalar_bool(true);
  ck_assert(tf_tensor_to_npy(s, &buf, &len, &st) == TF_OK);
  ck_assert_ptr_nonnull(memmem(buf, len, "{'descr': '|b1', 'fortran_order': "
                               "False, 'shape': (), }", 52));
  free(buf);
  tf_tensor_unref(s);
  tf_tensor_unref(v);
  tf_tensor_unref(t);
}
END_TEST

START_TEST(test_round_trip_every_dtype) {
  for (int rep = 0; rep < 10; rep++) {
    for (int k = 0; k < N_NPY; k++) {
      tf_shape shape = rep == 0 ? tf_shape_scalar()
                       : rep == 1 ? tf_shape_of(3, 2, 0, 4)
                                  : st_rand_shape();
      tf_tensor *t = st_rand_tensor(npy_dtypes[k], shape, true), *back;
      void *buf;
      size_t len;
      tf_status st;
      ck_assert(tf_tensor_to_npy(t, &buf, &len, &st) == TF_OK);
      ck_assert_msg(tf_tensor_from_npy(buf, len, &back, &st) == TF_OK, "%s",
                    st.msg);
      ck_assert(tf_tensor_equal(t, back));
      free(buf);
      tf_tensor_unref(t);
      tf_tensor_unref(back);
    }
  }
}
END_TEST

START_TEST(test_unsupported_dtypes_on_write) {
  tf_status st;
  void *buf;
  size_t len;
  tf_tensor *s = st_string_tensor(tf_shape_of(1, 1), (const char *[]){"x"});
  ck_assert_int_eq(tf_tensor_to_npy(s, &buf, &len, &st), TF_UNIMPLEMENTED);
  ck_assert_ptr_nonnull(strstr(st.msg, "string"));
  tf_tensor *b = st_rand_tensor(TF_BFLOAT16, tf_shape_of(1, 2), true);
  ck_assert_int_eq(tf_tensor_to_npy(b, &buf, &len, &st), TF_UNIMPLEMENTED);
  ck_assert_ptr_nonnull(strstr(st.msg, "bfloat16"));
  ck_assert_int_eq(tf_tensor_save_npy(b, "/tmp/never.npy", &st),
                   TF_UNIMPLEMENTED);
  ck_assert_ptr_nonnull(strstr(st.msg, "/tmp/never.npy"));
  tf_tensor_unref(s);
  tf_tensor_unref(b);
}
END_TEST

/* Writes file dir/name from C. */
static void save(const char *dir, const char *name, const tf_tensor *t) {
  char path[512];
  tf_status st;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  ck_assert_msg(tf_tensor_save_npy(t, path, &st) == TF_OK, "%s", st.msg);
}

static void run_python(const char *dir, const char *script) {
  char path[512], cmd[1024];
  snprintf(path, sizeof path, "%s/check.py", dir);
  FILE *f = fopen(path, "w");
  ck_assert(f != NULL);
  fputs(script, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cd %s && /usr/bin/python3 check.py", dir);
  ck_assert_msg(system(cmd) == 0, "python check failed (files in %s)", dir);
}

/* C writes deterministic arange-like tensors of every dtype; numpy checks
 * descr, shape and every value against its own computation, and a random
 * tensor's raw bytes against a raw dump C also wrote. */
START_TEST(test_numpy_reads_ours) {
  if (!have_numpy()) {
    fprintf(stderr, "numpy not available: interop test skipped\n");
    return;
  }
  char dir[] = "/tmp/npy_test_XXXXXX";
  ck_assert(mkdtemp(dir) != NULL);
  for (int k = 0; k < N_NPY; k++) {
    tf_shape shape = tf_shape_of(3, 2, 3, 2);
    double vals[12];
    for (int i = 0; i < 12; i++) {
      vals[i] = npy_dtypes[k] == TF_BOOL ? (i % 3 == 0) : i * 3 - 7;
      if (!tf_dtype_is_signed(npy_dtypes[k]) && npy_dtypes[k] != TF_BOOL &&
          npy_dtypes[k] != TF_COMPLEX64) {
        vals[i] = i * 3 + 1;
      }
    }
    tf_tensor *t = tt_tensor(npy_dtypes[k], shape, vals);
    char name[64];
    snprintf(name, sizeof name, "a%d.npy", k);
    save(dir, name, t);
    tf_tensor_unref(t);
    tf_tensor *r = st_rand_tensor(npy_dtypes[k], st_rand_shape(), true);
    snprintf(name, sizeof name, "r%d.npy", k);
    save(dir, name, r);
    char path[512];
    snprintf(path, sizeof path, "%s/r%d.raw", dir, k);
    FILE *f = fopen(path, "wb");
    ck_assert(f != NULL);
    ck_assert_uint_eq(fwrite(r->data, 1, r->nbytes, f), r->nbytes);
    fclose(f);
    tf_tensor_unref(r);
  }
  char script[2048];
  snprintf(script, sizeof script,
           "import numpy as np\n"
           "descrs = %s\n"
           "for k, d in enumerate(descrs):\n"
           "    a = np.load('a%%d.npy' %% k)\n"
           "    assert a.dtype.str == d, (k, a.dtype.str, d)\n"
           "    assert a.shape == (2, 3, 2) and a.flags.c_contiguous\n"
           "    i = np.arange(12)\n"
           "    want = (i %% 3 == 0) if d == '|b1' else "
           "(i * 3 + 1 if d[1] == 'u' else i * 3 - 7)\n"
           "    assert np.array_equal(a.ravel(), want.astype(d)), (k, a)\n"
           "    r = np.load('r%%d.npy' %% k)\n"
           "    assert r.dtype.str == d\n"
           "    assert r.tobytes() == open('r%%d.raw' %% k, 'rb').read(), k\n",
           "['<f2', '<f4', '<f8', '|i1', '<i2', '<i4', '<i8', '|u1', '<u2', "
           "'<u4', '<u8', '|b1', '<c8']");
  run_python(dir, script);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* numpy writes arrays (every dtype, rank 0, empty, versions 1.0/2.0/3.0,
 * large headers) plus their raw bytes; we load and compare. Then the ones
 * we must refuse. */
START_TEST(test_we_read_numpys) {
  if (!have_numpy()) {
    fprintf(stderr, "numpy not available: interop test skipped\n");
    return;
  }
  char dir[] = "/tmp/npy_test_XXXXXX";
  ck_assert(mkdtemp(dir) != NULL);
  run_python(dir,
             "import numpy as np\n"
             "from numpy.lib import format as fmt\n"
             "rng = np.random.default_rng(5)\n"
             "ds = ['<f2','<f4','<f8','|i1','<i2','<i4','<i8','|u1','<u2',"
             "'<u4','<u8','|b1','<c8']\n"
             "cases = []\n"
             "for d in ds:\n"
             "    for shape in [(), (0,), (3,), (2, 0, 5), (2, 3, 4)]:\n"
             "        b = rng.integers(0, 256, int(np.prod(shape)) * "
             "np.dtype(d).itemsize, dtype=np.uint8)\n"
             "        a = b.view(d).reshape(shape) if d != '|b1' else "
             "(b % 2).astype(bool).reshape(shape)\n"
             "        cases.append(a)\n"
             "with open('list.txt', 'w') as f:\n"
             "    for k, a in enumerate(cases):\n"
             "        v = [(1, 0), (2, 0), (3, 0)][k % 3]\n"
             "        with open('n%d.npy' % k, 'wb') as g:\n"
             "            fmt.write_array(g, a, version=v)\n"
             "        open('n%d.raw' % k, 'wb').write(a.tobytes())\n"
             "        f.write('%d %d %s\\n' % (k, a.ndim, ' '.join(map(str, a.shape))))\n"
             "np.save('fortran.npy', np.asfortranarray(np.ones((2, 3))))\n"
             "np.save('big_endian.npy', np.ones(3, dtype='>f4'))\n"
             "np.save('object.npy', np.array([1, 'a'], dtype=object), "
             "allow_pickle=True)\n"
             "np.save('c16.npy', np.ones(2, dtype=np.complex128))\n"
             "np.save('unicode.npy', np.array(['ab']))\n"
             "np.save('struct.npy', np.zeros(2, dtype=[('a', '<i4')]))\n"
             "np.save('rank9.npy', np.zeros((1,) * 9))\n"
             "np.save('f128.npy', np.zeros(2, dtype=np.longdouble))\n");
  char path[512];
  snprintf(path, sizeof path, "%s/list.txt", dir);
  FILE *f = fopen(path, "r");
  ck_assert(f != NULL);
  int k, rank, count = 0;
  while (fscanf(f, "%d %d", &k, &rank) == 2) {
    int64_t dims[TF_MAX_RANK];
    for (int i = 0; i < rank; i++) {
      ck_assert_int_eq(fscanf(f, "%ld", &dims[i]), 1);
    }
    tf_tensor *t;
    tf_status st;
    snprintf(path, sizeof path, "%s/n%d.npy", dir, k);
    ck_assert_msg(tf_tensor_load_npy(path, &t, &st) == TF_OK, "%s", st.msg);
    tf_shape want = tf_shape_make(rank, dims);
    ck_assert(tf_shape_equal(&t->shape, &want));
    ck_assert_int_eq(t->dtype, npy_dtypes[k / 5]);
    snprintf(path, sizeof path, "%s/n%d.raw", dir, k);
    FILE *r = fopen(path, "rb");
    char *raw = malloc(t->nbytes + 1);
    ck_assert_uint_eq(fread(raw, 1, t->nbytes + 1, r), t->nbytes);
    ck_assert(t->nbytes == 0 || memcmp(raw, t->data, t->nbytes) == 0);
    fclose(r);
    free(raw);
    tf_tensor_unref(t);
    count++;
  }
  fclose(f);
  ck_assert_int_eq(count, N_NPY * 5);
  const char *refused[] = {"fortran", "big_endian", "object", "c16",
                           "unicode", "struct", "rank9", "f128"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    tf_tensor *t;
    tf_status st;
    snprintf(path, sizeof path, "%s/%s.npy", dir, refused[i]);
    ck_assert_int_eq(tf_tensor_load_npy(path, &t, &st), TF_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(st.msg, path));
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A .npy image with the given version, dict and data. */
static size_t make_npy(unsigned char *out, int major, const char *dict,
                       const void *data, size_t nbytes) {
  size_t prefix = major == 1 ? 10 : 12, hlen = strlen(dict);
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)major;
  out[7] = 0;
  for (size_t i = 0; i < prefix - 8; i++) {
    out[8 + i] = (unsigned char)(hlen >> (8 * i));
  }
  memcpy(out + prefix, dict, hlen);
  memcpy(out + prefix + hlen, data, nbytes);
  return prefix + hlen + nbytes;
}

static tf_code parse(const char *dict, size_t nbytes, tf_status *st) {
  static const unsigned char data[64] = {1, 0, 1, 0, 1, 0, 1, 0, 2};
  unsigned char buf[1024];
  size_t len = make_npy(buf, 1, dict, data, nbytes);
  tf_tensor *t = (tf_tensor *)1;
  tf_code c = tf_tensor_from_npy(buf, len, &t, st);
  if (c == TF_OK) {
    tf_tensor_unref(t);
  } else {
    ck_assert_ptr_null(t);
  }
  return c;
}

START_TEST(test_header_variants_accepted) {
  static const char *ok[] = {
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n",
      "{\"shape\": (2,), \"descr\": \"<i4\", \"fortran_order\": False}",
      "{ 'descr' : '<i4' ,'fortran_order':False,'shape':( 2 , ) }   \n",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2L,)}",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2)}",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2)}",
      "{'descr': '=i4', 'fortran_order': False, 'shape': (2,)}",
  };
  tf_status st;
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    ck_assert_msg(parse(ok[i], 8, &st) == TF_OK, "%s: %s", ok[i], st.msg);
  }
  ck_assert_int_eq(parse("{'descr': '|b1', 'fortran_order': False, "
                         "'shape': (2, 4)}", 8, &st), TF_OK);
  ck_assert_int_eq(parse("{'descr': '<u1', 'fortran_order': False, "
                         "'shape': ()}", 1, &st), TF_OK);
}
END_TEST

START_TEST(test_header_variants_refused) {
  static const struct { const char *dict; size_t n; const char *msg; } bad[] = {
      {"{'descr': '<i4', 'fortran_order': True, 'shape': (2,)}", 8, "fortran"},
      {"{'descr': '>i4', 'fortran_order': False, 'shape': (2,)}", 8, ">i4"},
      {"{'descr': '<i3', 'fortran_order': False, 'shape': (2,)}", 8, "<i3"},
      {"{'descr': '<c16', 'fortran_order': False, 'shape': (2,)}", 8, "c16"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", 8, "|O"},
      {"{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,)}", 8,
       "quoted string"},
      {"{'descr': '<i4', 'shape': (2,)}", 8, "missing"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
       "unknown key"},
      {"{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (2,)}",
       8, "repeated"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': [2]}", 8, "tuple"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (-2,)}", 8,
       "integer"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,) garbage", 8,
       "expected"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,)} x", 8,
       "after the dict"},
      {"{'descr': '<i4, 'fortran_order': False, 'shape': (2,)}", 8, "descr"},
      {"{'descr': '<i4', 'fortran_order': 0, 'shape': (2,)}", 8, "fortran"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}",
       4, "rank"},
      {"{'descr': '<i4', 'fortran_order': False, "
       "'shape': (99999999999999999999,)}", 8, "int64"},
      {"{'descr': '<i4', 'fortran_order': False, "
       "'shape': (4294967296, 4294967296)}", 8, "int64"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (3,)}", 16,
       "the file has 16"},
      {"{'descr': '|b1', 'fortran_order': False, 'shape': (9,)}", 9, "bool"},
      {"{'descr': '\\x3ci4', 'fortran_order': False, 'shape': (2,)}", 8,
       "escape"},
      {"", 8, "'{'"},
      {"{", 8, "quoted string"},
  };
  tf_status st;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    tf_code c = parse(bad[i].dict, bad[i].n, &st);
    ck_assert_msg(c == TF_INVALID_ARGUMENT, "%s: %s %s", bad[i].dict,
                  tf_code_name(c), st.msg);
    ck_assert_msg(strstr(st.msg, bad[i].msg) != NULL, "'%s' lacks '%s'",
                  st.msg, bad[i].msg);
  }
  /* Too little data is DATA_LOSS; a huge declared shape with little data
   * is refused before allocating. */
  ck_assert_int_eq(parse("{'descr': '<i4', 'fortran_order': False, "
                         "'shape': (3,)}", 8, &st), TF_DATA_LOSS);
  ck_assert_int_eq(parse("{'descr': '<f8', 'fortran_order': False, "
                         "'shape': (1048576, 1048576, 1024)}", 8, &st),
                   TF_DATA_LOSS);
}
END_TEST

START_TEST(test_preamble_errors) {
  unsigned char buf[256];
  size_t len = make_npy(buf, 1, "{'descr': '<u1', 'fortran_order': False, "
                                "'shape': (1,)}", "x", 1);
  tf_tensor *t;
  tf_status st;
  buf[0] = 0x92;
  ck_assert_int_eq(tf_tensor_from_npy(buf, len, &t, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "magic"));
  buf[0] = 0x93;
  buf[6] = 4;
  ck_assert_int_eq(tf_tensor_from_npy(buf, len, &t, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "version 4.0"));
  buf[6] = 1;
  buf[7] = 1;
  ck_assert_int_eq(tf_tensor_from_npy(buf, len, &t, &st), TF_INVALID_ARGUMENT);
  buf[7] = 0;
  buf[8] = 0xff;
  buf[9] = 0xff;
  ck_assert_int_eq(tf_tensor_from_npy(buf, len, &t, &st), TF_DATA_LOSS);
  ck_assert_ptr_nonnull(strstr(st.msg, "65535"));
  /* version 2.0 with a 4 GiB header length */
  len = make_npy(buf, 2, "{'descr': '<u1', 'fortran_order': False, "
                         "'shape': (1,)}", "x", 1);
  ck_assert_int_eq(tf_tensor_from_npy(buf, len, &t, &st), TF_OK);
  tf_tensor_unref(t);
  memset(buf + 8, 0xff, 4);
  ck_assert_int_eq(tf_tensor_from_npy(buf, len, &t, &st), TF_DATA_LOSS);
  ck_assert_int_eq(tf_tensor_from_npy(buf, 0, &t, &st), TF_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_truncated_at_every_offset) {
  tf_tensor *t = st_rand_tensor(TF_INT16, tf_shape_of(2, 3, 5), true);
  void *buf;
  size_t len;
  tf_status st;
  ck_assert(tf_tensor_to_npy(t, &buf, &len, &st) == TF_OK);
  for (size_t cut = 0; cut < len; cut++) {
    char *copy = malloc(cut ? cut : 1);
    memcpy(copy, buf, cut);
    tf_tensor *out = (tf_tensor *)1;
    tf_code c = tf_tensor_from_npy(copy, cut, &out, &st);
    ck_assert_msg(c == (cut < 6 ? TF_INVALID_ARGUMENT : TF_DATA_LOSS),
                  "cut %zu: %s %s", cut, tf_code_name(c), st.msg);
    ck_assert_ptr_null(out);
    free(copy);
  }
  free(buf);
  tf_tensor_unref(t);
}
END_TEST

START_TEST(test_random_byte_flips) {
  int rejected = 0;
  for (int it = 0; it < 5000; it++) {
    tf_tensor *t = st_rand_tensor(npy_dtypes[it % N_NPY], st_rand_shape(), true);
    void *buf;
    size_t len;
    tf_status st;
    ck_assert(tf_tensor_to_npy(t, &buf, &len, &st) == TF_OK);
    /* Flip within the preamble and header, where the structure is. */
    size_t span = len < 70 ? len : 70;
    for (int f = 0; f < 1 + (int)(tt_rand_u64() % 3); f++) {
      ((unsigned char *)buf)[tt_rand_u64() % span] ^=
          (unsigned char)(1u << (tt_rand_u64() % 8));
    }
    tf_tensor *out;
    tf_code c = tf_tensor_from_npy(buf, len, &out, &st);
    if (c == TF_OK) {
      tf_tensor_unref(out);
    } else {
      st_assert_rejected(c, st);
      rejected++;
    }
    free(buf);
    tf_tensor_unref(t);
  }
  ck_assert_int_gt(rejected, 1000);
}
END_TEST

START_TEST(test_files_and_errors_name_path) {
  char path[] = "/tmp/npy_file_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  tf_tensor *t = st_rand_tensor(TF_FLOAT64, tf_shape_of(2, 4, 4), true), *back;
  tf_status st;
  ck_assert(tf_tensor_save_npy(t, path, &st) == TF_OK);
  ck_assert(tf_tensor_load_npy(path, &back, &st) == TF_OK);
  ck_assert(tf_tensor_equal(t, back));
  tf_tensor_unref(back);
  FILE *f = fopen(path, "wb");
  fputs("not npy", f);
  fclose(f);
  ck_assert_int_eq(tf_tensor_load_npy(path, &back, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, path));
  unlink(path);
  ck_assert_int_eq(tf_tensor_load_npy(path, &back, &st), TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, path));
  ck_assert_int_eq(tf_tensor_save_npy(t, "/nonexistent_dir/x.npy", &st),
                   TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, "/nonexistent_dir/x.npy"));
  ck_assert_int_ne(tf_tensor_load_npy("/tmp", &back, &st), TF_OK);
  ck_assert_ptr_nonnull(strstr(st.msg, "/tmp"));
  tf_tensor_unref(t);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("npy");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_header_bytes);
  tcase_add_test(tc, test_round_trip_every_dtype);
  tcase_add_test(tc, test_unsupported_dtypes_on_write);
  tcase_add_test(tc, test_numpy_reads_ours);
  tcase_add_test(tc, test_we_read_numpys);
  tcase_add_test(tc, test_header_variants_accepted);
  tcase_add_test(tc, test_header_variants_refused);
  tcase_add_test(tc, test_preamble_errors);
  tcase_add_test(tc, test_truncated_at_every_offset);
  tcase_add_test(tc, test_random_byte_flips);
  tcase_add_test(tc, test_files_and_errors_name_path);
  suite_add_tcase(s, tc);
  return s;
}
