/* ckpt_manifest_fuzz.c: libFuzzer harness for a checkpoint directory's
 * text files (lib/runtime/ckpt_manifest.c). The first byte picks a mode:
 * even, the rest is a manifest as is; odd, the rest is a manifest's body
 * and the harness appends its correct CRC line, so that mutations reach
 * the field parser. A manifest may be refused only with DATA_LOSS
 * (UNIMPLEMENTED for another version); an accepted one must format back
 * to text that parses to the same fields. The same bytes as a pointer
 * file: refused with DATA_LOSS, or names that format and parse back the
 * same. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/core/base/crc32c.h"
#include "lib/runtime/ckpt_dir.h"
#include "test/fuzz/fuzz_util.h"

static void check_same(const tf_ckpt_manifest *a, const tf_ckpt_manifest *b, tf_status *st) {
  FUZZ_CHECK(strcmp(a->job, b->job) == 0 && a->step == b->step && a->time_ms == b->time_ms &&
                 strcmp(a->spec_hash, b->spec_hash) == 0 && strcmp(a->mode, b->mode) == 0 &&
                 a->n_shards == b->n_shards, st);
  for (int i = 0; i < a->n_shards; i++) {
    FUZZ_CHECK(strcmp(a->shards[i].file, b->shards[i].file) == 0 &&
                   a->shards[i].bytes == b->shards[i].bytes &&
                   a->shards[i].crc32c == b->shards[i].crc32c, st);
  }
}

static void manifest(const char *text, size_t len) {
  tf_status st;
  tf_status_init(&st);
  tf_ckpt_manifest m, back;
  tf_code c = tf_ckpt_manifest_parse(text, len, "fuzz", &m, &st);
  if (c != TF_OK) {
    FUZZ_CHECK((c == TF_DATA_LOSS || c == TF_UNIMPLEMENTED) && st.msg[0] != '\0', &st);
    FUZZ_CHECK(m.job == NULL && m.shards == NULL, &st);
    return;
  }
  char *again;
  size_t alen;
  FUZZ_CHECK(tf_ckpt_manifest_format(&m, &again, &alen, &st) == TF_OK, &st);
  FUZZ_CHECK(tf_ckpt_manifest_parse(again, alen, "again", &back, &st) == TF_OK, &st);
  check_same(&m, &back, &st);
  free(again);
  tf_ckpt_manifest_fini(&m);
  tf_ckpt_manifest_fini(&back);
}

static void pointer(const char *text, size_t len) {
  tf_status st;
  tf_status_init(&st);
  char **names, **back;
  int n, nb;
  tf_code c = tf_ckpt_pointer_parse(text, len, "fuzz", &names, &n, &st);
  if (c != TF_OK) {
    FUZZ_CHECK(c == TF_DATA_LOSS && st.msg[0] != '\0' && names == NULL, &st);
    return;
  }
  char *again = tf_ckpt_pointer_format(names, n);
  FUZZ_CHECK(tf_ckpt_pointer_parse(again, strlen(again), "again", &back, &nb, &st) == TF_OK, &st);
  FUZZ_CHECK(nb == n, &st);
  for (int i = 0; i < n; i++) {
    FUZZ_CHECK(strcmp(names[i], back[i]) == 0, &st);
    free(names[i]);
    free(back[i]);
  }
  free(names);
  free(back);
  free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  char *fixed = NULL;
  if (data[0] & 1) {
    fixed = malloc(len + 32);
    memcpy(fixed, text, len);
    len += (size_t)snprintf(fixed + len, 32, "crc32c: %08x\n", tf_crc32c(text, len));
    text = fixed;
  }
  manifest(text, len);
  pointer((const char *)data + 1, size - 1);
  free(fixed);
  return 0;
}
