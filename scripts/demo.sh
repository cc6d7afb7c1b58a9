#!/bin/sh
# demo.sh: the main job (make demo). Starts a local cluster of real
# daemons (conf/local.yaml: 1 master, 1 ps, 2 workers on loopback),
# submits the Fashion-MNIST MLP as a sync job (conf/jobs/fmnist-mlp-sync.yaml),
# follows it with tfctl's progress display and stops the cluster, also when
# interrupted. The last line is the job's `test_accuracy: X`. A cluster of
# conf/local.yaml that is already up is used and left running.
set -eu
BIN=${BIN:-build/bin}
CONF=${CONF:-conf/local.yaml}
JOB=${JOB:-conf/jobs/fmnist-mlp-sync.yaml}
TFCTL="$BIN/tfctl"
started=0
id=

stop() {
  trap - EXIT INT TERM
  if [ -n "$id" ] && [ "${1:-}" = interrupted ]; then
    "$TFCTL" -c "$CONF" cancel "$id" >/dev/null 2>&1 || true
  fi
  if [ "$started" = 1 ]; then
    "$TFCTL" cluster down "$CONF" >/dev/null 2>&1 || true
  fi
}
trap stop EXIT
trap 'stop interrupted; exit 130' INT TERM

if "$TFCTL" -c "$CONF" health >/dev/null 2>&1; then
  echo "demo: using the cluster of $CONF that is already up"
else
  "$TFCTL" cluster up "$CONF"
  started=1
fi
# A job starts from the latest checkpoint in its checkpoint.dir (as
# TensorFlow's MonitoredTrainingSession does): the demo trains afresh.
rm -rf run/local/checkpoints/fmnist-mlp-sync
id=$("$TFCTL" -c "$CONF" submit "$JOB" | tail -n 1)
"$TFCTL" -c "$CONF" status "$id" --follow
