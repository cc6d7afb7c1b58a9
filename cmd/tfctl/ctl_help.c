/* ctl_help.c: tfctl's usage and per-command help texts (`tfctl help
 * COMMAND`, `tfctl COMMAND --help`) and its version line. */
#include "cmd/tfctl/ctl_help.h"

#include <string.h>

#include "tf/version.h"

static const char *const global_text =
    "usage: tfctl [-c CONFIG | -m ADDRESS] [--key FILE] [--timeout-ms N] [--cert FILE] [--ca FILE]\n"
    "             COMMAND ...\n"
    "  health                          every task: job task address up|down incarnation devices\n"
    "  devices                         the cluster's devices\n"
    "  top [--interval MS] [-n N] [--once]\n"
    "                                  live view: each task's steps/s, bytes/s, memory\n"
    "  run GRAPH --fetch NAME:0 ... [--feed NAME=FILE.npy ...] [--target NAME ...] [--out DIR]\n"
    "  graph GRAPH [--format yaml|dot] [--placed]\n"
    "  cluster up (-c CONFIG | CONFIG) [--only TASK] [--run-dir DIR] [--timeout-ms N]\n"
    "  cluster down (-c CONFIG | CONFIG) [--only TASK] [--run-dir DIR]\n"
    "  cluster restart (-c CONFIG | CONFIG) TASK [--run-dir DIR]\n"
    "  submit JOB.yaml                 start a training job; prints its id on the last line\n"
    "  jobs                            the master's jobs: id, name, state, step, loss, time\n"
    "  status JOB [--follow]           a job's progress and metrics; --follow: until it ends\n"
    "  step JOB [-n N]                 a paused job runs N more steps (default 1)\n"
    "  pause JOB, resume JOB, cancel JOB\n"
    "  logs JOB [--follow]             a job's log lines; --follow: until it ends\n"
    "  checkpoint JOB                  take a checkpoint now; prints its path on the last line\n"
    "  checkpoints JOB                 a job's checkpoints: name, step, time, size\n"
    "  restore JOB [CHECKPOINT]        go back to a checkpoint (default: the latest good one)\n"
    "  inspect CHECKPOINT [--export NAME FILE.npy]\n"
    "                                  a checkpoint's tensors (files only, no master)\n"
    "  keygen FILE                     write a new random key (mode 0600) for a spec's auth\n"
    "  help [COMMAND]                  this text, or a command's\n"
    "options: -c, --config CONFIG      the cluster spec (YAML); its master task is the address\n"
    "         -m, --master ADDRESS     the master's address (host:port or a URL)\n"
    "         --key FILE               sign requests with this key (default: $TF_KEY_FILE,\n"
    "                                  else the spec's auth.client_key_file or key_file)\n"
    "         --timeout-ms N           the deadline of each call (default: the spec's rpc_ms,\n"
    "                                  else 10000)\n"
    "         --cert FILE              tls+tcp: this client's certificate and key (PEM;\n"
    "                                  default: the spec's tls.client_cert_key_file)\n"
    "         --ca FILE                tls+tcp with -m: the cluster CA (with -c: the spec's)\n"
    "         -h, --help               help; --version: the version\n"
    "exit status: 0 success, 1 the command failed (one line \"tfctl: <reason>\" on\n"
    "stderr), 2 usage error. docs/operations.md has the details.\n";

typedef struct ctl_help_entry {
  const char *command;
  const char *text;
} ctl_help_entry;

static const ctl_help_entry entries[] = {
    {"health",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] health\n"
     "Prints one line per task: job, task, address, up or down, incarnation and\n"
     "devices, with the reason a task is down. Asks the master; with -c it also\n"
     "asks every task directly, and reports them when the master does not answer.\n"
     "Exits 1 when any task is down.\n"},
    {"devices",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] devices\n"
     "Prints the cluster's devices: name, type, incarnation and task address.\n"},
    {"top",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] top [--interval MS]\n"
     "           [-n N | --once]\n"
     "A live view of the cluster: one row per task (the master first) with its\n"
     "state (up or down), steps/s, bytes/s received and sent (every peer, control\n"
     "calls and tensors), memory in use and its peak, and steps running now.\n"
     "Rates are over the last interval (--interval, default 1000 ms): the first\n"
     "frame comes one interval after the start. On a terminal the view is\n"
     "redrawn in place until Ctrl-C; with -n N (--once: -n 1), or when the\n"
     "output is not a terminal, frames are printed one after another, each\n"
     "with a header line and a time stamp (N frames, else until interrupted).\n"
     "A task that does not answer shows as down and top goes on; it exits 1\n"
     "only when the master does not answer at the start. Each call's deadline\n"
     "is --timeout-ms, else the spec's rpc_ms.\n"},
    {"run",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] run GRAPH\n"
     "           [--fetch NAME:0 ...] [--feed NAME=FILE.npy ...] [--target NAME ...]\n"
     "           [--out DIR]\n"
     "Runs one step of GRAPH (.tfg or .yaml) on the cluster: feeds each --feed\n"
     "from a .npy file, runs each --target, prints each --fetch (and with --out\n"
     "saves it as DIR/<name>.npy; DIR is created, and checked before the step).\n"
     "Needs at least one --fetch or --target. The step's deadline is --timeout-ms,\n"
     "else the spec's rpc_ms.\n"},
    {"graph",
     "usage: tfctl [-c CONFIG | -m ADDRESS] graph GRAPH [--format yaml|dot] [--placed]\n"
     "Prints GRAPH as YAML (default) or Graphviz dot; with --placed, placed on\n"
     "the cluster's devices (needs -c or -m).\n"},
    {"cluster",
     "usage: tfctl cluster up (-c CONFIG | CONFIG) [--only TASK] [--run-dir DIR]\n"
     "                        [--timeout-ms N]\n"
     "       tfctl cluster down (-c CONFIG | CONFIG) [--only TASK] [--run-dir DIR]\n"
     "       tfctl cluster restart (-c CONFIG | CONFIG) TASK [--run-dir DIR]\n"
     "Starts (up) or stops (down) a local development cluster: every task of\n"
     "CONFIG, as tfmaster and tfworker processes with their logs and pid files\n"
     "under DIR (default: the spec's run_dir; a relative run_dir is relative to\n"
     "CONFIG's directory). up waits until every task answers (--timeout-ms).\n"
     "--only TASK, and restart (down, then up), act on one task, named\n"
     "/job:worker/task:1, worker:1 or worker-1. When the spec's auth.key_file\n"
     "does not exist, up generates it (mode 0600).\n"},
    {"keygen",
     "usage: tfctl keygen FILE\n"
     "Writes a new key (32 random bytes as hex) to FILE with mode 0600, for a\n"
     "cluster spec's auth section (key_file, client_key_file, readonly_key_file).\n"
     "Never overwrites an existing file. docs/security.md.\n"},
    {"submit",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] submit JOB.yaml\n"
     "Sends the job spec JOB.yaml (docs/jobs.md; at most 1 MiB) to the master,\n"
     "which checks it and starts the job. Prints \"submitted job ID to MASTER\"\n"
     "and then the job's id alone on the last line:\n"
     "  job=$(tfctl -c conf/local.yaml submit job.yaml | tail -1)\n"
     "A spec the master refuses is reported as it says (file:line:column: key:\n"
     "reason), exit 1.\n"},
    {"jobs",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] jobs\n"
     "Prints the master's jobs, oldest first: JOB (the id), NAME, STATE, STEP\n"
     "(done/total), LOSS (the latest training loss) and ELAPSED; \"no jobs\" when\n"
     "there are none.\n"},
    {"status",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] status JOB [--follow]\n"
     "Prints the job's id, name, state, mode, step, loss, steps/s, elapsed time,\n"
     "recoveries (automatic ones so far), the newest checkpoint (PATH (step S),\n"
     "when there is one), the error when it failed, and its latest metrics\n"
     "(NAME: VALUE) last.\n"
     "--follow: polls every 200 ms until the job is done, failed or cancelled,\n"
     "showing one progress line on a terminal (a line every 5 s and on every\n"
     "state change otherwise), then prints the same summary. Polls that fail\n"
     "are retried; after 10 s without an answer it gives up. Exit status with\n"
     "--follow: 0 when the job is done, 1 when it failed or was cancelled.\n"},
    {"step",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] step JOB [-n N]\n"
     "Lets the paused job JOB run N more global steps (1 to 2147483647, default\n"
     "1), then pause again. Prints the job's state, step and loss.\n"},
    {"pause",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] pause JOB\n"
     "Pauses the job JOB; prints the state the master then reports (\"job JOB:\n"
     "paused\"). resume and step let it go on.\n"},
    {"resume",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] resume JOB\n"
     "Lets the paused job JOB run again; prints the state the master then\n"
     "reports (\"job JOB: running\").\n"},
    {"cancel",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] cancel JOB\n"
     "Stops the job JOB for good; prints the state the master then reports\n"
     "(\"job JOB: cancelled\").\n"},
    {"logs",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] logs JOB [--follow]\n"
     "Prints the job's log lines that the master keeps, oldest first. --follow:\n"
     "then prints new lines as they come until the job is done, failed or\n"
     "cancelled (exit 0 once every line is printed).\n"},
    {"checkpoint",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] checkpoint JOB\n"
     "Makes the running or paused job JOB save a checkpoint between two steps\n"
     "(the job's spec needs a checkpoint section) and waits for it, up to\n"
     "--timeout-ms. Prints \"job JOB: checkpoint at step S\" and then the\n"
     "checkpoint's path alone on the last line:\n"
     "  ckpt=$(tfctl -c conf/local.yaml checkpoint JOB | tail -1)\n"},
    {"checkpoints",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] checkpoints JOB\n"
     "Prints the checkpoints in the job's checkpoint directory, oldest first:\n"
     "CHECKPOINT (its name), STEP, TIME (when it was written, local time) and\n"
     "SIZE; \"no checkpoints yet\" when there are none.\n"},
    {"restore",
     "usage: tfctl (-c CONFIG | -m ADDRESS) [--timeout-ms N] restore JOB [CHECKPOINT]\n"
     "Makes the job JOB go back to CHECKPOINT (a name from tfctl checkpoints,\n"
     "ckpt-<step>, or the path tfctl checkpoint printed; default: the latest\n"
     "checkpoint that verifies). The checkpoint is checked first; the steps in\n"
     "flight are aborted, the variables restored, and the job goes on from\n"
     "the checkpoint's step. Prints what the master does (\"restoring PATH\n"
     "(step S)\") and any newer checkpoint it skipped and why.\n"},
    {"inspect",
     "usage: tfctl inspect CHECKPOINT [--export NAME FILE.npy]\n"
     "Reads checkpoint files (no cluster needed) and checks every CRC32C.\n"
     "CHECKPOINT is a checkpoint directory (ckpt-<step>, with its manifest), a\n"
     "job's checkpoint directory (its latest checkpoint that verifies is taken\n"
     "and named; damaged newer ones are noted on stderr), or one .shard file.\n"
     "Prints the checkpoint's job, step, time, mode and size, then per shard a\n"
     "table of its tensors: NAME, DTYPE, SHAPE (as stored), BYTES and SLICE\n"
     "(TensorFlow's shape_and_slice text; empty for a whole tensor).\n"
     "--export NAME FILE.npy writes the variable NAME, whole (assembled from\n"
     "its slices in every shard), as a NumPy .npy file.\n"
     "Damage is reported as DATA_LOSS naming the file and tensor, exit 1.\n"},
    {"help",
     "usage: tfctl help [COMMAND]\n"
     "Prints tfctl's usage, or COMMAND's.\n"},
};

const char *tf_ctl_usage(void) { return global_text; }

const char *tf_ctl_help_text(const char *command) {
  if (command == NULL) {
    return global_text;
  }
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    if (strcmp(entries[i].command, command) == 0) {
      return entries[i].text;
    }
  }
  return NULL;
}

void tf_ctl_print_version(FILE *f) { fprintf(f, "tfctl %s\n", tf_version()); }
