/* job_data.h: what the master reads of a job's data itself: the number
 * of training records of a worker's shard (to turn epochs into steps) and
 * the whole test set (for evaluation), decoded as the input pipeline
 * decodes: images to the model's input dtype and shape times input.scale,
 * labels to int32 class ids. */
#ifndef TF_RUNTIME_JOB_DATA_H
#define TF_RUNTIME_JOB_DATA_H

#include <stdint.h>

#include "lib/runtime/job_spec.h"
#include "tf/status.h"
#include "tf/tensor.h"

/* Elements of a test set the master loads at most (1 GiB of float32). */
#define TF_JOB_TEST_ELEMENTS_MAX (1LL << 28)

/* The training examples worker `worker` reads in one pass over its files
 * (IDX: from the headers; TFRecord: by reading the files). Errors of the
 * record reader (NOT_FOUND, DATA_LOSS naming the file). */
tf_code tf_job_count_train(const tf_job_spec *s, int worker, int64_t *n,
                           tf_status *st);

/* The test set: *images [n] + model.input shape of model.input.dtype,
 * *labels int32 [n]. INVALID_ARGUMENT when the image and label files
 * disagree in count or a record has the wrong size (naming file and
 * record); RESOURCE_EXHAUSTED over TF_JOB_TEST_ELEMENTS_MAX. */
tf_code tf_job_load_test(const tf_job_spec *s, tf_tensor **images,
                         tf_tensor **labels, tf_status *st);

/* Rows [from, from + n) of t (dim 0) as a new tensor. */
tf_tensor *tf_job_rows(const tf_tensor *t, int64_t from, int64_t n);

#endif
