/* ctl_help.c: tfctl's usage and per-command help texts (`tfctl help
 * COMMAND`, `tfctl COMMAND --help`) and its version line. */
#include "cmd/tfctl/ctl_help.h"

#include <string.h>

#include "tf/version.h"

static const char *const global_text =
    "usage: tfctl [-c CONFIG | -m ADDRESS] [--timeout-ms N] COMMAND ...\n"
    "  health                          every task: job task address up|down incarnation devices\n"
    "  devices                         the cluster's devices\n"
    "  run GRAPH --fetch NAME:0 ... [--feed NAME=FILE.npy ...] [--target NAME ...] [--out DIR]\n"
    "  graph GRAPH [--format yaml|dot] [--placed]\n"
    "  cluster up (-c CONFIG | CONFIG) [--run-dir DIR] [--timeout-ms N]\n"
    "  cluster down (-c CONFIG | CONFIG) [--run-dir DIR]\n"
    "  help [COMMAND]                  this text, or a command's\n"
    "options: -c, --config CONFIG      the cluster spec (YAML); its master task is the address\n"
    "         -m, --master ADDRESS     the master's address (host:port or a URL)\n"
    "         --timeout-ms N           the deadline of each call (default: the spec's rpc_ms,\n"
    "                                  else 10000)\n"
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
     "usage: tfctl cluster up (-c CONFIG | CONFIG) [--run-dir DIR] [--timeout-ms N]\n"
     "       tfctl cluster down (-c CONFIG | CONFIG) [--run-dir DIR]\n"
     "Starts (up) or stops (down) a local development cluster: every task of\n"
     "CONFIG whose address is on this machine, as tfmaster and tfworker\n"
     "processes with their logs and pid files under DIR (default: the spec's\n"
     "run_dir). up waits until every task answers (--timeout-ms).\n"},
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
