/* jobutil.h: what the job tests on real daemons share (chaos_test,
 * recovery_test, ckpt_cmds_test, metrics_test, top_test): tfctl runs, a
 * small synthetic dataset, a small job spec, submitting a job and reading
 * its status. Every call has a deadline;
 * failures go through TH_REQUIRE (harness.h). */
#ifndef TF_TEST_INTEGRATION_JOBUTIL_H
#define TF_TEST_INTEGRATION_JOBUTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "test/integration/harness.h"

/* The synthetic dataset's images: 4 x 4 uint8, 3 classes. */
#define TJ_PIXELS 16
#define TJ_CLASSES 3

/* Runs `tfctl -c CONFIG a0 ...` (NULL-terminated, at most 12 arguments)
 * for at most ms; out and err (may be NULL) get its output (malloc'd).
 * Returns its exit code (th_run's). */
int tj_tfctl(th_cluster *c, int64_t ms, char **out, char **err, const char *a0, ...);

/* DIR/<stem>-images.idx (uint8 [n, 4, 4]) and DIR/<stem>-labels.idx
 * (uint8 [n]): a bright quarter per class over noise (learnable), from
 * seed. */
void tj_write_idx(th_cluster *c, const char *stem, int n, uint32_t seed);

/* Writes DIR/<file>: job <name>, an MLP (dense <units> tanh, dense
 * TJ_CLASSES) on DIR/train-*.idx (tj_write_idx "train"), batch 8, SGD
 * 0.1, sync over <workers>, <steps> steps logged every <log_every>, then
 * extra YAML as written (e.g. a checkpoint section; "" for none). Returns
 * the path (malloc'd). */
char *tj_write_mlp_spec(th_cluster *c, const char *file, const char *name, int units,
                        int workers, long long steps, int log_every, const char *extra);

/* Submits the spec at path; returns the job id (malloc'd). */
char *tj_submit(th_cluster *c, const char *path);

/* `tfctl status ID` (malloc'd; "" when tfctl failed). */
char *tj_status(th_cluster *c, const char *id);

/* The number after "\n<key>: " in out (the first line counts too), or NAN. */
double tj_field(const char *out, const char *key);

/* Whether status output out says "state: <state>". */
bool tj_has_state(const char *out, const char *state);

/* The last non-empty line of s (a static buffer). */
const char *tj_last_line(const char *s);

/* Removes dir and everything under it (best effort). */
void tj_remove_tree(const char *dir);

#endif
