/* job_spec_impl.h: the section readers of the job spec parser, internal:
 * job_spec.c reads the top level, train, eval, checkpoint and replication
 * and runs the checks across sections; job_spec_model.c the model and
 * graph sections (layers, with shape inference); job_spec_input.c the
 * input; job_spec_opt.c the optimizer and its schedule. Each reader fills
 * its part of s from node v (a mapping, never NULL) or fails with a
 * positioned error (spec_yaml.h). */
#ifndef TF_RUNTIME_JOB_SPEC_IMPL_H
#define TF_RUNTIME_JOB_SPEC_IMPL_H

#include "lib/runtime/job_spec.h"
#include "lib/runtime/spec_yaml.h"

tf_code tf__job_parse_model(tf__spec *c, const yaml_node_t *v, tf_job_spec *s);
tf_code tf__job_parse_graph(tf__spec *c, const yaml_node_t *v, tf_job_spec *s);
tf_code tf__job_parse_input(tf__spec *c, const yaml_node_t *v, tf_job_spec *s);
tf_code tf__job_parse_optimizer(tf__spec *c, const yaml_node_t *v,
                                tf_job_spec *s);
/* input.shard resolved against replication.workers (input is the input
 * section's node): auto is files when input.train has a file per worker,
 * else shuffle; files with too few files, or shuffle with shuffling off
 * and several workers, are errors. */
tf_code tf__job_resolve_shard(tf__spec *c, const yaml_node_t *input,
                              tf_job_spec *s);

/* The example section {shape, dtype} at path (dtype: float32 default;
 * ints allowed when ints is true). */
tf_code tf__job_parse_example(tf__spec *c, const yaml_node_t *v,
                              const char *path, bool ints,
                              tf_job_example *out);
/* A list of 1..TF_JOB_FILES_MAX paths (or one path) into f. */
tf_code tf__job_parse_files(tf__spec *c, yaml_node_t *v, const char *path,
                            tf_job_files *f);
/* A name of 1..TF_JOB_NAME_MAX characters of [A-Za-z0-9_.-]. */
tf_code tf__job_parse_name(tf__spec *c, const yaml_node_t *v,
                           const char *path, const char **out);

void tf__job_files_free(tf_job_files *f);

#endif
