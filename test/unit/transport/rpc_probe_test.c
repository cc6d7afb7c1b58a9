/* rpc_probe_test.c: why a client cannot connect: a closed loopback port
 * is "Connection refused", a listening one connects (""), a missing ipc
 * socket file is "No such file or directory"; URLs it cannot probe (a
 * host name, inproc) return false. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/transport/rpc_probe.h"
#include "test/unit/transport/rpc_testlib.h"

START_TEST(test_probe_reasons) {
  char url[64], why[128];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", rt_free_port());
  ck_assert(tf__rpc_probe(url, why, sizeof why));
  ck_assert_str_eq(why, "Connection refused");

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(fd, 4), 0);
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", ntohs(a.sin_port));
  ck_assert(tf__rpc_probe(url, why, sizeof why));
  ck_assert_str_eq(why, "");
  close(fd);

  snprintf(url, sizeof url, "tcp://[::1]:%d", rt_free_port());
  ck_assert(tf__rpc_probe(url, why, sizeof why));
  ck_assert_msg(why[0] != '\0', "connected to a closed IPv6 port");

  ck_assert(tf__rpc_probe("ipc:///tmp/tf-rpc-probe-test-nobody.sock", why, sizeof why));
  ck_assert_str_eq(why, "No such file or directory");

  ck_assert(!tf__rpc_probe("tcp://localhost:1", why, sizeof why)); /* not numeric */
  ck_assert(!tf__rpc_probe("inproc://x", why, sizeof why));
  ck_assert(!tf__rpc_probe("tcp://127.0.0.1", why, sizeof why)); /* no port */
  ck_assert_str_eq(why, "");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("rpc_probe");
  TCase *tc = tcase_create("rpc_probe");
  tcase_set_timeout(tc, 10);
  tcase_add_test(tc, test_probe_reasons);
  suite_add_tcase(s, tc);
  return s;
}
