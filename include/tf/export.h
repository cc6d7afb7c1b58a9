/* export.h: TF_API, the mark of every function libtf.so exports.
 *
 * libtf is compiled with -fvisibility=hidden, so a function is visible to
 * users of the shared library only when its declaration starts with TF_API.
 * The rule: every non-static function declared in include/tf/ carries
 * TF_API, and no other function does (internal functions, tf__ names and
 * the tf_ names declared under lib/, stay hidden). Static inline functions
 * in public headers need no mark. test/api/exports_test.sh checks both
 * directions against `nm -D libtf.so`. Programs that link libtf.a (with
 * --whole-archive) see every symbol either way. */
#ifndef TF_EXPORT_H
#define TF_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TF_API __attribute__((visibility("default")))
#else
#define TF_API
#endif

#endif
