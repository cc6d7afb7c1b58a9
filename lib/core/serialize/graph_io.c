/* graph_io.c: graph files. The extension picks the form: ".yaml"/".yml" is
 * the YAML text form, anything else (".tfg" by convention) msgpack. Every
 * error names the path. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/core/serialize/serialize_util.h"
#include "lib/core/base/util.h"
#include "tf/serialize.h"

static bool is_yaml_path(const char *path) {
  const char *dot = strrchr(path, '.');
  const char *slash = strrchr(path, '/');
  if (dot == NULL || (slash != NULL && dot < slash)) {
    return false;
  }
  return strcasecmp(dot, ".yaml") == 0 || strcasecmp(dot, ".yml") == 0;
}

tf_code tf_graph_save(const tf_graph *g, const char *path, tf_status *st) {
  void *buf = NULL;
  size_t len = 0;
  tf_code c;
  if (is_yaml_path(path)) {
    char *text = NULL;
    c = tf_graph_to_yaml(g, &text, &len, st);
    buf = text;
  } else {
    c = tf_graph_to_msgpack(g, &buf, &len, st);
  }
  if (c != TF_OK) {
    return tf_status_prefix(st, "saving graph to '%s'", path);
  }
  c = tf__write_file(path, buf, len, st);
  free(buf);
  return c;
}

tf_code tf_graph_load(tf_graph *g, const char *path, tf_status *st) {
  char *buf;
  size_t len;
  TF_TRY(tf__read_file_confined(path, &buf, &len, st));
  tf_code c = is_yaml_path(path) ? tf_graph_from_yaml(g, buf, len, st)
                                 : tf_graph_from_msgpack(g, buf, len, st);
  free(buf);
  if (c != TF_OK) {
    return tf_status_prefix(st, "loading graph from '%s'", path);
  }
  return TF_OK;
}
