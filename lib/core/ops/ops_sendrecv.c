/* ops_sendrecv.c: the ops the partitioner puts on each side of an edge
 * that crosses devices (TensorFlow's _Send and _Recv). Both carry the
 * rendezvous key parts as attrs (rendezvous.h); the value travels with its
 * dead flag, so both ops run even on dead inputs (TF_OP_DEAD_AWARE). */
#include "lib/core/framework/op_registry.h"

#define KEY_ATTRS                                                              \
  "tensor_name: string", "send_device: string",                                \
      "send_device_incarnation: int", "recv_device: string",                   \
      "client_terminated: bool = false"

static tf_code shape_none(tf_shape_ctx *ctx) {
  (void)ctx;
  return TF_OK;
}

static const tf_op_spec sendrecv_ops[] = {
    {.name = "_Send",
     .inputs = {"tensor: T"},
     .attrs = {"T: type", KEY_ATTRS},
     .shape_fn = shape_none,
     .flags = TF_OP_STATEFUL | TF_OP_DEAD_AWARE | TF_OP_NOT_DIFFERENTIABLE |
              TF_OP_RENDEZVOUS,
     .doc = "Internal: sends its input (or its deadness) from send_device to "
            "recv_device under the rendezvous key made from its attrs."},
    {.name = "_Recv",
     .outputs = {"tensor: tensor_type"},
     .attrs = {"tensor_type: type", KEY_ATTRS},
     .shape_fn = shape_none,
     .flags = TF_OP_STATEFUL | TF_OP_ASYNC | TF_OP_DEAD_AWARE |
              TF_OP_NOT_DIFFERENTIABLE | TF_OP_RENDEZVOUS,
     .doc = "Internal: receives the tensor sent by the matching _Send; its "
            "output is dead when the sent value was dead. Shape unknown."},
};

TF_REGISTER_OPS("sendrecv", sendrecv_ops)
