/* fs_confine.h: confinement of file access (internal). A policy is a list
 * of allowed directories ("roots"), each read-only (the cluster spec's
 * data_dirs) or read-write (its checkpoint_dir), each held open as an
 * O_PATH directory descriptor. The tf__fs_* calls pick the root a path
 * lies under (the path made absolute and normalised lexically: '.', '..'
 * and repeated '/' folded; the longest root wins) and resolve the rest
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from that root's
 * descriptor, so neither '..' nor a symbolic link can leave it; mkdir,
 * unlink and rename open the parent that way and act on the last
 * component with the *at() call. A path outside every root, an escape, or
 * a write under a read-only root is refused before anything is created or
 * truncated. Where openat2 is missing (Linux before 5.6, or a seccomp
 * filter answering ENOSYS) the rest is opened one component at a time with
 * O_NOFOLLOW from the root's descriptor instead, and then no symbolic link
 * under a root is followed (refused), since the walk cannot tell where one
 * leads without following it.
 *
 * One policy is installed per process: tfworker and tfmaster install
 * theirs at start, before serving. With none installed (the embedded
 * library, tfctl) every call is the plain system call, unconfined.
 *
 * Errors: the calls return -1 (or NULL) with errno set, as the system
 * calls do. A refusal by the policy sets errno to EACCES and records a
 * message for the calling thread (PERMISSION_DENIED naming the path and
 * the allowed directories); the caller's error path takes it with
 * tf__fs_take_denial instead of reporting strerror(EACCES). */
#ifndef TF_CORE_BASE_FS_CONFINE_H
#define TF_CORE_BASE_FS_CONFINE_H

#include <dirent.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "tf/status.h"

typedef struct tf_fs_policy tf_fs_policy;

/* A policy allowing nothing yet. empty_note (copied) ends the refusal
 * message while the policy has no root, e.g. "the cluster spec sets
 * neither data_dirs nor checkpoint_dir". */
tf_fs_policy *tf__fs_policy_new(const char *empty_note);
/* Adds dir (absolute) under the label it is listed with in messages
 * ("data_dirs", "checkpoint_dir"). NOT_FOUND or FAILED_PRECONDITION naming
 * dir when it is not an existing directory; INVALID_ARGUMENT when it is
 * relative. */
tf_code tf__fs_policy_add(tf_fs_policy *p, const char *dir, const char *label,
                          bool writable, tf_status *st);
void tf__fs_policy_free(tf_fs_policy *p); /* NULL-safe */

/* Makes p (owned from now on; NULL: none, unconfined) the process's policy
 * and frees the previous one. Call it before other threads use files. */
void tf__fs_policy_install(tf_fs_policy *p);
/* True when a policy is installed. */
bool tf__fs_confined(void);

/* A refusal ahead of time, for requests naming paths (job specs): OK when
 * no policy is installed or path lies lexically under a root (writable if
 * write); else PERMISSION_DENIED "<what>: '<path>' is outside ..." (what
 * may be NULL). The opens themselves still resolve beneath the root. */
tf_code tf__fs_check(const char *path, bool write, const char *what,
                     tf_status *st);

/* open(2): flags with O_WRONLY, O_RDWR, O_CREAT or O_TRUNC need a writable
 * root. O_CLOEXEC is always added. */
int tf__fs_open(const char *path, int flags, unsigned mode);
/* opendir(3) (a read). */
DIR *tf__fs_opendir(const char *path);
/* mkdir(2), unlink(2), rmdir(2), rename(2) (both paths under one writable root). */
int tf__fs_mkdir(const char *path, unsigned mode);
int tf__fs_unlink(const char *path);
int tf__fs_rmdir(const char *path);
int tf__fs_rename(const char *from, const char *to);
/* stat(2) and lstat(2) (reads). */
int tf__fs_stat(const char *path, struct stat *sb);
int tf__fs_lstat(const char *path, struct stat *sb);

/* When the last tf__fs_* call of this thread was refused by the policy:
 * sets *st to its PERMISSION_DENIED message, forgets it and returns true;
 * else false, *st untouched. */
bool tf__fs_take_denial(tf_status *st);

/* Tests: on, every call takes the path of a kernel without openat2. */
void tf__fs_force_walk(bool on);

#endif
