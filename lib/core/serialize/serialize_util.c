/* serialize_util.c: file I/O, the decoder arena, attr type names and UTF-8
 * validation shared by the graph and tensor codecs. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/serialize/serialize_util.h"
#include "lib/core/base/fs_confine.h"
#include "lib/core/base/util.h"

/* ---- files --------------------------------------------------------------- */

static tf_code os_error(tf_status *st, const char *what, const char *path,
                        int err) {
  if (err == EACCES && tf__fs_take_denial(st)) {
    return st->code; /* the cluster's file-access policy said no */
  }
  tf_code c = TF_UNKNOWN;
  if (err == ENOENT || err == ENOTDIR) {
    c = TF_NOT_FOUND;
  } else if (err == EACCES || err == EPERM || err == EROFS) {
    c = TF_PERMISSION_DENIED;
  } else if (err == ENOMEM || err == ENOSPC || err == EDQUOT) {
    c = TF_RESOURCE_EXHAUSTED;
  } else if (err == EISDIR) {
    c = TF_FAILED_PRECONDITION;
  }
  return tf_status_set(st, c, "%s '%s': %s", what, path, strerror(err));
}

/* fopen(path, mode) through the file-access policy when confined. */
static FILE *open_file(const char *path, bool write, bool confined) {
  if (!confined) {
    return fopen(path, write ? "wb" : "rb");
  }
  int fd = tf__fs_open(path, write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, 0666);
  FILE *f = fd >= 0 ? fdopen(fd, write ? "wb" : "rb") : NULL;
  if (fd >= 0 && f == NULL) {
    int err = errno;
    close(fd);
    errno = err;
  }
  return f;
}

static tf_code read_file(const char *path, bool confined, char **buf, size_t *len,
                         tf_status *st) {
  *buf = NULL;
  *len = 0;
  FILE *f = open_file(path, false, confined);
  if (f == NULL) {
    return os_error(st, "cannot open", path, errno);
  }
  struct stat sb;
  int serr = fstat(fileno(f), &sb) != 0 ? errno
             : S_ISDIR(sb.st_mode)     ? EISDIR
                                       : 0;
  if (serr != 0) {
    fclose(f);
    return os_error(st, "cannot read", path, serr);
  }
  /* Read in growing chunks: st_size may be 0 for pipes and /proc files. */
  size_t cap = sb.st_size > 0 ? (size_t)sb.st_size + 1 : 4096, n = 0;
  char *data = malloc(cap + 1);
  while (data != NULL) {
    n += fread(data + n, 1, cap - n, f);
    if (n < cap || ferror(f)) {
      break;
    }
    char *grown = cap > SIZE_MAX / 4 ? NULL : realloc(data, cap * 2 + 1);
    if (grown == NULL) {
      free(data);
      data = NULL;
      break;
    }
    data = grown;
    cap *= 2;
  }
  int err = data == NULL ? ENOMEM : ferror(f) ? EIO : 0;
  fclose(f);
  if (err != 0) {
    free(data);
    return os_error(st, "cannot read", path, err);
  }
  /* cppcheck-suppress nullPointer ; err is ENOMEM when data is NULL */
  data[n] = '\0';
  *buf = data;
  *len = n;
  return TF_OK;
}

tf_code tf__read_file(const char *path, char **buf, size_t *len,
                      tf_status *st) {
  return read_file(path, false, buf, len, st);
}

tf_code tf__read_file_confined(const char *path, char **buf, size_t *len,
                               tf_status *st) {
  return read_file(path, true, buf, len, st);
}

tf_code tf__write_file(const char *path, const void *buf, size_t len,
                       tf_status *st) {
  FILE *f = open_file(path, true, true);
  if (f == NULL) {
    return os_error(st, "cannot create", path, errno);
  }
  size_t wrote = len ? fwrite(buf, 1, len, f) : 0;
  int err = wrote != len ? (errno ? errno : EIO) : 0;
  if (fclose(f) != 0 && err == 0) {
    err = errno ? errno : EIO;
  }
  if (err != 0) {
    return os_error(st, "cannot write", path, err);
  }
  return TF_OK;
}

/* ---- arena --------------------------------------------------------------- */

/* Allocations are carved from 16 KiB blocks; larger ones get a block of
 * their own, so a decoder makes few mallocs however many scalars it reads. */
#define ARENA_BLOCK 16384

struct tf__arena_block {
  tf__arena_block *next;
  size_t used, cap;
  max_align_t data[];
};

void tf__arena_init(tf__arena *a) { memset(a, 0, sizeof *a); }

void tf__arena_fini(tf__arena *a) {
  while (a->blocks != NULL) {
    tf__arena_block *b = a->blocks;
    a->blocks = b->next;
    free(b);
  }
  for (size_t i = 0; i < a->n_tensors; i++) {
    tf_tensor_unref(a->tensors[i]);
  }
  free(a->tensors);
  memset(a, 0, sizeof *a);
}

static tf__arena_block *arena_block(size_t cap) {
  tf__arena_block *b = tf__xmalloc(sizeof *b + cap);
  b->used = 0;
  b->cap = cap;
  return b;
}

void *tf__arena_calloc(tf__arena *a, size_t count, size_t size) {
  size_t bytes;
  const size_t align = sizeof(max_align_t);
  if (__builtin_mul_overflow(count, size, &bytes) ||
      bytes > SIZE_MAX / 2 - sizeof(tf__arena_block)) {
    TF_PANIC("arena allocation of %zu x %zu bytes overflows", count, size);
  }
  bytes = (bytes + align - 1) / align * align;
  tf__arena_block *b = a->blocks;
  if (bytes > ARENA_BLOCK / 4) {
    b = arena_block(bytes ? bytes : align);
    if (a->blocks != NULL) { /* keep the current block first */
      b->next = a->blocks->next;
      a->blocks->next = b;
    } else {
      b->next = NULL;
      a->blocks = b;
    }
  } else if (b == NULL || b->cap - b->used < bytes) {
    b = arena_block(ARENA_BLOCK);
    b->next = a->blocks;
    a->blocks = b;
  }
  char *p = (char *)b->data + b->used;
  b->used += bytes;
  memset(p, 0, bytes);
  return p;
}

char *tf__arena_strndup(tf__arena *a, const char *s, size_t n) {
  char *c = tf__arena_calloc(a, n + 1, 1);
  if (n > 0) {
    memcpy(c, s, n);
  }
  return c;
}

void tf__arena_own_tensor(tf__arena *a, tf_tensor *t) {
  if (a->n_tensors == a->cap_tensors) {
    a->cap_tensors = a->cap_tensors ? a->cap_tensors * 2 : 16;
    a->tensors = tf__xrealloc(a->tensors, a->cap_tensors * sizeof(tf_tensor *));
  }
  a->tensors[a->n_tensors++] = t;
}

/* ---- attr type names ----------------------------------------------------- */

bool tf__attr_type_parse(const char *s, size_t n, tf_attr_type *t,
                         bool *is_list) {
  for (int list = 0; list < 2; list++) {
    for (int k = TF_ATTR_INT; k < TF_ATTR_TYPE_COUNT; k++) {
      const char *name = tf_attr_type_name((tf_attr_type)k, list != 0);
      if (strlen(name) == n && memcmp(name, s, n) == 0) {
        *t = (tf_attr_type)k;
        *is_list = list != 0;
        return true;
      }
    }
  }
  return false;
}

/* ---- import -------------------------------------------------------------- */

tf_code tf__graph_import_decoded(tf_graph *g, const tf_node_def *defs, int n,
                                 tf_status *st) {
  tf_status local;
  tf_status_init(&local);
  tf_code c = tf_graph_import(g, defs, n, &local);
  if (c == TF_OK) {
    return TF_OK;
  }
  if (c != TF_RESOURCE_EXHAUSTED) {
    c = TF_INVALID_ARGUMENT;
  }
  return tf_status_set(st, c, "%s", local.msg);
}

static int cmp_str_ptr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

tf_code tf__attrs_check_unique(const tf_attr_kv *kv, int n, const char *where,
                               tf_status *st) {
  if (n < 2) {
    return TF_OK;
  }
  const char **names = tf__xcalloc((size_t)n, sizeof *names);
  for (int i = 0; i < n; i++) {
    names[i] = kv[i].name;
  }
  qsort(names, (size_t)n, sizeof *names, cmp_str_ptr);
  tf_code c = TF_OK;
  for (int i = 1; i < n && c == TF_OK; i++) {
    if (strcmp(names[i - 1], names[i]) == 0) {
      c = tf_status_set(st, TF_INVALID_ARGUMENT,
                        "%s: attr '%.100s' appears twice", where, names[i]);
    }
  }
  free(names);
  return c;
}

/* ---- UTF-8 --------------------------------------------------------------- */

bool tf__utf8_valid(const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  size_t i = 0;
  while (i < n) {
    uint8_t c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int k;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) {
      k = 1, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      k = 2, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      k = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (n - i <= (size_t)k) {
      return false;
    }
    for (int j = 1; j <= k; j++) {
      if ((p[i + j] & 0xc0) != 0x80) {
        return false;
      }
      cp = (cp << 6) | (p[i + j] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += (size_t)k + 1;
  }
  return true;
}
