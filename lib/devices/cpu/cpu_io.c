/* cpu_io.c: CPU kernels of the input ops (ops_io.c). The reader ops look
 * up or create their reader in the step's resource manager and output a
 * ref to it; ReaderRead, ReaderReadUpTo and ReaderReset are asynchronous:
 * they hand the reader a callback that completes the kernel (maybe later,
 * from the thread that enqueued a file name) and return at once.
 * WriteTFRecords writes a file. The decoding kernels are in cpu_decode.c. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/serialize/reader.h"
#include "lib/core/base/util.h"

/* ---- TFRecordReader, IdxRecordReader ----------------------------------------- */

typedef struct rop_state {
  tf_record_options o;
  char *container;
  char *name; /* shared_name, else the node's name */
} rop_state;

static void rop_free_state(void *p) {
  rop_state *s = p;
  if (s != NULL) {
    free(s->container);
    free(s->name);
    free(s);
  }
}

/* The record options a reader node's attrs describe. */
static tf_code rop_options(const tf_node *node, tf_record_options *o,
                           tf_status *st) {
  const char *ct;
  TF_TRY(tf_node_attr_get_string(node, "compression_type", &ct, st));
  *o = (tf_record_options){.format = TF_RECORD_TFRECORD};
  if (strcmp(tf_node_op(node), "IdxRecordReader") == 0) {
    *o = tf_record_options_idx();
    TF_TRY(tf_node_attr_get_type(node, "dtype", &o->idx_dtype, st));
    TF_TRY(tf_node_attr_get_shape(node, "record_shape", &o->idx_record_shape, st));
  }
  if (tf_compression_from_name(ct, &o->compression, st) != TF_OK) {
    return tf_status_prefix(st, "node '%s'", tf_node_name(node));
  }
  return TF_OK;
}

static tf_code rop_init(const tf_node *node, void **state, tf_status *st) {
  const char *container, *shared;
  TF_TRY(tf_node_attr_get_string(node, "container", &container, st));
  TF_TRY(tf_node_attr_get_string(node, "shared_name", &shared, st));
  rop_state *s = tf__xcalloc(1, sizeof *s);
  if (rop_options(node, &s->o, st) != TF_OK) {
    free(s);
    return st->code;
  }
  s->container = tf__xstrdup(container);
  s->name = tf__xstrdup(*shared ? shared : tf_node_name(node));
  *state = s;
  return TF_OK;
}

static tf_code rop_create(void *arg, tf_resource **out, tf_status *st) {
  const rop_state *s = arg;
  (void)st;
  *out = tf_reader_resource(tf_reader_new(s->container, s->name, &s->o));
  return TF_OK;
}

static tf_code rop_compute(tf_kernel_ctx *ctx) {
  TF_TRY(tf_kernel_need_step(ctx));
  const rop_state *s = ctx->state;
  tf_resource *r = NULL;
  tf_status local;
  tf_status_init(&local);
  if (tf_resource_lookup_or_create(ctx->step->resources, s->container, s->name,
                                   &tf_reader_type, rop_create, (void *)s, &r,
                                   &local) == TF_OK &&
      tf_reader_matches(tf_reader_cast(r), &s->o, &local) == TF_OK) {
    tf_kernel_set_ref_output(ctx, 0, r);
  }
  tf_resource_unref(r);
  if (local.code != TF_OK) {
    return tf_kernel_error(ctx, local.code, "%s", local.msg);
  }
  return TF_OK;
}

/* ---- ops on a reader handle ---------------------------------------------------- */

/* The reader on ref input 0 and, when queue is not NULL, the queue on ref
 * input 1; errors name what is there instead. */
static tf_code handles(tf_kernel_ctx *ctx, tf_reader **reader, tf_queue **queue) {
  TF_TRY(tf_kernel_need_step(ctx));
  tf_resource *r = ctx->in_refs ? ctx->in_refs[0] : NULL;
  *reader = tf_reader_cast(r);
  if (*reader == NULL) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "input 0 "
                           "('reader_handle') must be a reader, got %s",
                           r ? r->type->name : "nothing");
  }
  if (queue != NULL) {
    tf_resource *q = ctx->in_refs[1];
    *queue = tf_queue_cast(q);
    if (*queue == NULL) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "input 1 "
                             "('queue_handle') must be a queue, got %s",
                             q ? q->type->name : "nothing");
    }
  }
  return TF_OK;
}

typedef struct pending_read {
  tf_kernel_ctx *ctx;
  void (*done)(void *arg);
  void *arg;
} pending_read;

static void read_done(void *arg, const tf_status *st, tf_tensor *keys,
                      tf_tensor *values) {
  pending_read p = *(pending_read *)arg;
  free(arg);
  if (st->code != TF_OK) {
    tf_kernel_error(p.ctx, st->code, "%s", st->msg);
  } else if (keys != NULL) {
    tf_kernel_set_output(p.ctx, 0, keys);
    tf_kernel_set_output(p.ctx, 1, values);
  }
  p.done(p.arg);
}

/* num_records of ReaderReadUpTo (-1 for ReaderRead), or an error. */
static tf_code read_count(tf_kernel_ctx *ctx, int64_t *n) {
  *n = -1;
  if (ctx->n_inputs < 3) {
    return TF_OK;
  }
  const tf_tensor *t = ctx->inputs[2];
  if (t->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "num_records must be a "
                           "scalar, got rank %d", t->shape.rank);
  }
  *n = tf_tensor_get_i64(t, 0);
  if (*n < 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "num_records must be "
                           ">= 1, got %lld", (long long)*n);
  }
  return TF_OK;
}

static void read_async(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  tf_reader *r;
  tf_queue *q;
  int64_t n;
  if (handles(ctx, &r, &q) != TF_OK || read_count(ctx, &n) != TF_OK) {
    done(arg);
    return;
  }
  pending_read *p = tf__xmalloc(sizeof *p);
  *p = (pending_read){ctx, done, arg};
  tf_status st;
  if (tf_reader_read(r, q, n, ctx->step->cancel, read_done, p, &st) != TF_OK) {
    free(p);
    tf_kernel_error(ctx, st.code, "%s", st.msg);
    done(arg);
  }
}

static void reset_async(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  tf_reader *r;
  if (handles(ctx, &r, NULL) != TF_OK) {
    done(arg);
    return;
  }
  pending_read *p = tf__xmalloc(sizeof *p);
  *p = (pending_read){ctx, done, arg};
  tf_reader_reset(r, ctx->step->cancel, read_done, p);
}

static tf_code counter_compute(tf_kernel_ctx *ctx) {
  tf_reader *r;
  TF_TRY(handles(ctx, &r, NULL));
  bool records = strcmp(tf_node_op(ctx->node), "ReaderNumRecordsProduced") == 0;
  tf_tensor *out;
  tf_shape scalar = tf_shape_scalar();
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_INT64, &scalar, &out));
  *(int64_t *)out->data = records ? tf_reader_records_produced(r)
                                  : tf_reader_work_units_completed(r);
  return TF_OK;
}

/* ---- WriteTFRecords -------------------------------------------------------------- */

static tf_code write_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *fn = ctx->inputs[0], *recs = ctx->inputs[1];
  if (fn->dtype != TF_STRING || fn->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "filename must be a "
                           "scalar string, got rank %d", fn->shape.rank);
  }
  const char *ct;
  tf_compression c;
  tf_status st;
  if (tf_node_attr_get_string(ctx->node, "compression_type", &ct, &st) != TF_OK ||
      tf_compression_from_name(ct, &c, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  const tf_string *name = tf_tensor_strings(fn);
  tf_tfrecord_writer *w;
  if (tf_tfrecord_writer_open(name->data ? name->data : "", c, &w, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  const tf_string *r = tf_tensor_strings(recs);
  tf_code rc = TF_OK;
  for (int64_t i = 0; i < recs->n && rc == TF_OK; i++) {
    rc = tf_tfrecord_writer_write(w, r[i].data, r[i].len, &st);
  }
  tf_status cst;
  if (tf_tfrecord_writer_close(w, &cst) != TF_OK && rc == TF_OK) {
    st = cst;
    rc = cst.code;
  }
  if (rc != TF_OK) {
    return tf_kernel_error(ctx, rc, "%s", st.msg);
  }
  return TF_OK;
}

#define CPU(name) .op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY

static const tf_kernel_def io_kernels[] = {
    {CPU("TFRecordReader"), .init = rop_init, .compute = rop_compute,
     .free_state = rop_free_state, .flags = TF_KERNEL_CHEAP},
    {CPU("IdxRecordReader"), .init = rop_init, .compute = rop_compute,
     .free_state = rop_free_state, .flags = TF_KERNEL_CHEAP},
    {CPU("ReaderRead"), .compute_async = read_async},
    {CPU("ReaderReadUpTo"), .compute_async = read_async},
    {CPU("ReaderReset"), .compute_async = reset_async},
    {CPU("ReaderNumRecordsProduced"), .compute = counter_compute,
     .flags = TF_KERNEL_CHEAP},
    {CPU("ReaderNumWorkUnitsCompleted"), .compute = counter_compute,
     .flags = TF_KERNEL_CHEAP},
    {CPU("WriteTFRecords"), .compute = write_compute},
};

TF_REGISTER_KERNELS(io_kernels)
