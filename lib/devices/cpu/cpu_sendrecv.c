/* cpu_sendrecv.c: kernels for _Send and _Recv, which move a tensor (or its
 * deadness) across devices through the step's rendezvous (rendezvous.h).
 * Both are asynchronous: _Send completes when the rendezvous accepted the
 * value, _Recv when the value (or an error) arrived. The key is made from
 * the node's attrs and the frame and iteration the node runs in. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/cancel.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/framework/rendezvous.h"
#include "lib/core/base/util.h"

typedef struct sr_state {
  char *tensor_name, *send_device, *recv_device;
  uint64_t incarnation;
  tf_dtype dtype; /* _Recv: the expected dtype */
} sr_state;

static void sr_free(void *p) {
  sr_state *s = p;
  if (s == NULL) return;
  free(s->tensor_name);
  free(s->send_device);
  free(s->recv_device);
  free(s);
}

static tf_code get_string(const tf_node *n, const char *name, char **out,
                          tf_status *st) {
  const char *v = NULL;
  TF_TRY(tf_node_attr_get_string(n, name, &v, st));
  if (v == NULL || v[0] == '\0') {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "attr %s must not be empty",
                         name);
  }
  *out = tf__xstrdup(v);
  return TF_OK;
}

static tf_code sr_init(const tf_node *n, void **state, tf_status *st) {
  sr_state *s = tf__xcalloc(1, sizeof *s);
  int64_t inc = 0;
  tf_code rc = get_string(n, "tensor_name", &s->tensor_name, st);
  if (rc == TF_OK) rc = get_string(n, "send_device", &s->send_device, st);
  if (rc == TF_OK) rc = get_string(n, "recv_device", &s->recv_device, st);
  if (rc == TF_OK) rc = tf_node_attr_get_int(n, "send_device_incarnation", &inc, st);
  if (rc != TF_OK) {
    sr_free(s);
    return rc;
  }
  s->incarnation = (uint64_t)inc;
  s->dtype = tf_node_num_outputs(n) > 0 ? tf_node_output_type(n, 0)
                                        : TF_DTYPE_INVALID;
  *state = s;
  return TF_OK;
}

/* The step's rendezvous, or FAILED_PRECONDITION on ctx. */
static tf_rendezvous *rendezvous_of(tf_kernel_ctx *ctx) {
  if (ctx->step == NULL || ctx->step->rendezvous == NULL) {
    tf_kernel_error(ctx, TF_FAILED_PRECONDITION, "needs a rendezvous, and "
                    "this step has none (_Send/_Recv run in sessions and on "
                    "workers, not eagerly)");
    return NULL;
  }
  return ctx->step->rendezvous;
}

static char *key_of(const tf_kernel_ctx *ctx) {
  const sr_state *s = ctx->state;
  return tf_rdv_key_make(s->send_device, s->incarnation, s->recv_device,
                         s->tensor_name, ctx->frame_id, ctx->iter);
}

/* One send or recv in flight. */
typedef struct sr_call {
  tf_kernel_ctx *ctx;
  void (*done)(void *arg);
  void *arg;
  char *key;
} sr_call;

static sr_call *call_new(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  sr_call *c = tf__xcalloc(1, sizeof *c);
  *c = (sr_call){ctx, done, arg, key_of(ctx)};
  return c;
}

static void call_end(sr_call *c) {
  void (*done)(void *) = c->done;
  void *arg = c->arg;
  free(c->key);
  free(c);
  done(arg);
}

static void send_done(void *arg, const tf_status *st) {
  sr_call *c = arg;
  if (st->code != TF_OK) {
    tf_kernel_error(c->ctx, st->code, "sending '%s': %s", c->key, st->msg);
  }
  call_end(c);
}

static void send_async(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  tf_rendezvous *r = rendezvous_of(ctx);
  if (r == NULL) {
    done(arg);
    return;
  }
  sr_call *c = call_new(ctx, done, arg);
  tf_tensor *t = ctx->is_dead ? NULL : ctx->inputs[0];
  r->send(r, c->key, t, ctx->is_dead || t == NULL, send_done, c);
}

static void recv_done(void *arg, const tf_status *st, tf_tensor *t,
                      bool is_dead) {
  sr_call *c = arg;
  const sr_state *s = c->ctx->state;
  if (st->code != TF_OK) {
    tf_kernel_error(c->ctx, st->code, "receiving '%s': %s", c->key, st->msg);
  } else if (!is_dead && t == NULL) {
    tf_kernel_error(c->ctx, TF_INTERNAL, "receiving '%s': no tensor and not "
                    "dead", c->key);
  } else if (!is_dead && t->dtype != s->dtype) {
    tf_kernel_error(c->ctx, TF_INVALID_ARGUMENT, "receiving '%s': got a %s "
                    "tensor, expected %s", c->key, tf_dtype_name(t->dtype),
                    tf_dtype_name(s->dtype));
  } else if (!is_dead) {
    tf_kernel_set_output(c->ctx, 0, t);
  }
  tf_tensor_unref(t);
  call_end(c);
}

static void recv_async(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  tf_rendezvous *r = rendezvous_of(ctx);
  if (r == NULL) {
    done(arg);
    return;
  }
  sr_call *c = call_new(ctx, done, arg);
  r->recv(r, c->key, ctx->step->cancel, recv_done, c);
}

static const tf_kernel_def sendrecv_kernels[] = {
    {.op = "_Send", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .init = sr_init, .compute_async = send_async, .free_state = sr_free,
     .flags = TF_KERNEL_CHEAP},
    {.op = "_Recv", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .type_attr = "tensor_type", .init = sr_init, .compute_async = recv_async,
     .free_state = sr_free, .flags = TF_KERNEL_CHEAP},
};

TF_REGISTER_KERNELS(sendrecv_kernels)
