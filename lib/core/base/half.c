/* half.c: the public 16-bit float conversions of include/tf/dtype.h.
 *
 * They wrap the inline versions in lib/core/base/half.h, which kernels use
 * directly; see there for the rounding and NaN rules (round to nearest
 * even, quiet NaN keeping sign and payload, exact widening). */
#include "lib/core/base/half.h"

#include "tf/dtype.h"

float tf_bfloat16_to_float(tf_bfloat16 v) { return tf__bf16_to_f32(v); }

tf_bfloat16 tf_float_to_bfloat16(float f) { return tf__f32_to_bf16(f); }

float tf_float16_to_float(tf_float16 v) { return tf__f16_to_f32(v); }

tf_float16 tf_float_to_float16(float f) { return tf__f32_to_f16(f); }

tf_float16 tf_double_to_float16(double d) { return tf__f64_to_f16(d); }
