/* ops_math_unary.c: op definitions of the element-wise unary math family
 * (Neg, Abs, Sign, Exp, Expm1, Log, Log1p, Sqrt, Rsqrt, Square, Reciprocal,
 * Sin, Cos, Erf, Floor, Ceil, Round, Rint, Sigmoid, Tanh, Relu, Relu6, Elu,
 * Softplus, Softsign, Selu, LeakyRelu, IsNan, IsFinite, LogicalNot) and
 * Cast, with TensorFlow's argument and attr names. Type sets are TF's restricted to the dtypes that
 * have kernels (no complex math beyond Neg and Square), so an unsupported
 * dtype fails when the graph is built. Every output has its input's shape,
 * so no known shape can be rejected. */
#include "lib/core/framework/op_registry.h"

#define FLOAT_TYPES "bfloat16, half, float, double"
#define SIGNED_INT_TYPES "int8, int16, int32, int64"
#define UNSIGNED_INT_TYPES "uint8, uint16, uint32, uint64"

/* Op with input x and output y of type T in the set TYPES. */
#define UNARY_OP(NAME, TYPES, FLAGS, DOC)                                      \
  {.name = NAME,                                                               \
   .inputs = {"x: T"},                                                         \
   .outputs = {"y: T"},                                                        \
   .attrs = {"T: {" TYPES "}"},                                                \
   .shape_fn = tf_shape_fn_unchanged,                                          \
   .flags = FLAGS,                                                             \
   .doc = DOC}

/* Activation op: features -> activations, as TF names them. */
#define ACTIVATION_OP(NAME, TYPES, DOC)                                        \
  {.name = NAME,                                                               \
   .inputs = {"features: T"},                                                  \
   .outputs = {"activations: T"},                                              \
   .attrs = {"T: {" TYPES "}"},                                                \
   .shape_fn = tf_shape_fn_unchanged,                                          \
   .doc = DOC}

/* Float predicate x -> bool y (IsNan, IsFinite): no gradient, as in TF. */
#define PREDICATE_OP(NAME, DOC)                                                \
  {.name = NAME,                                                               \
   .inputs = {"x: T"},                                                         \
   .outputs = {"y: bool"},                                                     \
   .attrs = {"T: {" FLOAT_TYPES "}"},                                          \
   .shape_fn = tf_shape_fn_unchanged,                                          \
   .flags = TF_OP_NOT_DIFFERENTIABLE,                                          \
   .doc = DOC}

static const tf_op_spec math_unary_ops[] = {
    UNARY_OP("Neg", FLOAT_TYPES ", " SIGNED_INT_TYPES ", complex64", 0,
             "Computes -x element-wise (integers wrap: -INT_MIN = INT_MIN)."),
    UNARY_OP("Abs", FLOAT_TYPES ", " SIGNED_INT_TYPES, 0,
             "Computes |x| element-wise (integers wrap: |INT_MIN| = INT_MIN)."),
    UNARY_OP("Sign", FLOAT_TYPES ", " SIGNED_INT_TYPES, 0,
             "Element-wise -1, 0 or 1 by the sign of x; +-0 and NaN pass "
             "through."),
    UNARY_OP("Square", FLOAT_TYPES ", " SIGNED_INT_TYPES
             ", " UNSIGNED_INT_TYPES ", complex64", 0,
             "Computes x * x element-wise (integers wrap)."),
    UNARY_OP("Exp", FLOAT_TYPES, 0,
             "Computes e^x element-wise."),
    UNARY_OP("Log", FLOAT_TYPES, 0,
             "Computes the natural logarithm element-wise (log 0 = -inf, "
             "log of a negative = NaN)."),
    UNARY_OP("Log1p", FLOAT_TYPES, 0,
             "Computes log(1 + x) element-wise, accurately for small x."),
    UNARY_OP("Sqrt", FLOAT_TYPES, 0,
             "Computes the square root element-wise (NaN for negatives)."),
    UNARY_OP("Rsqrt", FLOAT_TYPES, 0,
             "Computes 1 / sqrt(x) element-wise."),
    UNARY_OP("Expm1", FLOAT_TYPES, 0,
             "Computes e^x - 1 element-wise, accurately for small x."),
    UNARY_OP("Reciprocal", FLOAT_TYPES, 0,
             "Computes 1 / x element-wise (1/+-0 = +-inf)."),
    UNARY_OP("Sin", FLOAT_TYPES, 0, "Computes sin(x) element-wise."),
    UNARY_OP("Cos", FLOAT_TYPES, 0, "Computes cos(x) element-wise."),
    UNARY_OP("Erf", FLOAT_TYPES, 0,
             "Computes the Gauss error function element-wise."),
    UNARY_OP("Floor", FLOAT_TYPES, 0,
             "Rounds x toward -inf element-wise (no gradient flows)."),
    UNARY_OP("Ceil", FLOAT_TYPES, 0,
             "Rounds x toward +inf element-wise (no gradient flows)."),
    UNARY_OP("Round", FLOAT_TYPES ", int32, int64", 0,
             "Rounds x to the nearest integer element-wise, halves to even "
             "(integers pass unchanged; no gradient flows)."),
    UNARY_OP("Rint", FLOAT_TYPES, 0,
             "Rounds x to the nearest integer element-wise, halves to even "
             "(no gradient flows)."),
    PREDICATE_OP("IsNan", "True where x is NaN, element-wise."),
    PREDICATE_OP("IsFinite",
                 "True where x is neither NaN nor +-inf, element-wise."),
    UNARY_OP("Sigmoid", FLOAT_TYPES, 0,
             "Computes the logistic function 1 / (1 + e^-x) element-wise."),
    UNARY_OP("Tanh", FLOAT_TYPES, 0,
             "Computes the hyperbolic tangent element-wise."),
    ACTIVATION_OP("Relu", FLOAT_TYPES ", " SIGNED_INT_TYPES
                  ", " UNSIGNED_INT_TYPES,
                  "Computes max(features, 0) element-wise (NaN passes)."),
    ACTIVATION_OP("Relu6", FLOAT_TYPES ", " SIGNED_INT_TYPES
                  ", " UNSIGNED_INT_TYPES,
                  "Computes min(max(features, 0), 6) element-wise (NaN "
                  "passes)."),
    ACTIVATION_OP("Elu", FLOAT_TYPES,
                  "Computes features if > 0, else exp(features) - 1."),
    ACTIVATION_OP("Softplus", FLOAT_TYPES,
                  "Computes log(exp(features) + 1) element-wise, stably for "
                  "large |features|."),
    ACTIVATION_OP("Softsign", FLOAT_TYPES,
                  "Computes features / (|features| + 1) element-wise."),
    ACTIVATION_OP("Selu", FLOAT_TYPES,
                  "Computes scale * features if > 0, else scale * alpha * "
                  "(exp(features) - 1), with scale = 1.0507009873554805 and "
                  "alpha = 1.6732632423543772."),
    {.name = "LeakyRelu",
     .inputs = {"features: T"},
     .outputs = {"activations: T"},
     .attrs = {"alpha: float = 0.2", "T: {" FLOAT_TYPES "} = float"},
     .shape_fn = tf_shape_fn_unchanged,
     .doc = "Computes features if features > 0, else alpha * features, "
            "element-wise (any alpha, also > 1 or < 0)."},
    {.name = "LogicalNot",
     .inputs = {"x: bool"},
     .outputs = {"y: bool"},
     .shape_fn = tf_shape_fn_unchanged,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Computes the logical negation of x element-wise."},
    {.name = "Cast",
     .inputs = {"x: SrcT"},
     .outputs = {"y: DstT"},
     .attrs = {"SrcT: type", "DstT: type", "Truncate: bool = false"},
     .shape_fn = tf_shape_fn_unchanged,
     .doc = "Converts x from SrcT to DstT element-wise (float to int "
            "truncates toward zero and saturates; NaN -> 0).",
     .deviation = "float to integer saturates and maps NaN to 0, a defined "
                  "result where TF's C++ conversion is undefined "
                  "(platform-dependent, e.g. INT_MIN on x86)"},
};

TF_REGISTER_OPS("math_unary", math_unary_ops)
