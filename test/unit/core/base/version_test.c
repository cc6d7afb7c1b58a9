/* version_test.c: tf_version (lib/core/base/version.c) is the headers'
 * TF_VERSION_STRING, of the form MAJOR.MINOR.PATCH with the numbers the
 * macros give, and TF_VERSION_NUMBER orders versions. */
#include <stdio.h>
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/version.h"

START_TEST(test_version_string) {
  ck_assert_str_eq(tf_version(), TF_VERSION_STRING);
  int major = -1, minor = -1, patch = -1, used = 0;
  ck_assert_int_eq(sscanf(tf_version(), "%d.%d.%d%n", &major, &minor, &patch,
                          &used), 3);
  ck_assert_int_eq((int)strlen(tf_version()), used);
  ck_assert_int_eq(major, TF_VERSION_MAJOR);
  ck_assert_int_eq(minor, TF_VERSION_MINOR);
  ck_assert_int_eq(patch, TF_VERSION_PATCH);
  ck_assert_int_eq(TF_VERSION_NUMBER, 10000 * major + 100 * minor + patch);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("version");
  TCase *tc = tcase_create("version");
  tcase_add_test(tc, test_version_string);
  suite_add_tcase(s, tc);
  return s;
}
