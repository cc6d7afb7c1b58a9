/* fs_confine.c: the file-access policy of a daemon (fs_confine.h): roots
 * held as O_PATH descriptors, paths folded lexically to pick a root, the
 * rest resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS). */
#include "lib/core/base/fs_confine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/core/base/util.h"

typedef struct fs_root {
  char *path;   /* normalised as written in the spec */
  char *real;   /* realpath of it (a second spelling that matches) */
  char *label;
  bool writable;
  int fd;       /* O_PATH | O_DIRECTORY */
} fs_root;

struct tf_fs_policy {
  fs_root *roots;
  int n;
  char *empty_note;
  char *allowed; /* "data_dirs: /a, /b; checkpoint_dir: /c" */
};

static _Atomic(tf_fs_policy *) g_policy;
static _Thread_local bool t_denied;
static _Thread_local char t_denial[TF_STATUS_MSG_MAX];

/* ---- paths ------------------------------------------------------------- */

/* path made absolute (against the working directory) with '.', '..' and
 * repeated '/' folded; NULL (errno set) when the cwd is unknown. */
static char *normalise(const char *path) {
  char cwd[PATH_MAX];
  if (path[0] != '/' && getcwd(cwd, sizeof cwd) == NULL) {
    return NULL;
  }
  char *in = path[0] == '/' ? tf__xstrdup(path) : tf__xasprintf("%s/%s", cwd, path);
  size_t n = strlen(in), len = 0;
  char *out = tf__xmalloc(n + 2);
  for (char *save = NULL, *c = strtok_r(in, "/", &save); c != NULL;
       c = strtok_r(NULL, "/", &save)) {
    if (strcmp(c, ".") == 0) {
      continue;
    }
    if (strcmp(c, "..") == 0) {
      while (len > 0 && out[--len] != '/') {
      }
      continue;
    }
    out[len++] = '/';
    size_t k = strlen(c);
    memcpy(out + len, c, k);
    len += k;
  }
  if (len == 0) {
    out[len++] = '/';
  }
  out[len] = '\0';
  free(in);
  return out;
}

/* The part of abs under root ("." for root itself), or NULL. */
static const char *under(const char *abs, const char *root) {
  size_t n = strlen(root);
  if (n == 1) { /* "/" */
    return abs[1] ? abs + 1 : ".";
  }
  if (strncmp(abs, root, n) != 0 || (abs[n] != '/' && abs[n] != '\0')) {
    return NULL;
  }
  return abs[n] ? abs + n + 1 : ".";
}

/* The root abs lies under (the longest match) and the relative rest. */
static const fs_root *pick(const tf_fs_policy *p, const char *abs, const char **rel) {
  const fs_root *best = NULL;
  size_t best_n = 0;
  for (int i = 0; i < p->n; i++) {
    const char *names[2] = {p->roots[i].path, p->roots[i].real};
    for (int k = 0; k < 2; k++) {
      const char *r = names[k] ? under(abs, names[k]) : NULL;
      size_t len = names[k] ? strlen(names[k]) : 0;
      bool better = best == NULL || len > best_n ||
                    (len == best_n && p->roots[i].writable && !best->writable);
      if (r != NULL && better) {
        best = &p->roots[i];
        best_n = len;
        *rel = r;
      }
    }
  }
  return best;
}

/* ---- refusals ---------------------------------------------------------- */

__attribute__((format(printf, 1, 2))) static void deny(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_denial, sizeof t_denial, fmt, ap);
  va_end(ap);
  t_denied = true;
  errno = EACCES;
}

static const char *allowed(const tf_fs_policy *p) {
  return p->n > 0 ? p->allowed : p->empty_note;
}

bool tf__fs_take_denial(tf_status *st) {
  if (!t_denied) {
    return false;
  }
  t_denied = false;
  tf_status_set(st, TF_PERMISSION_DENIED, "%s", t_denial);
  return true;
}

/* The root for path (write: it must be writable) with *rel and *abs set
 * (*abs malloc'd), or NULL with the refusal recorded / errno set. */
static const fs_root *resolve(const tf_fs_policy *p, const char *path, bool write,
                              char **abs, const char **rel) {
  *abs = normalise(path);
  if (*abs == NULL) {
    return NULL;
  }
  const fs_root *r = pick(p, *abs, rel);
  if (r == NULL) {
    deny("'%s' is outside the directories this cluster allows (%s)", path, allowed(p));
  } else if (write && !r->writable) {
    deny("'%s' is in a read-only directory (%s %s): this cluster allows writes "
         "only under checkpoint_dir (%s)", path, r->label, r->path, allowed(p));
    r = NULL;
  }
  if (r == NULL) {
    free(*abs);
    *abs = NULL;
  }
  return r;
}

/* Set once openat2 answered ENOSYS (a kernel before 5.6, or a seccomp
 * filter that does not know it): the walk below is used from then on. */
static atomic_bool g_no_openat2;

/* The fallback when openat2 is missing: rel (folded: no '.', '..' or empty
 * components) opened one component at a time from rootfd with O_NOFOLLOW,
 * holding each directory's descriptor, so nothing can lead out; a symbolic
 * link anywhere is not followed: -2 (follow: the caller wants the last
 * component followed, as open(2) and stat(2) do). -1 with errno else. */
static int walk(int rootfd, const char *rel, int flags, unsigned mode, bool follow) {
  char *copy = tf__xstrdup(rel), *save = NULL;
  int cur = rootfd, rc = -1, err = 0;
  char *c = strtok_r(copy, "/", &save);
  if (c == NULL || strcmp(rel, ".") == 0) { /* the root itself */
    rc = openat(rootfd, ".", flags | O_CLOEXEC, (mode_t)mode);
    err = errno;
    c = NULL;
  }
  while (c != NULL) {
    char *next = strtok_r(NULL, "/", &save);
    int f = next != NULL ? O_PATH | O_DIRECTORY : flags;
    int fd = openat(cur, c, f | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
    err = errno;
    struct stat sb;
    bool link = fstatat(cur, c, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode);
    if (cur != rootfd) close(cur);
    if (link && (next != NULL || follow || fd < 0)) {
      if (fd >= 0) close(fd);
      rc = -2;
      break;
    }
    if (fd < 0 || next == NULL) {
      rc = fd;
      break;
    }
    cur = fd;
    c = next;
  }
  free(copy);
  errno = err;
  return rc;
}

/* rel opened beneath r: openat2, or the walk without it; an escape (or,
 * with the walk, any symbolic link) is recorded as a refusal. */
static int beneath(const tf_fs_policy *p, const fs_root *r, const char *path,
                   const char *rel, int flags, unsigned mode) {
  struct open_how how = {.flags = (unsigned)(flags | O_CLOEXEC),
                         .mode = (flags & O_CREAT) ? mode : 0,
                         .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
  long fd = -1;
  for (int i = 0; i < 16 && !atomic_load(&g_no_openat2); i++) { /* EAGAIN: a rename raced */
    fd = syscall(SYS_openat2, r->fd, rel, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) {
      atomic_store(&g_no_openat2, true);
    } else if (fd >= 0 || errno != EAGAIN) {
      break;
    }
  }
  if (atomic_load(&g_no_openat2)) {
    fd = walk(r->fd, rel, flags & ~O_NOFOLLOW, mode, (flags & O_NOFOLLOW) == 0);
    if (fd == -2) {
      deny("'%s': a symbolic link under %s %s is not followed (without openat2, "
           "Linux 5.6 or later, no link is; allowed: %s)", path, r->label, r->path,
           allowed(p));
      return -1;
    }
  }
  if (fd < 0 && errno == EXDEV) {
    deny("'%s' leads outside the directories this cluster allows (a symbolic link "
         "or '..' leaves %s %s; allowed: %s)", path, r->label, r->path, allowed(p));
  }
  return (int)fd;
}

/* Tests: behave as on a kernel without openat2. */
void tf__fs_force_walk(bool on) { atomic_store(&g_no_openat2, on); }

/* ---- the calls --------------------------------------------------------- */

static bool is_write(int flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0;
}

static tf_fs_policy *current(void) {
  t_denied = false;
  return atomic_load_explicit(&g_policy, memory_order_acquire);
}

int tf__fs_open(const char *path, int flags, unsigned mode) {
  tf_fs_policy *p = current();
  if (p == NULL) {
    return open(path, flags | O_CLOEXEC, (mode_t)mode);
  }
  char *abs;
  const char *rel;
  const fs_root *r = resolve(p, path, is_write(flags), &abs, &rel);
  int fd = r != NULL ? beneath(p, r, path, rel, flags, mode) : -1;
  int err = errno;
  free(abs);
  errno = err;
  return fd;
}

DIR *tf__fs_opendir(const char *path) {
  if (atomic_load_explicit(&g_policy, memory_order_acquire) == NULL) {
    t_denied = false;
    return opendir(path);
  }
  int fd = tf__fs_open(path, O_RDONLY | O_DIRECTORY, 0);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (fd >= 0 && d == NULL) {
    int err = errno;
    close(fd);
    errno = err;
  }
  return d;
}

static int stat_via(const char *path, struct stat *sb, int extra) {
  int fd = tf__fs_open(path, O_PATH | extra, 0);
  if (fd < 0) {
    return -1;
  }
  int rc = fstat(fd, sb), err = errno;
  close(fd);
  errno = err;
  return rc;
}

int tf__fs_stat(const char *path, struct stat *sb) {
  if (atomic_load_explicit(&g_policy, memory_order_acquire) == NULL) {
    t_denied = false;
    return stat(path, sb);
  }
  return stat_via(path, sb, 0);
}

int tf__fs_lstat(const char *path, struct stat *sb) {
  if (atomic_load_explicit(&g_policy, memory_order_acquire) == NULL) {
    t_denied = false;
    return lstat(path, sb);
  }
  return stat_via(path, sb, O_NOFOLLOW);
}

/* The parent directory of path opened beneath its (writable) root, and the
 * last component in *name (malloc'd); -1 when refused or not found. A path
 * that is a root itself has no parent to act in: refused, except that for
 * mkdir (root_exists) it is EEXIST, as the root is a directory. */
static int open_parent(tf_fs_policy *p, const char *path, bool root_exists,
                       const fs_root **root, char **name) {
  char *abs;
  const char *rel;
  const fs_root *r = resolve(p, path, true, &abs, &rel);
  if (r == NULL) {
    return -1;
  }
  if (strcmp(rel, ".") == 0 && root_exists) {
    free(abs);
    errno = EEXIST;
    return -1;
  }
  if (strcmp(rel, ".") == 0) {
    free(abs);
    deny("'%s' is the allowed directory %s itself, which this cluster does not "
         "let a request create, remove or rename", path, r->label);
    return -1;
  }
  char *dir = tf__xstrdup(rel), *slash = strrchr(dir, '/');
  *name = tf__xstrdup(slash ? slash + 1 : dir);
  if (slash != NULL) {
    *slash = '\0';
  }
  int fd = beneath(p, r, path, slash ? dir : ".", O_PATH | O_DIRECTORY, 0);
  int err = errno;
  free(dir);
  free(abs);
  if (fd < 0) {
    free(*name);
    *name = NULL;
  }
  *root = r;
  errno = err;
  return fd;
}

/* op 'm' mkdirat, 'u' unlinkat, 'r' unlinkat(AT_REMOVEDIR) on the parent. */
static int at_op(const char *path, char op, unsigned mode) {
  tf_fs_policy *p = current();
  const fs_root *r;
  char *name;
  int pfd = open_parent(p, path, op == 'm', &r, &name);
  if (pfd < 0) {
    return -1;
  }
  int rc = op == 'm' ? mkdirat(pfd, name, (mode_t)mode)
           : unlinkat(pfd, name, op == 'r' ? AT_REMOVEDIR : 0);
  int err = errno;
  close(pfd);
  free(name);
  errno = err;
  return rc;
}

int tf__fs_mkdir(const char *path, unsigned mode) {
  if (current() == NULL) {
    return mkdir(path, (mode_t)mode);
  }
  return at_op(path, 'm', mode);
}

int tf__fs_unlink(const char *path) {
  if (current() == NULL) {
    return unlink(path);
  }
  return at_op(path, 'u', 0);
}

int tf__fs_rmdir(const char *path) {
  if (current() == NULL) {
    return rmdir(path);
  }
  return at_op(path, 'r', 0);
}

int tf__fs_rename(const char *from, const char *to) {
  tf_fs_policy *p = current();
  if (p == NULL) {
    return rename(from, to);
  }
  const fs_root *r1, *r2;
  char *n1, *n2;
  int f1 = open_parent(p, from, false, &r1, &n1);
  if (f1 < 0) {
    return -1;
  }
  int f2 = open_parent(p, to, false, &r2, &n2), rc = -1, err = errno;
  if (f2 >= 0) {
    rc = renameat(f1, n1, f2, n2);
    err = errno;
    close(f2);
    free(n2);
  }
  close(f1);
  free(n1);
  errno = err;
  return rc;
}

tf_code tf__fs_check(const char *path, bool write, const char *what, tf_status *st) {
  tf_fs_policy *p = current();
  if (p == NULL) {
    return TF_OK;
  }
  char *abs;
  const char *rel;
  if (resolve(p, path, write, &abs, &rel) != NULL) {
    free(abs);
    return TF_OK;
  }
  if (!t_denied) {
    return tf_status_set(st, TF_UNKNOWN, "%s%s'%s': %s", what ? what : "", what ? ": " : "",
                         path, strerror(errno));
  }
  t_denied = false;
  return tf_status_set(st, TF_PERMISSION_DENIED, "%s%s%s", what ? what : "", what ? ": " : "",
                       t_denial);
}

/* ---- policies ---------------------------------------------------------- */

tf_fs_policy *tf__fs_policy_new(const char *empty_note) {
  tf_fs_policy *p = tf__xcalloc(1, sizeof *p);
  p->empty_note = tf__xstrdup(empty_note);
  p->allowed = tf__xstrdup("");
  return p;
}

/* Rebuilds "label: a, b; label2: c" from the roots in order. */
static void describe(tf_fs_policy *p) {
  char *s = tf__xstrdup("");
  for (int i = 0; i < p->n; i++) {
    bool same = i > 0 && strcmp(p->roots[i - 1].label, p->roots[i].label) == 0;
    char *t = tf__xasprintf("%s%s%s%s%s", s, i == 0 ? "" : same ? ", " : "; ",
                            same ? "" : p->roots[i].label, same ? "" : ": ",
                            p->roots[i].path);
    free(s);
    s = t;
  }
  free(p->allowed);
  p->allowed = s;
}

tf_code tf__fs_policy_add(tf_fs_policy *p, const char *dir, const char *label,
                          bool writable, tf_status *st) {
  if (dir[0] != '/') {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s '%s': not an absolute path", label, dir);
  }
  int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return tf_status_set(st, err == ENOENT ? TF_NOT_FOUND : TF_FAILED_PRECONDITION,
                         "%s '%s': cannot open the directory (%s)", label, dir, strerror(err));
  }
  p->roots = tf__xrealloc(p->roots, (size_t)(p->n + 1) * sizeof *p->roots);
  fs_root *r = &p->roots[p->n++];
  r->path = normalise(dir);
  r->real = realpath(dir, NULL);
  r->label = tf__xstrdup(label);
  r->writable = writable;
  r->fd = fd;
  describe(p);
  return TF_OK;
}

void tf__fs_policy_free(tf_fs_policy *p) {
  if (p == NULL) {
    return;
  }
  for (int i = 0; i < p->n; i++) {
    free(p->roots[i].path);
    free(p->roots[i].real);
    free(p->roots[i].label);
    close(p->roots[i].fd);
  }
  free(p->roots);
  free(p->empty_note);
  free(p->allowed);
  free(p);
}

void tf__fs_policy_install(tf_fs_policy *p) {
  tf__fs_policy_free(atomic_exchange_explicit(&g_policy, p, memory_order_acq_rel));
}

bool tf__fs_confined(void) {
  return atomic_load_explicit(&g_policy, memory_order_acquire) != NULL;
}
