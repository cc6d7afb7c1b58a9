/* auth_replay.h: the replay cache of accepted request nonces (internal to
 * auth.c; its own file for its tests).
 *
 * Nonces are kept in generations, each an open-addressing hash set of at
 * most max_per_gen nonces; the newest generation takes new nonces and
 * becomes old after span_ms or once full; the oldest of the n_gens is then
 * forgotten. Forgetting a generation raises the floor to the newest
 * timestamp it held: a nonce with a timestamp at or below the floor is
 * refused as a possible replay (its first sight may have been forgotten).
 * With span_ms = the auth window and three generations, a nonce is
 * remembered as long as its timestamp is acceptable unless a flood fills
 * generations early, when the floor refuses old timestamps instead. Memory
 * is at most n_gens x 2 x max_per_gen x 24 bytes. Not thread-safe. */
#ifndef TF_TRANSPORT_AUTH_REPLAY_H
#define TF_TRANSPORT_AUTH_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#define TF__REPLAY_GENS 3

typedef struct tf__replay_gen {
  uint8_t (*slots)[24]; /* 16-byte nonce + 8-byte timestamp; zero: empty */
  uint32_t cap, n;      /* cap a power of two, n <= cap / 2 */
  int64_t started_ms;   /* by the receiver's clock */
  int64_t max_ts_ms;    /* the newest timestamp held */
} tf__replay_gen;

typedef struct tf__replay {
  tf__replay_gen gen[TF__REPLAY_GENS]; /* [0] newest */
  int64_t span_ms;
  uint32_t max_per_gen;
  int64_t floor_ms;                    /* refused at or below; INT64_MIN */
} tf__replay;

void tf__replay_init(tf__replay *r, int64_t span_ms, uint32_t max_per_gen);
void tf__replay_fini(tf__replay *r);
/* Records nonce (16 bytes) with the sender's timestamp ts_ms at receiver
 * time now_ms; false when it was seen already or ts_ms is at or below the
 * floor (a possible replay), and then nothing is recorded. */
bool tf__replay_admit(tf__replay *r, const uint8_t *nonce, int64_t ts_ms,
                      int64_t now_ms);

#endif
