/* gen_ops_doc.c: prints docs/ops.md from the op and kernel registries, so
 * the ops list cannot drift from the code, and the audit of every op
 * against TensorFlow's (from each spec's deviation field). Run by
 * `make docs`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"

static void print_args(const tf_arg_def *args, int n) {
  if (n == 0) {
    printf("—");
    return;
  }
  for (int i = 0; i < n; i++) {
    const tf_arg_def *a = &args[i];
    printf("%s`%s: ", i ? ", " : "", a->name);
    if (a->number_attr) printf("%s * ", a->number_attr);
    if (a->is_ref) printf("Ref(");
    printf("%s", a->type_attr        ? a->type_attr
                 : a->type_list_attr ? a->type_list_attr
                                     : tf_dtype_name(a->fixed_type));
    if (a->is_ref) printf(")");
    printf("`");
  }
}

static void print_attrs(const tf_op_def *op) {
  if (op->n_attrs == 0) {
    printf("—");
    return;
  }
  for (int i = 0; i < op->n_attrs; i++) {
    const tf_attr_def *a = &op->attrs[i];
    printf("%s`%s: ", i ? ", " : "", a->name);
    if (a->n_allowed_types > 0) {
      printf("{");
      for (int k = 0; k < a->n_allowed_types; k++) {
        printf("%s%s", k ? ", " : "", tf_dtype_name(a->allowed_types[k]));
      }
      printf("}");
    } else if (a->n_allowed_strings > 0) {
      printf("{");
      for (int k = 0; k < a->n_allowed_strings; k++) {
        printf("%s'%s'", k ? ", " : "", a->allowed_strings[k]);
      }
      printf("}");
    } else {
      printf("%s", tf_attr_type_name(a->type, a->is_list));
    }
    if (a->has_min) printf(" >= %lld", (long long)a->min);
    if (a->has_default) {
      char buf[256];
      printf(" = %s", tf_attr_value_str(&a->default_value, buf, sizeof buf));
    }
    printf("`");
  }
}

static void print_dtypes(const char *op) {
  tf_dtype dts[64];
  int n = tf_kernel_dtypes(op, TF_DEVICE_CPU, dts, 64);
  if (n == 0) {
    printf("none");
    return;
  }
  for (int i = 0; i < n && i < 64; i++) {
    printf("%s%s", i ? ", " : "", dts[i] == TF_DTYPE_ANY ? "any" : tf_dtype_name(dts[i]));
  }
}

/* Markdown table cells cannot hold a bare '|'. */
static void print_cell(const char *s) {
  for (; *s; s++) {
    if (*s == '|') putchar('\\');
    putchar(*s);
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The file of tensorflow/core/ops/ that defines TF's op of this name: the
 * op's own entry, else its family's. */
static const char *tf_source(const tf_op_def *op) {
  static const char *const k_files[][2] = {
      {"BiasAdd", "nn_ops.cc"}, {"BiasAddGrad", "nn_ops.cc"},
      {"Elu", "nn_ops.cc"}, {"EluGrad", "nn_ops.cc"},
      {"Relu", "nn_ops.cc"}, {"ReluGrad", "nn_ops.cc"},
      {"Relu6", "nn_ops.cc"}, {"Relu6Grad", "nn_ops.cc"},
      {"Softplus", "nn_ops.cc"}, {"SoftplusGrad", "nn_ops.cc"},
      {"MatrixDeterminant", "linalg_ops.cc"},
      {"MatrixInverse", "linalg_ops.cc"},
      {"DynamicPartition", "data_flow_ops.cc"},
      {"DynamicStitch", "data_flow_ops.cc"},
      {"Range", "math_ops.cc"}, {"UnsortedSegmentSum", "math_ops.cc"},
      {"DecodeRaw", "parsing_ops.cc"}, {"NoOp", "no_op.cc"},
      {"array", "array_ops.cc"}, {"array_index", "array_ops.cc"},
      {"base", "array_ops.cc"}, {"grad_support", "array_ops.cc"},
      {"control_flow", "control_flow_ops.cc"},
      {"function", "function_ops.cc"}, {"io", "io_ops.cc"},
      {"checkpoint", "io_ops.cc"},
      {"math_binary", "math_ops.cc"}, {"math_grad", "math_ops.cc"},
      {"math_unary", "math_ops.cc"}, {"matrix", "math_ops.cc"},
      {"reduction", "math_ops.cc"}, {"nn", "nn_ops.cc"},
      {"queue", "data_flow_ops.cc"}, {"accumulator", "data_flow_ops.cc"},
      {"stack", "data_flow_ops.cc"},
      {"tensor_array", "data_flow_ops.cc"},
      {"random", "random_ops.cc"},
      {"candidate_sampling", "candidate_sampling_ops.cc"},
      {"sendrecv", "sendrecv_ops.cc"}, {"state", "state_ops.cc"},
      {"training", "training_ops.cc"},
      {"ReciprocalGrad", "math_ops.cc"}, {"Bincount", "math_ops.cc"},
      {"activation", "nn_ops.cc"}, {"array_nd", "array_ops.cc"},
      {"einsum", "linalg_ops.cc"}, {"image", "image_ops.cc"},
      {"matrix_band", "array_ops.cc"}, {"nn_lrn", "nn_ops.cc"},
      {"scan", "math_ops.cc"}, {"segment", "math_ops.cc"},
      {"topk", "nn_ops.cc"}};
  const char *family = tf_op_family_of(op);
  for (int pass = 0; pass < 2; pass++) {
    const char *key = pass == 0 ? op->name : family;
    for (size_t i = 0; i < sizeof k_files / sizeof k_files[0]; i++) {
      if (strcmp(k_files[i][0], key) == 0) return k_files[i][1];
    }
  }
  return "?";
}

static bool not_tf_op(const tf_op_def *op) {
  static const char k_prefix[] = "not a TensorFlow op";
  const char *dev = op->spec->deviation;
  return dev != NULL && strncmp(dev, k_prefix, sizeof k_prefix - 1) == 0;
}

/* The "Audit against TensorFlow" section: a count, then one row per op. */
static void print_audit(const tf_op_def *const *ops, int n) {
  int n_match = 0, n_differ = 0, n_not_tf = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(tf_op_family_of(ops[i]), "test") == 0) continue;
    if (not_tf_op(ops[i])) n_not_tf++;
    else if (ops[i]->spec->deviation != NULL) n_differ++;
    else n_match++;
  }
  printf("\n## Audit against TensorFlow\n\n"
         "Every op was compared with TensorFlow 2's op of the same name "
         "(its REGISTER_OP in tensorflow/core/ops/, file in the second "
         "column, with the attrs later releases added, e.g. MaxPool's "
         "explicit_paddings; _Arg, _Retval, _Send and _Recv with TF's "
         "internal ops) and with "
         "the behaviour TF's kernels and API documentation give it: the "
         "names, order and types of inputs and outputs, attr names, "
         "allowed values and defaults, and the semantics (rounding, NaN, "
         "negative and out-of-range indices, errors). \"matches\" means "
         "all of these agree, so a graph written with TF's op names "
         "means here what it means in TF. It allows an op to take fewer "
         "dtypes than TF: this project has no complex128, quantized, "
         "resource or variant dtypes and no string arithmetic, and some "
         "dtypes and layouts have no CPU kernel (see the tables above); "
         "such graphs fail with an error naming what is not supported "
         "instead of computing something else. Otherwise the status says "
         "what differs and why.\n\n"
         "%d ops match, %d differ, %d are not TensorFlow ops.\n\n"
         "| op | TensorFlow | status |\n|---|---|---|\n",
         n_match, n_differ, n_not_tf);
  for (int i = 0; i < n; i++) {
    const tf_op_def *op = ops[i];
    if (strcmp(tf_op_family_of(op), "test") == 0) continue;
    printf("| %s | %s | ", op->name, not_tf_op(op) ? "—" : tf_source(op));
    print_cell(op->spec->deviation != NULL ? op->spec->deviation : "matches");
    printf(" |\n");
  }
}

/* TensorFlow raw ops that models commonly use (this project's choice,
 * from TF's array, math, nn, image, linalg, state, data-flow and
 * control-flow op files): the ops list names those not registered here. */
static const char *const k_common_tf_ops[] = {
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "AddN",
    "AddV2",
    "All",
    "Any",
    "ApplyAdam",
    "ApplyGradientDescent",
    "ApplyMomentum",
    "ApplyRMSProp",
    "ArgMax",
    "ArgMin",
    "Asin",
    "Asinh",
    "Assert",
    "Assign",
    "AssignAdd",
    "AssignSub",
    "AssignVariableOp",
    "Atan",
    "Atan2",
    "Atanh",
    "AvgPool",
    "AvgPoolGrad",
    "BatchMatMulV2",
    "BatchToSpaceND",
    "BiasAdd",
    "BiasAddGrad",
    "Bincount",
    "Bitcast",
    "BroadcastArgs",
    "BroadcastGradientArgs",
    "BroadcastTo",
    "Cast",
    "Ceil",
    "CheckNumerics",
    "Cholesky",
    "ClipByValue",
    "ConcatV2",
    "Const",
    "ControlTrigger",
    "Conv2D",
    "Conv2DBackpropFilter",
    "Conv2DBackpropInput",
    "Conv3D",
    "Cos",
    "Cosh",
    "CropAndResize",
    "Cumprod",
    "Cumsum",
    "DepthToSpace",
    "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput",
    "Diag",
    "DiagPart",
    "Digamma",
    "Div",
    "DivNoNan",
    "DynamicPartition",
    "DynamicStitch",
    "Einsum",
    "Elu",
    "EluGrad",
    "Empty",
    "Enter",
    "Equal",
    "Erf",
    "Erfc",
    "Exit",
    "Exp",
    "ExpandDims",
    "Expm1",
    "Fill",
    "Floor",
    "FloorDiv",
    "FloorMod",
    "FusedBatchNormGradV3",
    "FusedBatchNormV3",
    "Gather",
    "GatherNd",
    "GatherV2",
    "Greater",
    "GreaterEqual",
    "Identity",
    "IdentityN",
    "InTopKV2",
    "InvertPermutation",
    "IsFinite",
    "IsInf",
    "IsNan",
    "L2Loss",
    "LRN",
    "LRNGrad",
    "LeakyRelu",
    "LeakyReluGrad",
    "Less",
    "LessEqual",
    "Lgamma",
    "LinSpace",
    "Log",
    "Log1p",
    "LogSoftmax",
    "LogicalAnd",
    "LogicalNot",
    "LogicalOr",
    "LoopCond",
    "MatMul",
    "MatrixBandPart",
    "MatrixDiag",
    "MatrixDiagPartV3",
    "MatrixDiagV3",
    "MatrixInverse",
    "MatrixSetDiagV3",
    "MatrixSolve",
    "MatrixTriangularSolve",
    "Max",
    "MaxPool",
    "MaxPoolGrad",
    "MaxPoolV2",
    "Maximum",
    "Mean",
    "Merge",
    "Min",
    "Minimum",
    "MirrorPad",
    "MirrorPadGrad",
    "Mod",
    "Mul",
    "MulNoNan",
    "Multinomial",
    "Neg",
    "NextIteration",
    "NoOp",
    "NonMaxSuppressionV3",
    "NotEqual",
    "OneHot",
    "OnesLike",
    "Pack",
    "Pad",
    "PadV2",
    "Placeholder",
    "PlaceholderWithDefault",
    "Pow",
    "PreventGradient",
    "Prod",
    "Qr",
    "RandomShuffle",
    "RandomStandardNormal",
    "RandomUniform",
    "RandomUniformInt",
    "Range",
    "Rank",
    "ReadVariableOp",
    "RealDiv",
    "Reciprocal",
    "Relu",
    "Relu6",
    "Relu6Grad",
    "ReluGrad",
    "Reshape",
    "ResizeBilinear",
    "ResizeBilinearGrad",
    "ResizeNearestNeighbor",
    "ResizeNearestNeighborGrad",
    "ResourceApplyAdam",
    "ResourceApplyGradientDescent",
    "ResourceGather",
    "ResourceScatterAdd",
    "ResourceScatterUpdate",
    "ReverseSequence",
    "ReverseV2",
    "Rint",
    "Round",
    "Rsqrt",
    "RsqrtGrad",
    "ScatterAdd",
    "ScatterNd",
    "ScatterNdUpdate",
    "ScatterUpdate",
    "SegmentMax",
    "SegmentMean",
    "SegmentSum",
    "Select",
    "SelectV2",
    "Selu",
    "SeluGrad",
    "Shape",
    "ShapeN",
    "Sigmoid",
    "SigmoidGrad",
    "Sign",
    "Sin",
    "Sinh",
    "Size",
    "Slice",
    "Snapshot",
    "Softmax",
    "SoftmaxCrossEntropyWithLogits",
    "Softplus",
    "SoftplusGrad",
    "Softsign",
    "SoftsignGrad",
    "SpaceToBatchND",
    "SpaceToDepth",
    "SparseSoftmaxCrossEntropyWithLogits",
    "Split",
    "SplitV",
    "Sqrt",
    "SqrtGrad",
    "Square",
    "SquaredDifference",
    "Squeeze",
    "StatelessRandomNormal",
    "StatelessRandomUniform",
    "StopGradient",
    "StridedSlice",
    "StridedSliceGrad",
    "Sub",
    "Sum",
    "Svd",
    "Switch",
    "Tan",
    "Tanh",
    "TanhGrad",
    "TensorScatterAdd",
    "TensorScatterUpdate",
    "Tile",
    "TopKV2",
    "Transpose",
    "TruncateDiv",
    "TruncateMod",
    "TruncatedNormal",
    "Unique",
    "Unpack",
    "UnsortedSegmentMax",
    "UnsortedSegmentMin",
    "UnsortedSegmentSum",
    "VarHandleOp",
    "Variable",
    "VariableV2",
    "Where",
    "Xdivy",
    "Xlogy",
    "ZerosLike"};

static void print_missing(void) {
  printf("\n## TensorFlow's common raw ops not here yet\n\n"
         "Of the %d TensorFlow raw ops that models commonly use "
         "(tools/gen_ops_doc.c, k_common_tf_ops), these have no op here:\n\n",
         (int)(sizeof k_common_tf_ops / sizeof k_common_tf_ops[0]));
  int n = 0;
  for (size_t i = 0; i < sizeof k_common_tf_ops / sizeof k_common_tf_ops[0]; i++) {
    if (tf_op_lookup(k_common_tf_ops[i]) == NULL) {
      printf("%s%s", n++ ? ", " : "", k_common_tf_ops[i]);
    }
  }
  printf(n ? ".\n" : "none.\n");
}

int main(void) {
  int n;
  const tf_op_def *const *ops = tf_op_all(&n);
  printf("# Ops\n\nGenerated by `make docs` (tools/gen_ops_doc.c) from the op and "
         "kernel registries; do not edit by hand.\n\n"
         "Columns: inputs and outputs as `name: type` (`N * T` is a list of N "
         "tensors of type attr T), attrs with their allowed values and "
         "defaults, the dtypes with a CPU kernel (\"any\" means one kernel "
         "dispatching on every supported dtype; see the op's kernel file), and "
         "whether the op has a registered gradient function (\"yes\"; \"n/a\" "
         "for ops that are not differentiable; \"no\": a gradient is not supported).\n\n"
         "%d ops.\n", n);
  const char *families[64];
  int n_fam = 0;
  for (int i = 0; i < n; i++) {
    const char *f = tf_op_family_of(ops[i]);
    bool seen = false;
    for (int k = 0; k < n_fam; k++) seen = seen || strcmp(families[k], f) == 0;
    if (!seen && n_fam < 64 && strcmp(f, "test") != 0) families[n_fam++] = f;
  }
  qsort(families, (size_t)n_fam, sizeof families[0], cmp_str);
  for (int k = 0; k < n_fam; k++) {
    printf("\n## %s\n\n| op | inputs | outputs | attrs | CPU dtypes | gradient | "
           "description |\n|---|---|---|---|---|---|---|\n", families[k]);
    for (int i = 0; i < n; i++) {
      const tf_op_def *op = ops[i];
      if (strcmp(tf_op_family_of(op), families[k]) != 0) continue;
      printf("| %s%s | ", op->name, (op->flags & TF_OP_STATEFUL) ? " (stateful)" : "");
      print_args(op->inputs, op->n_inputs);
      printf(" | ");
      print_args(op->outputs, op->n_outputs);
      printf(" | ");
      print_attrs(op);
      printf(" | ");
      print_dtypes(op->name);
      printf(" | %s | ", tf_grad_lookup(op->name)                ? "yes"
                         : (op->flags & TF_OP_NOT_DIFFERENTIABLE) ? "n/a"
                                                                  : "no");
      print_cell(op->doc);
      printf(" |\n");
    }
  }
  print_audit(ops, n);
  print_missing();
  return 0;
}
