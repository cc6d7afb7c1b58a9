/* tf.h: the public C API in one include. Usable from C11 and C++ (every
 * header has extern "C" guards); docs/c-api.md has the rules. */
#ifndef TF_TF_H
#define TF_TF_H

#include "tf/allocator.h"
#include "tf/attr.h"
#include "tf/control_flow.h"
#include "tf/dtype.h"
#include "tf/eager.h"
#include "tf/export.h"
#include "tf/gradients.h"
#include "tf/graph.h"
#include "tf/input.h"
#include "tf/layers.h"
#include "tf/serialize.h"
#include "tf/session.h"
#include "tf/status.h"
#include "tf/tensor.h"
#include "tf/tensor_array.h"
#include "tf/tls.h"
#include "tf/train.h"
#include "tf/version.h"

#endif
