/* jobutil.c: the job tests' shared helpers (jobutil.h). */
#include "test/integration/jobutil.h"

#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int tj_tfctl(th_cluster *c, int64_t ms, char **out, char **err, const char *a0, ...) {
  char *argv[16];
  int k = 0;
  argv[k++] = th_bin("tfctl");
  argv[k++] = "-c";
  argv[k++] = c->config;
  va_list ap;
  va_start(ap, a0);
  for (const char *a = a0; a != NULL && k < 15; a = va_arg(ap, const char *)) {
    argv[k++] = (char *)a;
  }
  va_end(ap);
  argv[k] = NULL;
  int rc = th_run(c, argv, ms, out, err);
  free(argv[0]);
  return rc;
}

static void put_be32(FILE *f, uint32_t v) {
  unsigned char b[4] = {v >> 24, v >> 16, v >> 8, v};
  fwrite(b, 1, 4, f);
}

void tj_write_idx(th_cluster *c, const char *stem, int n, uint32_t seed) {
  char pi[512], pl[512];
  snprintf(pi, sizeof pi, "%s/%s-images.idx", c->dir, stem);
  snprintf(pl, sizeof pl, "%s/%s-labels.idx", c->dir, stem);
  FILE *fi = fopen(pi, "wb"), *fl = fopen(pl, "wb");
  TH_REQUIRE(c, fi && fl, "cannot write %s", pi);
  fwrite("\0\0\x08\x03", 1, 4, fi);
  put_be32(fi, (uint32_t)n), put_be32(fi, 4), put_be32(fi, 4);
  fwrite("\0\0\x08\x01", 1, 4, fl);
  put_be32(fl, (uint32_t)n);
  for (int i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    unsigned char label = (unsigned char)((seed >> 16) % TJ_CLASSES);
    fputc(label, fl);
    for (int k = 0; k < TJ_PIXELS; k++) {
      seed = seed * 1103515245u + 12345u;
      int bright = (k / 4 < 2) == (label == 0) && (k % 4 < 2) == (label != 2);
      fputc((int)((seed >> 16) % 96 + (bright ? 150 : 0)), fi);
    }
  }
  fclose(fi);
  fclose(fl);
}

const char *tj_last_line(const char *s) {
  static char buf[512];
  buf[0] = '\0';
  for (const char *p = s; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n > 0) {
      snprintf(buf, sizeof buf, "%.*s", (int)n, p);
    }
    p = nl ? nl + 1 : NULL;
  }
  return buf;
}

char *tj_submit(th_cluster *c, const char *path) {
  char *out = NULL;
  int rc = tj_tfctl(c, 20000, &out, NULL, "submit", path, NULL);
  TH_REQUIRE(c, rc == 0, "submit %s: exit %d: %s", path, rc, out ? out : "");
  char *id = strdup(tj_last_line(out));
  free(out);
  return id;
}

char *tj_status(th_cluster *c, const char *id) {
  char *out = NULL;
  if (tj_tfctl(c, 5000, &out, NULL, "status", id, NULL) != 0) {
    free(out);
    return strdup("");
  }
  return out;
}

double tj_field(const char *out, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\n%s: ", key);
  if (strncmp(out, k + 1, strlen(k + 1)) == 0) {
    return strtod(out + strlen(k + 1), NULL);
  }
  const char *p = strstr(out, k);
  return p ? strtod(p + strlen(k), NULL) : NAN;
}

bool tj_has_state(const char *out, const char *state) {
  char k[64];
  snprintf(k, sizeof k, "\nstate: %s\n", state);
  return strstr(out, k) != NULL;
}

static int remove_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(p);
}

void tj_remove_tree(const char *dir) {
  nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *tj_write_mlp_spec(th_cluster *c, const char *file, const char *name, int units,
                        int workers, long long steps, int log_every, const char *extra) {
  char text[4096];
  snprintf(text, sizeof text,
           "name: %s\n"
           "model:\n"
           "  input: {shape: [%d]}\n"
           "  layers: [{type: dense, units: %d, activation: tanh}, {type: dense, units: %d}]\n"
           "  loss: sparse_softmax_cross_entropy\n"
           "  seed: 7\n"
           "input:\n"
           "  format: idx\n"
           "  train: {images: %s/train-images.idx, labels: %s/train-labels.idx}\n"
           "  scale: 0.00392156862745098\n"
           "  batch_size: 8\n"
           "optimizer: {name: sgd, learning_rate: 0.1}\n"
           "replication: {mode: sync, workers: %d}\n"
           "train: {steps: %lld, log_every_steps: %d}\n"
           "%s",
           name, TJ_PIXELS, units, TJ_CLASSES, c->dir, c->dir, workers, steps, log_every, extra);
  return th_write_file(c, file, text);
}
