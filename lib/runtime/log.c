/* log.c: one line per message, written with one write(2) so lines from
 * different threads never interleave. */
#include "lib/runtime/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = LOG_INFO;
static _Atomic int log_stamps = 0;
static char log_name[128] = "tf";

void tf_log_set_level(int level) { atomic_store(&log_level, level); }
int tf_log_level(void) { return atomic_load(&log_level); }

void tf_log_set_name(const char *name) {
  snprintf(log_name, sizeof log_name, "%s", name ? name : "tf");
}

void tf_log_set_timestamps(int on) { atomic_store(&log_stamps, on != 0); }

int tf_log_stderr_is_journal(void) {
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev = 0, ino = 0;
  struct stat sb;
  if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2) return 0;
  if (fstat(STDERR_FILENO, &sb) != 0) return 0;
  return (unsigned long long)sb.st_dev == dev && (unsigned long long)sb.st_ino == ino;
}

/* "2026-11-27T13:50:01.123Z " into buf (at least 32 bytes); its length. */
static int stamp(char *buf, size_t len) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  int n = (int)strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
  int m = snprintf(buf + n, len - (size_t)n, ".%03ldZ ", ts.tv_nsec / 1000000);
  return n + (m > 0 ? m : 0);
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
  int t = atomic_load(&log_stamps) ? stamp(line, 40) : 0;
  int n = snprintf(line + t, sizeof line - (size_t)t, "<%d>%s: ", prio, log_name);
  n = n < 0 || (size_t)n >= sizeof line - (size_t)t ? t : n + t;
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
