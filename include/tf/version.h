/* version.h: the version of libtf, defined here and nowhere else.
 *
 * The Makefile reads the three numbers below for the shared library's
 * names (libtf.so.MAJOR.MINOR.PATCH, SONAME libtf.so.MAJOR) and for tf.pc.
 * MAJOR changes when the ABI breaks; MINOR when API is added. */
#ifndef TF_VERSION_H
#define TF_VERSION_H

#include "tf/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TF_VERSION_MAJOR 0
#define TF_VERSION_MINOR 1
#define TF_VERSION_PATCH 0

#define TF__VERSION_STR2(x) #x
#define TF__VERSION_STR(x) TF__VERSION_STR2(x)
/* "0.1.0": the version of the headers compiled against. */
#define TF_VERSION_STRING                                                      \
  TF__VERSION_STR(TF_VERSION_MAJOR)                                            \
  "." TF__VERSION_STR(TF_VERSION_MINOR) "." TF__VERSION_STR(TF_VERSION_PATCH)
/* One comparable number: 10000 * MAJOR + 100 * MINOR + PATCH. */
#define TF_VERSION_NUMBER                                                      \
  (10000 * TF_VERSION_MAJOR + 100 * TF_VERSION_MINOR + TF_VERSION_PATCH)

/* The version of the library linked at run time, "MAJOR.MINOR.PATCH"
 * (compare with TF_VERSION_STRING to catch a header/library mismatch). */
TF_API const char *tf_version(void);

#ifdef __cplusplus
}
#endif

#endif
