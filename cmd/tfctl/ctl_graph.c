/* ctl_graph.c: graph and tensor text for tfctl: dot with device clusters,
 * YAML with placed devices, one-line tensor summaries, fetch file names. */
#include "cmd/tfctl/ctl_graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tf/serialize.h"

/* A growing string. */
typedef struct sbuf {
  char *p;
  size_t len, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    b->cap = b->cap * 2 + (n > 0 ? (size_t)n : 0) + 64;
    b->p = realloc(b->p, b->cap);
  }
}

/* Writes s as a dot string body (quotes and backslashes escaped). */
static void sb_quoted(sbuf *b, const char *s) {
  sb_printf(b, "\"");
  for (; *s != '\0'; s++) {
    sb_printf(b, (*s == '"' || *s == '\\') ? "\\%c" : "%c", *s);
  }
  sb_printf(b, "\"");
}

static void dot_node(sbuf *b, const tf_node *n, const char *indent) {
  sb_printf(b, "%s", indent);
  sb_quoted(b, tf_node_name(n));
  sb_printf(b, " [label=\"");
  sb_printf(b, "%s\\n%s\"];\n", tf_node_name(n), tf_node_op(n));
}

static void dot_edges(sbuf *b, const tf_node *n) {
  for (int i = 0; i < tf_node_num_inputs(n); i++) {
    tf_output in = tf_node_input(n, i);
    sb_printf(b, "  ");
    sb_quoted(b, tf_node_name(in.node));
    sb_printf(b, " -> ");
    sb_quoted(b, tf_node_name(n));
    if (in.index > 0) {
      sb_printf(b, " [label=\":%d\"]", in.index);
    }
    sb_printf(b, ";\n");
  }
  for (int i = 0; i < tf_node_num_control_inputs(n); i++) {
    sb_printf(b, "  ");
    sb_quoted(b, tf_node_name(tf_node_control_input(n, i)));
    sb_printf(b, " -> ");
    sb_quoted(b, tf_node_name(n));
    sb_printf(b, " [style=dashed];\n");
  }
}

char *tf_ctl_graph_dot(const tf_graph *g, const char *const *devices) {
  sbuf b = {malloc(256), 0, 256};
  int n = tf_graph_num_nodes(g);
  sb_printf(&b, "digraph tf {\n  node [shape=box];\n");
  if (devices == NULL) {
    for (int i = 0; i < n; i++) {
      dot_node(&b, tf_graph_node(g, i), "  ");
    }
  } else {
    int cluster = 0;
    for (int i = 0; i < n; i++) {
      bool first = true; /* first node with this device starts its cluster */
      for (int j = 0; j < i && first; j++) {
        first = strcmp(devices[j], devices[i]) != 0;
      }
      if (!first) {
        continue;
      }
      sb_printf(&b, "  subgraph cluster_%d {\n    label=", cluster++);
      sb_quoted(&b, devices[i]);
      sb_printf(&b, ";\n");
      for (int j = i; j < n; j++) {
        if (strcmp(devices[j], devices[i]) == 0) {
          dot_node(&b, tf_graph_node(g, j), "    ");
        }
      }
      sb_printf(&b, "  }\n");
    }
  }
  for (int i = 0; i < n; i++) {
    dot_edges(&b, tf_graph_node(g, i));
  }
  sb_printf(&b, "}\n");
  return b.p;
}

tf_code tf_ctl_graph_yaml(const tf_graph *g, const char *const *devices,
                          char **text, tf_status *st) {
  size_t len = 0;
  if (devices == NULL) {
    return tf_graph_to_yaml(g, text, &len, st);
  }
  int n = tf_graph_num_nodes(g);
  tf_node_def *defs = calloc(n > 0 ? (size_t)n : 1, sizeof *defs);
  for (int i = 0; i < n; i++) {
    tf_node_to_def(tf_graph_node(g, i), &defs[i]);
    defs[i].device = devices[i];
  }
  tf_graph *copy = tf_graph_new();
  tf_code code = tf_graph_import(copy, defs, n, st);
  if (code == TF_OK) {
    code = tf_graph_to_yaml(copy, text, &len, st);
  }
  for (int i = 0; i < n; i++) {
    tf_node_def_fini(&defs[i]);
  }
  free(defs);
  tf_graph_free(copy);
  return code;
}

char *tf_ctl_tensor_summary(const tf_tensor *t, int max_values, char *buf,
                            size_t size) {
  char shape[128];
  size_t len = (size_t)snprintf(buf, size, "%s %s", tf_dtype_name(t->dtype),
                                tf_shape_str(&t->shape, shape, sizeof shape));
  int64_t shown = t->n < max_values ? t->n : max_values;
  for (int64_t i = 0; i < shown && len < size; i++) {
    if (t->dtype == TF_STRING) {
      const tf_string *s = &tf_tensor_strings(t)[i];
      int l = s->len > 32 ? 32 : (int)s->len;
      len += (size_t)snprintf(buf + len, size - len, " \"%.*s\"", l, s->data ? s->data : "");
    } else if (tf_dtype_is_float(t->dtype) || t->dtype == TF_COMPLEX64) {
      len += (size_t)snprintf(buf + len, size - len, " %.7g", tf_tensor_get_f64(t, i));
    } else {
      len += (size_t)snprintf(buf + len, size - len, " %lld",
                              (long long)tf_tensor_get_i64(t, i));
    }
  }
  if (t->n > shown && len < size) {
    snprintf(buf + len, size - len, " ...");
  }
  return buf;
}

char *tf_ctl_fetch_file_name(const char *fetch, char *buf, size_t size) {
  snprintf(buf, size, "%s.npy", fetch);
  for (char *p = buf; *p != '\0'; p++) {
    if (*p == ':' || *p == '/') {
      *p = '_';
    }
  }
  return buf;
}
