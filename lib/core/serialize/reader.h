/* reader.h: reader resources (whitepaper §4.5), TensorFlow 1's
 * ReaderBase: a reader reads the records of one file at a time; when its
 * file is exhausted it takes the next file name from a work queue (a queue
 * of scalar strings), so steps that read never name files themselves and
 * several readers can share one list of files.
 *
 * A reader lives in a container of the session (ops TFRecordReader and
 * IdxRecordReader make it) and keeps its state across steps: the open file
 * and the position in it, and two counters. Requests (read, reset) are
 * served one at a time in arrival order; a request that needs a file name
 * waits asynchronously on the work queue, holding no thread, and the
 * requests behind it wait in the reader's list. Waiting requests register
 * with their step's tf_cancel and end with its reason when it fires.
 *
 * Errors: a file that cannot be opened fails the request (NOT_FOUND naming
 * the path) and its name is consumed; a damaged file (DATA_LOSS naming file
 * and offset) fails the request and is dropped, so the next read goes on
 * with the next file. When the work queue is closed and empty a read fails
 * with the queue's OUT_OF_RANGE, except that a read of up to n records that
 * already has some returns them. */
#ifndef TF_CORE_READER_H
#define TF_CORE_READER_H

#include <stdint.h>

#include "lib/core/base/cancel.h"
#include "lib/core/framework/queue.h"
#include "lib/core/framework/resource.h"
#include "tf/input.h"

typedef struct tf_reader tf_reader;

/* Resource type "Reader"; it holds no value (read is NULL). */
extern const tf_resource_type tf_reader_type;

/* A new reader (one reference) of files in format o. */
tf_reader *tf_reader_new(const char *container, const char *name,
                         const tf_record_options *o);
/* r as a reader, or NULL when r is NULL or another resource type. */
tf_reader *tf_reader_cast(tf_resource *r);
tf_resource *tf_reader_resource(tf_reader *r);
/* Whether a reader op with options o may share r: same format,
 * compression and IDX checks; INVALID_ARGUMENT naming the difference. */
tf_code tf_reader_matches(tf_reader *r, const tf_record_options *o,
                          tf_status *st);

/* Completion of a request: st is OK or the error; for a read, keys and
 * values are string tensors (borrowed: ref them to keep them), scalars for
 * a single read and vectors of the records read otherwise; NULL on error
 * and for a reset. Called exactly once, from any thread, never with the
 * reader's lock held; maybe before the starting call returns. */
typedef void (*tf_reader_done_fn)(void *arg, const tf_status *st,
                                  tf_tensor *keys, tf_tensor *values);

/* Reads one record (n < 0: ReaderRead, scalar outputs) or up to n >= 1
 * (ReaderReadUpTo: it returns fewer only when the work queue ran out),
 * taking file names from work. Keys are "file:index" for IDX records and
 * "file:offset" for TFRecord (TensorFlow's keys). cancel may be NULL.
 * Returns INVALID_ARGUMENT (work is not a queue of one string component;
 * n == 0) without calling done; otherwise OK, and done reports. */
tf_code tf_reader_read(tf_reader *r, tf_queue *work, int64_t n,
                       tf_cancel *cancel, tf_reader_done_fn done, void *arg,
                       tf_status *st);
/* Closes the current file and zeroes the counters, in turn with the reads
 * (done gets no tensors). */
void tf_reader_reset(tf_reader *r, tf_cancel *cancel, tf_reader_done_fn done,
                     void *arg);

/* Records returned by reads, and files read to their end or dropped
 * (TensorFlow's NumRecordsProduced and NumWorkUnitsCompleted). */
int64_t tf_reader_records_produced(tf_reader *r);
int64_t tf_reader_work_units_completed(tf_reader *r);

#endif
