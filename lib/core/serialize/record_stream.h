/* record_stream.h: byte streams under the record formats: a file read or
 * written sequentially, plain or through zlib (a zlib stream or gzip
 * members). Offsets count uncompressed bytes; errors name the path and
 * the offset (of the decompressed data when compressed). Internal. */
#ifndef TF_CORE_RECORD_STREAM_H
#define TF_CORE_RECORD_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tf/input.h"
#include "tf/status.h"

typedef struct tf__instream tf__instream;

/* Opens path. AUTO means gzip when the file starts with 1f 8b, else none.
 * NOT_FOUND / PERMISSION_DENIED / ... naming the path and strerror. */
tf_code tf__instream_open(const char *path, tf_compression c,
                          tf__instream **out, tf_status *st);
/* Reads up to n bytes; *got < n only at the end of the data. DATA_LOSS
 * naming path and offset for corrupt or truncated compressed data (and
 * trailing garbage after a zlib stream); UNKNOWN for an I/O error. */
tf_code tf__instream_read(tf__instream *s, void *buf, size_t n, size_t *got,
                          tf_status *st);
/* Uncompressed bytes delivered so far. */
int64_t tf__instream_offset(const tf__instream *s);
/* The file's size on disk, or -1 when the stream is compressed (the
 * uncompressed size is then unknown). */
int64_t tf__instream_plain_size(const tf__instream *s);
bool tf__instream_compressed(const tf__instream *s);
const char *tf__instream_path(const tf__instream *s);
/* " of the decompressed data" when compressed, else "" (for messages). */
const char *tf__instream_offset_note(const tf__instream *s);
void tf__instream_close(tf__instream *s); /* NULL-safe */

typedef struct tf__outstream tf__outstream;

/* Creates or truncates path (mode 0644). AUTO means NONE. */
tf_code tf__outstream_open(const char *path, tf_compression c,
                           tf__outstream **out, tf_status *st);
tf_code tf__outstream_write(tf__outstream *s, const void *p, size_t n,
                            tf_status *st);
/* Finishes compression, writes out, closes and frees (always). Returns the
 * first error of the stream. NULL-safe. */
tf_code tf__outstream_close(tf__outstream *s, tf_status *st);

#endif
