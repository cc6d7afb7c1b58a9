/* placement.c: assigns every node of a graph to a device (placement.h).
 * Feasible device sets per node (kernel and request), colocation groups
 * by union-find with intersected sets, the ps round-robin and default-job
 * rules for groups whose requests name no job, the merging of groups that
 * an edge dearer to cut than their work joins, then a greedy list
 * scheduler over a topological order that puts each group on the device
 * where it would finish first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/runtime/placement_impl.h"

#define DEFAULT_BYTES_PER_NS 1.0
#define DEFAULT_LATENCY_NS 65000

typedef struct placer {
  const tf_graph *g;
  int n;
  const tf_place_device *devs;
  int nd;
  tf_devname *dn;      /* parsed device names */
  tf_devname *req;     /* parsed requests, per node */
  unsigned char *feas; /* n x nd: node i may run on device d */
  unsigned char *gfeas; /* n x nd: the group's set, in its root's row */
  int *parent;         /* union-find; a root is its group's lowest id */
  bool *job_req;       /* at roots: a member's request names a job */
  bool *has_var;       /* at roots: the group holds a variable */
  bool *pin;           /* per node: o->pinned fixed its device */
  const tf_place_opts *o;
  int *order;          /* topological order */
  tf_status *st;
} placer;

/* ---- feasibility ------------------------------------------------------------------- */

/* "a, b, c" into buf, ending in "... (N in all)" past about 600 bytes. */
static const char *device_list(const placer *p, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int d = 0; d < p->nd && len + 1 < size; d++) {
    if (len > 600) {
      snprintf(buf + len, size - len, ", ... (%d in all)", p->nd);
      break;
    }
    int w = snprintf(buf + len, size - len, "%s%s", d ? ", " : "", p->devs[d].name);
    if (w < 0 || (size_t)w >= size - len) {
      break; /* truncated */
    }
    len += (size_t)w;
  }
  return buf;
}

static tf_code parse_devices(placer *p) {
  for (int d = 0; d < p->nd; d++) {
    if (p->devs[d].name == NULL || p->devs[d].type == NULL) {
      return tf_status_set(p->st, TF_INVALID_ARGUMENT, "placement: device %d has "
                           "no name or type", d);
    }
    if (tf_devname_parse(p->devs[d].name, &p->dn[d], p->st) != TF_OK) {
      return tf_status_prefix(p->st, "placement");
    }
  }
  return TF_OK;
}

static tf_code node_feasible(placer *p, const tf_node *v) {
  unsigned char *row = &p->feas[(size_t)v->id * (size_t)p->nd];
  if (tf_devname_parse(v->device, &p->req[v->id], p->st) != TF_OK) {
    return tf_status_prefix(p->st, "node '%s' (%s)", v->name, v->op->name);
  }
  int matching = 0, ok = 0;
  tf_status kst;
  tf_status_init(&kst);
  for (int d = 0; d < p->nd; d++) {
    if (!tf_devname_matches(&p->req[v->id], &p->dn[d])) {
      continue;
    }
    matching++;
    row[d] = tf_kernel_for_node(v, p->devs[d].type, &kst) != NULL;
    ok += row[d];
  }
  const char *pin = p->o->pinned ? p->o->pinned(p->o->pinned_arg, v->name) : NULL;
  if (pin != NULL && ok > 0) {
    ok = 0;
    for (int d = 0; d < p->nd; d++) {
      row[d] = row[d] && strcmp(p->devs[d].name, pin) == 0;
      ok += row[d];
    }
    p->pin[v->id] = true;
    if (ok == 0) {
      return tf_status_set(p->st, TF_INVALID_ARGUMENT, "cannot place node '%s' (%s): "
                           "its state lives on %s, which its request '%s' or its "
                           "kernels rule out", v->name, v->op->name, pin, v->device);
    }
  }
  if (ok > 0) {
    return TF_OK;
  }
  char list[900];
  device_list(p, list, sizeof list);
  if (matching == 0) {
    return tf_status_set(p->st, TF_INVALID_ARGUMENT, "cannot place node '%s' (%s): "
                         "no device matches its request '%s'; devices: %s",
                         v->name, v->op->name, v->device, list);
  }
  return tf_status_set(p->st, TF_INVALID_ARGUMENT, "cannot place node '%s' (%s): "
                       "no device matching its request '%s' has a kernel for it "
                       "(%s); devices: %s", v->name, v->op->name, v->device,
                       kst.msg, list);
}

/* ---- colocation groups ------------------------------------------------------------- */

static int uf_find(placer *p, int i) {
  while (p->parent[i] != i) {
    p->parent[i] = p->parent[p->parent[i]];
    i = p->parent[i];
  }
  return i;
}

static void uf_union(placer *p, int a, int b) {
  a = uf_find(p, a);
  b = uf_find(p, b);
  if (a < b) {
    p->parent[b] = a;
  } else if (b < a) {
    p->parent[a] = b;
  }
}

static void colocate_class(placer *p, const tf_node *v) {
  const tf_attr_value *c = tf_node_attr(v, "_class");
  if (c == NULL || c->type != TF_ATTR_STRING || !c->is_list) {
    return;
  }
  for (int k = 0; k < c->n; k++) {
    const char *s = c->u.strs[k];
    if (s == NULL || strncmp(s, "loc:@", 5) != 0) {
      continue;
    }
    /* a target pruned away no longer constrains anything */
    const tf_node *t = tf_graph_find(p->g, s + 5);
    if (t != NULL) {
      uf_union(p, v->id, t->id);
    }
  }
}

static void colocate(placer *p) {
  int *first_cons = tf__xmalloc(((size_t)p->n + 1) * sizeof *first_cons);
  for (int i = 0; i < p->n; i++) {
    first_cons[i] = -1;
  }
  for (int i = 0; i < p->n; i++) {
    const tf_node *v = p->g->nodes[i];
    for (int k = 0; k < v->n_inputs; k++) {
      int src = v->inputs[k].node->id;
      if (first_cons[src] < 0 || first_cons[src] > i) {
        first_cons[src] = i;
      }
      if (tf__node_input_is_ref(v, k)) {
        uf_union(p, i, src);
      }
    }
    if (strcmp(v->op->name, "_Retval") == 0 && v->n_inputs > 0) {
      uf_union(p, i, v->inputs[0].node->id);
    }
    colocate_class(p, v);
  }
  for (int i = 0; i < p->n; i++) {
    if (strcmp(p->g->nodes[i]->op->name, "_Arg") == 0 && first_cons[i] >= 0) {
      uf_union(p, i, first_cons[i]);
    }
  }
  free(first_cons);
}

static bool rows_meet(const placer *p, const unsigned char *a, const unsigned char *b) {
  for (int d = 0; d < p->nd; d++) {
    if (a[d] && b[d]) {
      return true;
    }
  }
  return false;
}

/* Member i emptied its group's set: names i, an earlier member it cannot
 * share a device with, and the group. */
static tf_code conflict_error(placer *p, int root, int i) {
  size_t nd = (size_t)p->nd;
  int j = -1;
  for (int k = root; k < i && j < 0; k++) {
    if (uf_find(p, k) == root && !rows_meet(p, &p->feas[(size_t)k * nd], &p->feas[(size_t)i * nd])) {
      j = k;
    }
  }
  if (j < 0) {
    j = root;
  }
  char members[500];
  size_t len = 0;
  members[0] = '\0';
  for (int k = root; k < p->n && len + 40 < sizeof members; k++) {
    if (uf_find(p, k) == root) {
      const tf_node *m = p->g->nodes[k];
      int w = snprintf(members + len, sizeof members - len, "%s'%s' ('%s')",
                       len ? ", " : "", m->name, m->device);
      if (w < 0 || (size_t)w >= sizeof members - len) {
        break; /* truncated */
      }
      len += (size_t)w;
    }
  }
  const tf_node *a = p->g->nodes[j], *b = p->g->nodes[i];
  return tf_status_set(p->st, TF_INVALID_ARGUMENT, "conflicting placement for "
                       "colocated nodes '%s' (%s, request '%s') and '%s' (%s, "
                       "request '%s'): no device can run both; group: %s",
                       a->name, a->op->name, a->device, b->name, b->op->name,
                       b->device, members);
}

static bool is_variable(const tf_node *v) {
  unsigned f = v->op->flags;
  if (!(f & TF_OP_STATEFUL) || !(f & TF_OP_SOURCE)) {
    return false;
  }
  for (int i = 0; i < v->n_outputs; i++) {
    if (tf__node_output_is_ref(v, i)) {
      return true;
    }
  }
  return false;
}

static tf_code group_feasible(placer *p) {
  size_t nd = (size_t)p->nd;
  for (int i = 0; i < p->n; i++) {
    int r = uf_find(p, i);
    unsigned char *g = &p->gfeas[(size_t)r * nd];
    const unsigned char *f = &p->feas[(size_t)i * nd];
    bool any = false;
    for (size_t d = 0; d < nd; d++) {
      g[d] = r == i ? f[d] : (unsigned char)(g[d] && f[d]);
      any = any || g[d];
    }
    if (!any) {
      return conflict_error(p, r, i);
    }
    p->job_req[r] = p->job_req[r] || p->req[i].has_job || p->pin[i];
    p->has_var[r] = p->has_var[r] || is_variable(p->g->nodes[i]);
  }
  return TF_OK;
}

/* ---- defaults: ps round-robin and the default job ------------------------------------ */

/* Restricts row to mask when that leaves a device; returns whether it did. */
static bool restrict_row(const placer *p, unsigned char *row, const unsigned char *mask) {
  if (!rows_meet(p, row, mask)) {
    return false;
  }
  for (int d = 0; d < p->nd; d++) {
    row[d] = (unsigned char)(row[d] && mask[d]);
  }
  return true;
}

/* task_of[d]: index of d's ps task (first-appearance order) or -1. */
static int ps_tasks(const placer *p, const char *ps_job, int *task_of) {
  int n_tasks = 0;
  for (int d = 0; d < p->nd; d++) {
    task_of[d] = -1;
    const tf_devname *x = &p->dn[d];
    if (ps_job == NULL || !x->has_job || strcmp(x->job, ps_job) != 0) {
      continue;
    }
    for (int e = 0; e < d && task_of[d] < 0; e++) {
      const tf_devname *y = &p->dn[e];
      if (task_of[e] >= 0 && y->has_task == x->has_task && y->task == x->task &&
          y->has_replica == x->has_replica && y->replica == x->replica) {
        task_of[d] = task_of[e];
      }
    }
    if (task_of[d] < 0) {
      task_of[d] = n_tasks++;
    }
  }
  return n_tasks;
}

static void apply_defaults(placer *p, const tf_place_opts *o) {
  size_t nd = (size_t)p->nd;
  int *task_of = tf__xcalloc(nd + 1, sizeof *task_of);
  unsigned char *mask = tf__xcalloc(nd + 1, 1);
  unsigned char *job = tf__xcalloc(nd + 1, 1);
  int n_tasks = ps_tasks(p, o->ps_job, task_of), next = 0;
  bool have_job = false;
  for (size_t d = 0; d < nd; d++) {
    job[d] = o->default_job != NULL && p->dn[d].has_job &&
             strcmp(p->dn[d].job, o->default_job) == 0;
    have_job = have_job || job[d];
  }
  for (int r = 0; r < p->n; r++) {
    if (uf_find(p, r) != r || p->job_req[r]) {
      continue;
    }
    unsigned char *row = &p->gfeas[(size_t)r * nd];
    if (p->has_var[r] && n_tasks > 0) {
      for (size_t d = 0; d < nd; d++) {
        mask[d] = task_of[d] == next % n_tasks;
      }
      if (restrict_row(p, row, mask)) {
        next++;
        continue;
      }
    }
    if (have_job) {
      restrict_row(p, row, job);
    }
  }
  free(task_of);
  free(mask);
  free(job);
}

/* ---- greedy simulated placement ----------------------------------------------------- */

typedef struct sim {
  int64_t *busy;   /* per device: when it is next free */
  int64_t *fin;    /* per node: simulated finish */
  int64_t *cost;   /* per node */
  int64_t *gcost;  /* at roots: the group's total */
  int *gdev;       /* at roots: chosen device or -1 */
  int *out;        /* per node: device or -1 */
  double rate;     /* bytes per ns */
  int64_t latency;
} sim;

/* Input k of v: data inputs first, then control inputs. */
static const tf_node *in_node(const tf_node *v, int k) {
  return k < v->n_inputs ? v->inputs[k].node : v->control[k - v->n_inputs];
}

/* When all of v's placed inputs could be on device d. */
static int64_t inputs_ready(const placer *p, const sim *s, const tf_node *v, int d) {
  int64_t t = 0;
  for (int k = 0; k < v->n_inputs + v->n_control; k++) {
    const tf_node *src = in_node(v, k);
    int sd = s->out[src->id];
    if (sd < 0) {
      continue; /* a back edge */
    }
    int64_t r = s->fin[src->id];
    if (sd != d) {
      r += s->latency;
      if (k < v->n_inputs && !tf__node_input_is_ref(v, k)) {
        r += (int64_t)((double)tf__place_output_bytes(src, v->inputs[k].index) / s->rate);
      }
    }
    t = r > t ? r : t;
  }
  return t;
}

static int choose_device(const placer *p, const sim *s, const tf_node *v, int root) {
  const unsigned char *row = &p->gfeas[(size_t)root * (size_t)p->nd];
  int best = -1;
  int64_t best_t = 0;
  for (int d = 0; d < p->nd; d++) {
    if (!row[d]) {
      continue;
    }
    int64_t start = inputs_ready(p, s, v, d);
    start = s->busy[d] > start ? s->busy[d] : start;
    int64_t t = start + s->gcost[root];
    if (best < 0 || t < best_t) {
      best = d;
      best_t = t;
    }
  }
  return best;
}

/* ---- keeping small connected work together ------------------------------------------ */

/* What cutting input k of v across devices costs: one message (the
 * latency) plus, for a data input, its bytes at the transfer rate. */
static int64_t edge_cost(const sim *s, const tf_node *v, int k) {
  if (k >= v->n_inputs) {
    return s->latency;
  }
  const tf_output *in = &v->inputs[k];
  return s->latency +
         (int64_t)((double)tf__place_output_bytes(in->node, in->index) / s->rate);
}

/* Joins the groups of roots a and b (their sets meet): the lower id stays
 * root, with the intersected set and the summed work. */
static void merge_groups(placer *p, sim *s, int a, int b) {
  int r = a < b ? a : b, o = a < b ? b : a;
  unsigned char *rr = &p->gfeas[(size_t)r * (size_t)p->nd];
  const unsigned char *orow = &p->gfeas[(size_t)o * (size_t)p->nd];
  for (int d = 0; d < p->nd; d++) {
    rr[d] = (unsigned char)(rr[d] && orow[d]);
  }
  s->gcost[r] += s->gcost[o];
  p->parent[o] = r;
}

/* Two groups joined by an edge gain at most the smaller one's work from
 * running on two devices at once, while cutting the edge puts its
 * transfer on the path between them. So, in topological order, each edge
 * whose cost is at least the work of the smaller of its two groups joins
 * them, when they can share a device. A small connected computation thus
 * lands on one device, and chains of work much larger than the tensors
 * between them stay apart, free to spread. Requests and colocation stay
 * hard: the joined group's set is the intersection. */
static void merge_small_work(placer *p, sim *s) {
  for (int i = 0; i < p->n; i++) {
    const tf_node *v = p->g->nodes[p->order[i]];
    for (int k = 0; k < v->n_inputs + v->n_control; k++) {
      int a = uf_find(p, in_node(v, k)->id), b = uf_find(p, v->id);
      if (a == b) {
        continue;
      }
      int64_t small = s->gcost[a] < s->gcost[b] ? s->gcost[a] : s->gcost[b];
      if (edge_cost(s, v, k) < small ||
          !rows_meet(p, &p->gfeas[(size_t)a * (size_t)p->nd],
                     &p->gfeas[(size_t)b * (size_t)p->nd])) {
        continue;
      }
      merge_groups(p, s, a, b);
    }
  }
}

/* ---- the greedy pass ---------------------------------------------------------------- */

static void greedy(placer *p, sim *s) {
  for (int k = 0; k < p->n; k++) {
    const tf_node *v = p->g->nodes[p->order[k]];
    int r = uf_find(p, v->id);
    if (s->gdev[r] < 0) {
      s->gdev[r] = choose_device(p, s, v, r);
    }
    int d = s->gdev[r];
    int64_t start = inputs_ready(p, s, v, d);
    start = s->busy[d] > start ? s->busy[d] : start;
    s->fin[v->id] = start + s->cost[v->id];
    s->busy[d] = s->fin[v->id];
    s->out[v->id] = d;
  }
}

/* Node costs and group totals, then merging and the greedy pass. */
static void simulate(placer *p, const tf_place_opts *o, int *out) {
  size_t n = (size_t)p->n;
  sim s = {.busy = tf__xcalloc((size_t)p->nd + 1, sizeof(int64_t)),
           .fin = tf__xcalloc(n + 1, sizeof(int64_t)),
           .cost = tf__xcalloc(n + 1, sizeof(int64_t)),
           .gcost = tf__xcalloc(n + 1, sizeof(int64_t)),
           .gdev = tf__xmalloc((n + 1) * sizeof(int)),
           .out = out,
           .rate = o->bytes_per_ns > 0 ? o->bytes_per_ns : DEFAULT_BYTES_PER_NS,
           .latency = o->transfer_latency_ns > 0 ? o->transfer_latency_ns
                                                 : DEFAULT_LATENCY_NS};
  for (size_t i = 0; i < n; i++) {
    s.cost[i] = tf__place_node_cost(p->g->nodes[i], o->costs);
    s.gcost[uf_find(p, (int)i)] += s.cost[i];
    s.gdev[i] = -1;
    out[i] = -1;
  }
  merge_small_work(p, &s);
  greedy(p, &s);
  free(s.busy);
  free(s.fin);
  free(s.cost);
  free(s.gcost);
  free(s.gdev);
}

/* ---- entry point --------------------------------------------------------------------- */

static void placer_fini(placer *p) {
  free(p->dn);
  free(p->req);
  free(p->feas);
  free(p->gfeas);
  free(p->parent);
  free(p->job_req);
  free(p->has_var);
  free(p->pin);
  free(p->order);
}

tf_code tf_place(const tf_graph *g, const tf_place_device *devs, int n_devs,
                 const tf_place_opts *o, int *out, tf_status *st) {
  if (g == NULL || out == NULL || (devs == NULL && n_devs > 0)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tf_place: NULL graph, devices or output");
  }
  if (n_devs <= 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tf_place: no devices to place on");
  }
  tf_place_opts none = {0};
  o = o != NULL ? o : &none;
  size_t n = (size_t)g->n_nodes, nd = (size_t)n_devs;
  placer p = {.g = g, .n = g->n_nodes, .devs = devs, .nd = n_devs, .st = st,
              .dn = tf__xcalloc(nd, sizeof(tf_devname)),
              .req = tf__xcalloc(n + 1, sizeof(tf_devname)),
              .feas = tf__xcalloc(n * nd + 1, 1),
              .gfeas = tf__xcalloc(n * nd + 1, 1),
              .parent = tf__xmalloc((n + 1) * sizeof(int)),
              .job_req = tf__xcalloc(n + 1, sizeof(bool)),
              .has_var = tf__xcalloc(n + 1, sizeof(bool)),
              .pin = tf__xcalloc(n + 1, sizeof(bool)), .o = o,
              .order = tf__xcalloc(n + 1, sizeof(int))};
  for (size_t i = 0; i < n; i++) {
    p.parent[i] = (int)i;
  }
  tf_code rc = parse_devices(&p);
  if (rc == TF_OK) {
    rc = tf__graph_topo_order(g, p.order, st);
  }
  for (size_t i = 0; i < n && rc == TF_OK; i++) {
    rc = node_feasible(&p, g->nodes[i]);
  }
  if (rc == TF_OK) {
    colocate(&p);
    rc = group_feasible(&p);
  }
  if (rc == TF_OK) {
    apply_defaults(&p, o);
    simulate(&p, o, out);
  }
  placer_fini(&p);
  return rc;
}
