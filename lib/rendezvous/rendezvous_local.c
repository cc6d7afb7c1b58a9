/* rendezvous_local.c: the in-process rendezvous tables of a local session
 * (tf__rdv_local_ops in lib/core/framework/rendezvous.h), registered from a
 * constructor so that lib/core needs no link to this layer. They are a
 * tf_rdv_mgr without a remote path: a value sent to a device of this
 * process is handed over in memory, a send to any other device fails with
 * UNIMPLEMENTED naming it. A step's table is forgotten when the step ends
 * (no tombstone: nothing outside the process can send to it late), so a
 * session that runs many steps keeps no per-step state. */
#include "lib/rendezvous/rendezvous_mgr.h"

/* Idle tables never outlive their step here; the TTL only matters to a
 * sweep, which a local session never runs. */
#define LOCAL_TTL_MS (3600LL * 1000)

static void *local_open(const char *task_prefix) {
  return tf_rdv_mgr_new(task_prefix, LOCAL_TTL_MS, NULL, NULL);
}

static tf_rendezvous *local_step_begin(void *tables, uint64_t step_id,
                                       tf_status *st) {
  return tf_rdv_mgr_step(tables, step_id, st);
}

static void local_step_end(void *tables, tf_rendezvous *r, uint64_t step_id) {
  tf_rdv_mgr_forget(tables, step_id);
  tf_rdv_step_unref(r);
}

static void local_close(void *tables) { tf_rdv_mgr_free(tables); }

static const tf__rdv_local_ops local_ops = {
    .open = local_open,
    .step_begin = local_step_begin,
    .step_end = local_step_end,
    .close = local_close,
};

__attribute__((constructor)) static void register_local_tables(void) {
  tf__rdv_set_local_ops(&local_ops);
}
