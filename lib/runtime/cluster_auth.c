/* cluster_auth.c: keyrings from the spec's auth section and the exposure
 * rule (cluster_auth.h). */
#include "lib/runtime/cluster_auth.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/base/util.h"

static tf_code add(tf_auth *a, const tf_cluster_spec *s, const char *file,
                   const char *field, tf_auth_role role, tf_status *st) {
  tf_code c = tf_auth_add_key_file(a, file, role, st);
  if (c != TF_OK) {
    tf_status_prefix(st, "%s: %s", s->path, field);
  }
  return c;
}

tf_code tf_cluster_auth_daemon(const tf_cluster_spec *s, tf_auth **out, tf_status *st) {
  *out = NULL;
  if (s->auth_mode != TF_CLUSTER_AUTH_KEY) {
    return TF_OK;
  }
  tf_auth *a = NULL;
  TF_TRY(tf_auth_new(s->auth_window_ms, &a, st));
  if (add(a, s, s->auth_key_file, "auth.key_file", TF_AUTH_ROLE_TASK, st) != TF_OK ||
      (s->auth_client_key_file != NULL &&
       add(a, s, s->auth_client_key_file, "auth.client_key_file", TF_AUTH_ROLE_CLIENT,
           st) != TF_OK) ||
      (s->auth_readonly_key_file != NULL &&
       add(a, s, s->auth_readonly_key_file, "auth.readonly_key_file",
           TF_AUTH_ROLE_READONLY, st) != TF_OK)) {
    tf_auth_free(a);
    return st->code; /* set by the add that failed */
  }
  *out = a;
  return TF_OK;
}

tf_code tf_cluster_auth_client(const tf_cluster_spec *s, const char *key_file,
                               tf_auth **out, tf_status *st) {
  *out = NULL;
  const char *file = key_file;
  if (file == NULL && s != NULL && s->auth_mode == TF_CLUSTER_AUTH_KEY) {
    if (s->auth_client_key_file != NULL && access(s->auth_client_key_file, R_OK) == 0) {
      file = s->auth_client_key_file;
    } else if (access(s->auth_key_file, R_OK) == 0) {
      file = s->auth_key_file;
    } else {
      return tf_status_set(st, TF_PERMISSION_DENIED,
                           "%s requires authentication, and neither %s%s%s is readable "
                           "here: give tfctl --key FILE",
                           s->path, s->auth_key_file,
                           s->auth_client_key_file != NULL ? " nor " : "",
                           s->auth_client_key_file != NULL ? s->auth_client_key_file : "");
    }
  }
  if (file == NULL) {
    return TF_OK;
  }
  tf_auth *a = NULL;
  int64_t window = s != NULL ? s->auth_window_ms : TF_AUTH_DEFAULT_WINDOW_MS;
  TF_TRY(tf_auth_new(window, &a, st));
  if (tf_auth_add_key_file(a, file, TF_AUTH_ROLE_CLIENT, st) != TF_OK) {
    tf_auth_free(a);
    return st->code;
  }
  *out = a;
  return TF_OK;
}

static pthread_mutex_t env_mu = PTHREAD_MUTEX_INITIALIZER;
static tf_auth *env_auth; /* kept for the process's life */

tf_code tf_cluster_auth_from_env(tf_status *st) {
  const char *file = getenv("TF_KEY_FILE");
  if (file == NULL || file[0] == '\0' || tf_auth_process() != NULL) {
    return TF_OK;
  }
  pthread_mutex_lock(&env_mu);
  tf_code c = TF_OK;
  if (env_auth == NULL) {
    c = tf_cluster_auth_client(NULL, file, &env_auth, st);
    if (c != TF_OK) {
      tf_status_prefix(st, "TF_KEY_FILE");
    }
  }
  if (c == TF_OK && tf_auth_process() == NULL) {
    tf_auth_set_process(env_auth);
  }
  pthread_mutex_unlock(&env_mu);
  return c;
}

bool tf_cluster_host_is_loopback(const char *host) {
  char h[64];
  size_t n = strlen(host);
  if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
    host++;
    n -= 2;
  }
  if (n == 0 || n >= sizeof h) {
    return false;
  }
  memcpy(h, host, n);
  h[n] = '\0';
  if (strcasecmp(h, "localhost") == 0) {
    return true;
  }
  struct in_addr v4;
  struct in6_addr v6;
  if (inet_pton(AF_INET, h, &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  return inet_pton(AF_INET6, h, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

/* The host part of a host:port address (IPv6 in brackets kept). */
static void host_of(const char *addr, char *h, size_t n) {
  const char *colon = strrchr(addr, ':');
  size_t len = colon != NULL ? (size_t)(colon - addr) : strlen(addr);
  snprintf(h, n, "%.*s", (int)(len < n ? len : n - 1), addr);
}

static bool is_wildcard(const char *h) {
  return strcmp(h, "0.0.0.0") == 0 || strcmp(h, "[::]") == 0 || strcmp(h, "::") == 0 ||
         h[0] == '\0';
}

tf_code tf_cluster_check_exposure(const tf_cluster_spec *s, const char *job, int task,
                                  char *warning, size_t n, tf_status *st) {
  warning[0] = '\0';
  const tf_cluster_job *j = tf_cluster_spec_job(s, job);
  bool net = strcmp(s->transport, "tcp") == 0 || strcmp(s->transport, "tls+tcp") == 0;
  if (j == NULL || j->addrs == NULL || task < 0 || task >= j->n_tasks) {
    return TF_OK; /* no such task: the caller says so */
  }
  if (!net) {
    if (s->auth_mode != TF_CLUSTER_AUTH_KEY) {
      snprintf(warning, n, "authentication is off (%s has no auth key): any local process "
               "that can reach this task may run graphs on it (docs/security.md)", s->path);
    }
    return TF_OK;
  }
  char host[256];
  host_of(j->addrs[task], host, sizeof host);
  bool loopback = tf_cluster_host_is_loopback(host);
  const char *every = is_wildcard(host) ? " on every interface" : "";
  if (s->auth_mode == TF_CLUSTER_AUTH_UNSET && !loopback) {
    return tf_status_set(st, TF_FAILED_PRECONDITION,
                         "%s: /job:%s/task:%d would listen at '%s'%s without "
                         "authentication: add an auth section with a key_file (tfctl keygen "
                         "FILE; docs/security.md), or write 'auth: none' to run "
                         "unauthenticated on a network you trust",
                         s->path, job, task, j->addrs[task], every);
  }
  if (s->auth_mode != TF_CLUSTER_AUTH_KEY) {
    snprintf(warning, n, "authentication is off (%s): anyone who can reach '%s'%s may run "
             "any graph here (docs/security.md)",
             s->auth_mode == TF_CLUSTER_AUTH_NONE ? "auth: none" : "no auth section",
             j->addrs[task], every);
  } else if (every[0] != '\0') {
    snprintf(warning, n, "listening at '%s'%s: every request must be signed, but consider "
             "naming the one interface the cluster uses", j->addrs[task], every);
  }
  return TF_OK;
}
