/* ctl_help.h: tfctl's usage, per-command help and version line. */
#ifndef TF_CMD_TFCTL_CTL_HELP_H
#define TF_CMD_TFCTL_CTL_HELP_H

#include <stdio.h>

/* The global usage: the commands, the options, the exit statuses. */
const char *tf_ctl_usage(void);
/* The help of command (NULL: the global usage), or NULL for a command
 * tfctl does not have. */
const char *tf_ctl_help_text(const char *command);
/* "tfctl <version>\n" to f. */
void tf_ctl_print_version(FILE *f);

#endif
