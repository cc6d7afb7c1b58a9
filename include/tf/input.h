/* input.h: the input pipeline (whitepaper §4.5 input operations, §4.6
 * queues): record files, queue runners and a pipeline builder.
 *
 * Records. Two file formats are read: TFRecord (TensorFlow's framing:
 * uint64 length, masked CRC-32C of the length, the bytes, masked CRC-32C
 * of the bytes, all little-endian; byte-compatible with TensorFlow's
 * files, optionally ZLIB- or GZIP-compressed as a whole) and IDX (the
 * MNIST / Fashion-MNIST format: 00 00 <type> <ndims>, ndims big-endian
 * uint32 dims, then dims[0] records of dims[1..] elements, big-endian; as
 * shipped by Debian's dataset-fashion-mnist, gzipped). Damage in a file
 * (truncation, a CRC mismatch, a wrong magic, dims other than expected) is
 * DATA_LOSS naming the file and the byte offset (of the decompressed data
 * when the file is compressed); a missing file is NOT_FOUND naming the path.
 *
 * In a graph (ops_io.c): TFRecordReader / IdxRecordReader ops make a reader
 * resource; ReaderRead / ReaderReadUpTo take file names from a string
 * queue and return (key, value) records; DecodeRaw turns the bytes into
 * numbers; WriteTFRecords writes a file.
 *
 * Background filling. A queue runner runs enqueue targets of a session in
 * its own threads, over and over, so that training steps find batches
 * ready in a queue. The pipeline builder wires files -> reader -> decode ->
 * (shuffling) queue -> batches, with epochs, and runs it with queue
 * runners: a training loop just runs targets that use the batch outputs. */
#ifndef TF_INPUT_H
#define TF_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tf/export.h"
#include "tf/graph.h"
#include "tf/session.h"
#include "tf/status.h"
#include "tf/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- record files --------------------------------------------------------- */

typedef enum tf_compression {
  /* IDX: gzip when the file starts with the gzip magic (1f 8b), else
   * none. TFRecord: none (TensorFlow's compression_type ''): TFRecord
   * files are never sniffed, a length may start with those bytes. */
  TF_COMPRESSION_AUTO = 0,
  TF_COMPRESSION_NONE,
  TF_COMPRESSION_ZLIB, /* one zlib stream (RFC 1950), TF's "ZLIB" */
  TF_COMPRESSION_GZIP, /* gzip members (RFC 1952), TF's "GZIP" */
} tf_compression;

/* Parses TensorFlow's compression_type strings "", "ZLIB", "GZIP" (and
 * "NONE"); INVALID_ARGUMENT naming the string otherwise. */
TF_API tf_code tf_compression_from_name(const char *name, tf_compression *out,
                                        tf_status *st);

typedef enum tf_record_format {
  TF_RECORD_TFRECORD = 0,
  TF_RECORD_IDX,
} tf_record_format;

/* How to read a record file. Zero-initialised: TFRecord, uncompressed. */
typedef struct tf_record_options {
  tf_record_format format;
  tf_compression compression;
  /* IDX only. The element type the file must declare (TF_DTYPE_INVALID:
   * any of uint8, int8, int16, int32, float32, float64) and the dims of
   * each record (rank TF_UNKNOWN_RANK, e.g. from tf_shape_unknown(): any;
   * [28, 28] for images, [] for labels). A zero-initialised struct has
   * rank 0 here, so set it explicitly. */
  tf_dtype idx_dtype;
  tf_shape idx_record_shape;
} tf_record_options;

/* Options for an IDX file with any element type and record shape. */
TF_API tf_record_options tf_record_options_idx(void);

typedef struct tf_record_reader tf_record_reader;

/* Opens path for sequential reading. NOT_FOUND (or PERMISSION_DENIED, ...)
 * naming the path; for IDX the header is read and checked here (DATA_LOSS
 * naming path and offset), and an uncompressed file's size must match it. */
TF_API tf_code tf_record_reader_open(const char *path,
                                     const tf_record_options *o,
                                     tf_record_reader **out, tf_status *st);
/* The next record: *data (valid until the next call or close) and *len.
 * OUT_OF_RANGE at the clean end of the file; DATA_LOSS naming path and
 * offset when the file is damaged (after which every call repeats it). */
TF_API tf_code tf_record_reader_next(tf_record_reader *r, const void **data,
                                     size_t *len, tf_status *st);
/* Records returned so far. */
TF_API int64_t tf_record_reader_index(const tf_record_reader *r);
/* Byte offset where the last returned record starts (its header for
 * TFRecord: TensorFlow's key "file:offset"); of the decompressed data for a
 * compressed file. */
TF_API int64_t tf_record_reader_offset(const tf_record_reader *r);
/* IDX: the declared record count, element type and record dims; TFRecord:
 * -1, TF_STRING and NULL. */
TF_API int64_t tf_record_reader_count(const tf_record_reader *r);
TF_API tf_dtype tf_record_reader_dtype(const tf_record_reader *r);
TF_API const tf_shape *tf_record_reader_record_shape(const tf_record_reader *r);
TF_API const char *tf_record_reader_path(const tf_record_reader *r);
TF_API void tf_record_reader_close(tf_record_reader *r); /* NULL-safe */

/* A whole IDX file as one tensor of its element type and dims (multi-byte
 * elements converted from big-endian), e.g. uint8 [60000, 28, 28]. o may be
 * NULL (any type and shape; compression AUTO); its format must be IDX. */
TF_API tf_code tf_idx_load(const char *path, const tf_record_options *o,
                           tf_tensor **out, tf_status *st);

typedef struct tf_tfrecord_writer tf_tfrecord_writer;

/* Creates (or truncates) path for writing TFRecords; compression NONE
 * (AUTO means NONE), ZLIB or GZIP. Errors name the path. */
TF_API tf_code tf_tfrecord_writer_open(const char *path,
                                       tf_compression compression,
                                       tf_tfrecord_writer **out, tf_status *st);
/* Appends one record of len bytes. */
TF_API tf_code tf_tfrecord_writer_write(tf_tfrecord_writer *w, const void *data,
                                        size_t len, tf_status *st);
/* Finishes the compressed stream, flushes, closes and frees w (always,
 * also on error). Returns the first write error. NULL-safe. */
TF_API tf_code tf_tfrecord_writer_close(tf_tfrecord_writer *w, tf_status *st);

/* ---- queue runners ---------------------------------------------------------- */

typedef struct tf_queue_runner_options {
  /* Targets (node names) the threads run; thread i runs
   * enqueue_targets[i % n_enqueue_targets]. */
  const char *const *enqueue_targets;
  int n_enqueue_targets;
  int threads;               /* 0: one per target */
  /* Run once when the last thread has ended, whatever the reason (so that
   * consumers see OUT_OF_RANGE instead of waiting forever): a QueueClose.
   * NULL: none. */
  const char *close_target;
  /* Run by tf_queue_runner_request_stop to release threads blocked on a
   * full queue: a QueueClose with cancel_pending_enqueues. NULL: none. */
  const char *cancel_target;
  /* 0: unlimited. Else the threads end (as at OUT_OF_RANGE) after this
   * many successful runs in all: an epoch count for a producer that
   * enqueues a whole file list per run. */
  int64_t max_runs;
} tf_queue_runner_options;

typedef struct tf_queue_runner tf_queue_runner;

/* A stopped runner (copies o). INVALID_ARGUMENT when o has no target. */
TF_API tf_queue_runner *tf_queue_runner_new(const tf_queue_runner_options *o,
                                            tf_status *st);
/* Starts the threads on s (which must outlive the runner's threads). Each
 * thread runs its target until: the run ends with OUT_OF_RANGE or
 * CANCELLED (its queue, or the queue it reads from, was closed): the
 * thread ends quietly; any other error: kept (the first one wins), the
 * runner stops every thread as by request_stop; a stop request. A runner
 * starts once: FAILED_PRECONDITION after. */
TF_API tf_code tf_queue_runner_start(tf_queue_runner *r, tf_session *s,
                                     tf_status *st);
/* Asks the threads to end and runs the cancel target (its error, if any,
 * is ignored: the queue may be gone). Does not wait; safe to repeat. */
TF_API void tf_queue_runner_request_stop(tf_queue_runner *r);
/* Waits up to timeout_ms (< 0: forever) for every thread to end.
 * DEADLINE_EXCEEDED saying how many threads still run; else the first
 * error of a thread (OK when none). */
TF_API tf_code tf_queue_runner_join(tf_queue_runner *r, int64_t timeout_ms,
                                    tf_status *st);
/* The first error so far (OK when none), without waiting. */
TF_API tf_code tf_queue_runner_status(tf_queue_runner *r, tf_status *st);
/* Whether the runner was started and all its threads have ended. */
TF_API bool tf_queue_runner_done(tf_queue_runner *r);
/* Successful runs so far. */
TF_API int64_t tf_queue_runner_runs(tf_queue_runner *r);
/* Requests stop, joins (waiting as long as it takes) and frees. NULL-safe. */
TF_API void tf_queue_runner_free(tf_queue_runner *r);

/* ---- decoding ------------------------------------------------------------------ */

/* How a source's records become examples: each record holds one example
 * of prod(shape) raw_dtype elements, converted to dtype and multiplied by
 * scale, in one DecodeRawExamples node (what DecodeRaw -> Cast -> Mul ->
 * Reshape would do, in one pass, with each record's length checked).
 * raw_dtype: uint8, int8, uint16, int16, int32, int64, float32, float64;
 * dtype: float32, float64, int32, int64 (not float to int). */
typedef struct tf_decode_spec {
  tf_dtype raw_dtype;  /* element type stored in a record */
  bool little_endian;  /* byte order of multi-byte elements */
  tf_dtype dtype;      /* example dtype (TF_DTYPE_INVALID: raw_dtype) */
  double scale;        /* multiplier after the conversion (0 or 1: none);
                        * float dtypes only */
  tf_shape shape;      /* one example's shape, fully defined ([784], []) */
} tf_decode_spec;

/* Adds the decoding node for values (a string vector of n records, each
 * holding exactly one example) to g under the current scope; *out gets the
 * [n] + shape tensor. INVALID_ARGUMENT naming the problem (a bad spec, or
 * the node's own check). At run time a record of the wrong length fails
 * the step with INVALID_ARGUMENT naming it. */
TF_API tf_code tf_decode_records(tf_graph *g, tf_output values,
                                 const tf_decode_spec *spec, tf_output *out,
                                 tf_status *st);
/* IDX images of uint8 pixels as float32 [n, rows * cols] in [0, 1]. */
TF_API tf_code tf_decode_idx_images(tf_graph *g, tf_output values,
                                    int64_t pixels, tf_output *out,
                                    tf_status *st);
/* IDX labels of one uint8 each as dtype (int32 or int64) [n]. */
TF_API tf_code tf_decode_idx_labels(tf_graph *g, tf_output values,
                                    tf_dtype dtype, tf_output *out,
                                    tf_status *st);

/* ---- pipelines ------------------------------------------------------------------- */

/* One component of the examples: the records of some files. */
typedef struct tf_input_source {
  const char *const *files; /* read in this order (unless shuffle_files) */
  int n_files;
  tf_record_options records;
  tf_decode_spec decode;    /* for IDX, raw_dtype and endianness come from
                             * records.idx_dtype (which must be set) */
} tf_input_source;

/* The two zipped sources of an MNIST-style IDX pair: src[0] the images of
 * files[0] (uint8 rows x cols records) as float32 [rows * cols] in [0, 1],
 * src[1] the labels of files[1] (one uint8 each) as label_dtype []. The
 * sources point into files, which must outlive their use. */
TF_API void tf_input_idx_image_sources(const char *const files[2], int64_t rows,
                                       int64_t cols, tf_dtype label_dtype,
                                       tf_input_source src[2]);

typedef struct tf_input_options {
  const char *name;         /* name scope of the nodes; NULL: "input" */
  /* Sources are zipped: example i is record i of every source, so
   * corresponding files must hold equally many records (a mismatch fails
   * the pipeline with INVALID_ARGUMENT). */
  const tf_input_source *sources;
  int n_sources;            /* 1 .. 8 */
  int64_t batch_size;       /* examples per dequeued batch, >= 1 */
  int64_t num_epochs;       /* 0: repeat forever */
  /* A RandomShuffleQueue (else a FIFOQueue, keeping file order). */
  bool shuffle;
  int64_t capacity;         /* examples buffered; 0: min_after + 3 batches */
  int64_t min_after_dequeue; /* shuffle: kept to mix with; 0: 2 batches */
  int64_t seed;             /* 0: nondeterministic */
  bool shuffle_files;       /* file order per epoch (one source only) */
  int64_t read_batch;       /* records per reader step; 0: batch_size */
  int threads;              /* reader threads; 0: 1; one source if > 1 */
  /* Whole batches made ahead by a background thread (a FIFOQueue of this
   * capacity after the example queue), so the training step's dequeue
   * only takes a ready tensor. 0: 2; < 0: none (the step dequeues the
   * examples itself). */
  int64_t prefetch_batches;
} tf_input_options;

typedef struct tf_input_pipeline tf_input_pipeline;

/* Builds the pipeline's nodes in g under the name scope: per source a
 * file-name queue, its producer, a reader and the decoding; then the
 * example queue, its enqueue and a QueueDequeueMany of batch_size.
 * INVALID_ARGUMENT naming the bad option (checked before any node is
 * added); errors of node building (the nodes added so far stay in g). */
TF_API tf_input_pipeline *tf_input_pipeline_new(tf_graph *g,
                                                const tf_input_options *o,
                                                tf_status *st);
/* Batch component i (one per source): [batch_size] + decode.shape. Every
 * run that uses one of them dequeues one batch (all components together);
 * after num_epochs that run fails with OUT_OF_RANGE (the examples left,
 * fewer than a batch, are dropped). */
TF_API tf_output tf_input_pipeline_output(const tf_input_pipeline *p, int i);
/* Starts the queue runners on s, a session of the graph the pipeline was
 * built in (s must outlive the pipeline's runners). Once per pipeline. */
TF_API tf_code tf_input_pipeline_start(tf_input_pipeline *p, tf_session *s,
                                       tf_status *st);
/* The first error of the pipeline's threads so far (a damaged file:
 * DATA_LOSS naming it), OK when none. A training loop that gets
 * OUT_OF_RANGE checks this: OK means the epochs ended normally. */
TF_API tf_code tf_input_pipeline_status(tf_input_pipeline *p, tf_status *st);
/* Stops the runners (releasing blocked threads) and waits up to
 * timeout_ms (< 0: forever) for them; returns the first error of a thread,
 * or DEADLINE_EXCEEDED. */
TF_API tf_code tf_input_pipeline_stop(tf_input_pipeline *p, int64_t timeout_ms,
                                      tf_status *st);
/* Stops (waiting as long as it takes) and frees. NULL-safe. */
TF_API void tf_input_pipeline_free(tf_input_pipeline *p);

#ifdef __cplusplus
}
#endif

#endif
