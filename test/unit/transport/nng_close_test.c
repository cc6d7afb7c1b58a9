/* nng_close_test.c: tf__nng_close_within closes a rep socket that has a
 * listener and a connected peer, and a req socket with its dialer, well
 * within the deadline (true), over and over; the closed socket refuses
 * use afterwards. (The hang it guards against, NNG 1.5.2's, cannot be
 * made on purpose.) */
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "lib/transport/nng_close.h"
#include "test/unit/transport/rpc_testlib.h"

START_TEST(test_close_within) {
  for (int round = 0; round < 20; round++) {
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", rt_free_port());
    nng_socket rep, req;
    ck_assert_int_eq(nng_rep0_open(&rep), 0);
    ck_assert_int_eq(nng_listen(rep, url, NULL, 0), 0);
    ck_assert_int_eq(nng_req0_open(&req), 0);
    ck_assert_int_eq(nng_dial(req, url, NULL, 0), 0);
    ck_assert_int_eq(nng_send(req, "ping", 5, 0), 0);
    char *buf = NULL;
    size_t n = 0;
    ck_assert_int_eq(nng_recv(rep, &buf, &n, NNG_FLAG_ALLOC), 0);
    ck_assert_uint_eq(n, 5);
    nng_free(buf, n);
    int64_t t0 = rt_now_ms();
    bool a = tf__nng_close_within(rep, 3000), b = tf__nng_close_within(req, 3000);
    int64_t ms = rt_now_ms() - t0;
    ck_assert_msg(a && b, "round %d: closed %d %d", round, a, b);
    ck_assert_msg(ms < 2000, "round %d: the closes took %lld ms", round, (long long)ms);
    ck_assert_int_eq(nng_send(req, "x", 2, NNG_FLAG_NONBLOCK), NNG_ECLOSED);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("nng_close");
  TCase *tc = tcase_create("nng_close");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_close_within);
  suite_add_tcase(s, tc);
  return s;
}
