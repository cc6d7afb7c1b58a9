/* log.c: one line per message, written with one write(2) so lines from
 * different threads never interleave. */
#include "lib/runtime/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static _Atomic int log_level = LOG_INFO;
static char log_name[128] = "tf";

void tf_log_set_level(int level) { atomic_store(&log_level, level); }
int tf_log_level(void) { return atomic_load(&log_level); }

void tf_log_set_name(const char *name) {
  snprintf(log_name, sizeof log_name, "%s", name ? name : "tf");
}

int tf_log_parse_level(const char *s) {
  static const struct { const char *name; int level; } levels[] = {
      {"err", LOG_ERR},   {"error", LOG_ERR}, {"warning", LOG_WARNING},
      {"warn", LOG_WARNING}, {"notice", LOG_NOTICE}, {"info", LOG_INFO},
      {"debug", LOG_DEBUG}};
  for (size_t i = 0; s != NULL && i < sizeof levels / sizeof levels[0]; i++) {
    if (strcmp(s, levels[i].name) == 0) return levels[i].level;
  }
  return -1;
}

void tf_log(int prio, const char *fmt, ...) {
  if (prio > atomic_load(&log_level)) return;
  char line[2048];
  int n = snprintf(line, sizeof line, "<%d>%s: ", prio, log_name);
  if (n < 0 || (size_t)n >= sizeof line) n = 0;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, len);
  (void)w;
}
