/* version.c: tf_version, the library's own version string (the headers'
 * TF_VERSION_STRING as this library was compiled). */
#include "tf/version.h"

const char *tf_version(void) { return TF_VERSION_STRING; }
