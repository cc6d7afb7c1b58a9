/* hostlist.h: Slurm's compressed host lists and task counts, as srun puts
 * them in SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE.
 *
 * A host list is items separated by ',' or white space; an item is a name
 * with bracket groups of numbers, each group a ','-list of N or LO-HI:
 *   n[009-011]        -> n009 n010 n011   (the width of LO is kept)
 *   a[1-2,5],b3       -> a1 a2 a5 b3
 *   r[1-2]-n[01-02]   -> r1-n01 r1-n02 r2-n01 r2-n02
 * Several groups expand in Slurm's order (`scontrol show hostnames`, Slurm
 * 22.05): the last group varies fastest, then the first, the second, ...
 * Like Slurm, text after the last group ("n[1-2]x") is refused, duplicates
 * are kept and empty items skipped. Names are [A-Za-z0-9._-]; a list
 * expands to at most TF_HOSTLIST_MAX names, checked before anything is
 * allocated, so n[0-999999999] is an error, not an allocation. Errors name
 * the list and the 1-based character, e.g.
 *   "hostlist 'n[3-1]' at character 3: range '3-1' runs backwards". */
#ifndef TF_RUNTIME_HOSTLIST_H
#define TF_RUNTIME_HOSTLIST_H

#include "tf/status.h"

#define TF_HOSTLIST_MAX 65536  /* names (or tasks) one list may give */
#define TF_HOSTLIST_NAME_MAX 255 /* characters in one expanded name */

/* Expands list into *names (malloc'd, *n strings, free with
 * tf_hostlist_free). INVALID_ARGUMENT for a malformed or empty list, or
 * one of more than TF_HOSTLIST_MAX names; *names is NULL then. */
tf_code tf_hostlist_expand(const char *list, char ***names, int *n,
                           tf_status *st);
void tf_hostlist_free(char **names, int n);

/* Expands Slurm's tasks-per-node syntax, items N or N(xM) separated by
 * ',': "2(x3),1" -> 2 2 2 1. *counts is malloc'd (*n of them, each >= 1);
 * INVALID_ARGUMENT as for tf_hostlist_expand (the total of counts too is
 * at most TF_HOSTLIST_MAX). */
tf_code tf_tasks_per_node_expand(const char *s, int **counts, int *n,
                                 tf_status *st);

#endif
