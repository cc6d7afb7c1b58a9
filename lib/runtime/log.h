/* log.h: daemon logging to stderr with syslog priority prefixes ("<6>"),
 * which journald turns into levels; other readers see them as a tag.
 *   <6>tfworker /job:worker/task:1: registered graph 0000000000000003
 * With timestamps on (a daemon whose stderr is not journald's), each line
 * starts with the UTC time to the millisecond:
 *   2026-11-27T13:50:01.123Z <6>tfworker /job:worker/task:1: ... */
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
/* Prefixes lines with the UTC time (default off). */
void tf_log_set_timestamps(int on);
/* True when stderr is journald's stream: $JOURNAL_STREAM ("DEV:INODE",
 * set by systemd) names stderr's device and inode. journald stamps each
 * line itself, and reads the priority only from the line's start. */
int tf_log_stderr_is_journal(void);
void tf_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
