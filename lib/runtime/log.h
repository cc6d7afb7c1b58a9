/* log.h: daemon logging to stderr with syslog priority prefixes ("<6>"),
 * which journald turns into levels; other readers see them as a tag.
 *   <6>tfworker /job:worker/task:1: registered graph 0000000000000003 */
#ifndef TF_RUNTIME_LOG_H
#define TF_RUNTIME_LOG_H

#include <syslog.h>

/* Messages above level (a LOG_* priority) are dropped; default LOG_INFO. */
void tf_log_set_level(int level);
int tf_log_level(void);
/* The prefix after the priority ("tfworker /job:worker/task:1"); copied. */
void tf_log_set_name(const char *name);
/* Parses "err", "warning", "notice", "info", "debug"; -1 if unknown. */
int tf_log_parse_level(const char *s);
void tf_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
