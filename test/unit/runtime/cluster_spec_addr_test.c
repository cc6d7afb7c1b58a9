/* cluster_spec_addr_test.c: task address checks by transport: a table of
 * valid and invalid host:port forms (IPv4 edge values, hostname label
 * rules, bracketed IPv6, ports at and past the limits), socket paths at
 * and past the length limit, inproc names, and the transport names. Each
 * rejection must say why. Endpoints: which written addresses are one
 * endpoint (names resolved, IPv6 canonical, socket paths folded). */
#include <stdio.h>
#include <string.h>

#include "lib/runtime/cluster_spec_addr.h"
#include "test/unit/testutil.h"

static const struct {
  const char *transport, *addr;
  const char *why; /* NULL: valid; else a substring of the reason */
} cases[] = {
    {"tcp", "127.0.0.1:7070", NULL},
    {"tcp", "0.0.0.0:1", NULL},
    {"tcp", "255.255.255.255:65535", NULL},
    {"tcp", "h:0070", NULL},
    {"tcp", "localhost:80", NULL},
    {"tcp", "a:1", NULL},
    {"tcp", "9front.example:1", NULL}, /* labels may start with a digit */
    {"tcp", "x-1.y-2.z:1", NULL},
    {"tcp", "[::1]:7070", NULL},
    {"tcp", "[2001:db8::8a2e:370:7334]:443", NULL},
    {"tcp", "[::ffff:1.2.3.4]:1", NULL},
    {"tls+tcp", "node:7443", NULL},
    {"tcp", "abc", "expected host:port, got 'abc'"},
    {"tcp", "", "expected host:port, got ''"},
    {"tcp", "h:", "expected host:port with a numeric port, got 'h:'"},
    {"tcp", "h:1.5", "numeric port"},
    {"tcp", "h: 1", "numeric port"},
    {"tcp", "h:0", "port 0 is outside 1..65535 in 'h:0'"},
    {"tcp", "h:65536", "port 65536 is outside 1..65535"},
    {"tcp", "h:12345678901", "port 12345678901 is outside 1..65535"},
    {"tcp", ":1", "(no host)"},
    {"tcp", "256.0.0.1:1", "'256.0.0.1' is not a valid IPv4 address"},
    {"tcp", "01.2.3.4:1", "'01.2.3.4' is not a valid IPv4 address"},
    {"tcp", "1.2.3.4.:1", "not a valid IPv4 address"},
    {"tcp", "1.2.3.4.5:1", "not a valid IPv4 address"},
    {"tcp", "1..3.4:1", "not a valid IPv4 address"},
    {"tcp", "1234:1", "not a valid IPv4 address"},
    {"tcp", "a_b:1", "'a_b' is not a valid hostname"},
    {"tcp", "ab-.c:1", "not a valid hostname"},
    {"tcp", "-ab.c:1", "not a valid hostname"},
    {"tcp", ".ab:1", "not a valid hostname"},
    {"tcp", "ab.:1", "not a valid hostname"},
    {"tcp", "h st:1", "not a valid hostname"},
    {"tcp", "::1:7070", "write an IPv6 host in brackets"},
    {"tcp", "[::1]", "expected host:port, got '[::1]'"},
    {"tcp", "[::1]7070", "expected host:port"},
    {"tcp", "[::1:7070", "expected host:port"},
    {"tcp", "[1.2.3.4]:1", "'[1.2.3.4]' is not a valid IPv6 address"},
    {"tcp", "[]:1", "is not a valid IPv6 address"},
    {"tcp", "tcp://h:1", "leave out the scheme"},
    {"ipc", "/tmp/x.sock", NULL},
    {"ipc", "rel/x y.sock", NULL},
    {"ipc", "", "expected a socket path, got ''"},
    {"ipc", "/tmp/a\tb", "expected a socket path"},
    {"ipc", "ipc:///tmp/x", "leave out the scheme"},
    {"inproc", "master-0", NULL},
    {"inproc", "a b", "expected an inproc name, got 'a b'"},
    {"inproc", "", "expected an inproc name"},
};

START_TEST(test_table) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char why[256] = "";
    bool ok = tf__cluster_addr_check(cases[i].transport, cases[i].addr, why,
                                     sizeof why);
    if (cases[i].why == NULL) {
      ck_assert_msg(ok, "%s '%s' refused: %s", cases[i].transport,
                    cases[i].addr, why);
    } else {
      ck_assert_msg(!ok, "%s '%s' accepted", cases[i].transport,
                    cases[i].addr);
      ck_assert_msg(strstr(why, cases[i].why) != NULL, "%s '%s': '%s' lacks "
                    "'%s'", cases[i].transport, cases[i].addr, why,
                    cases[i].why);
    }
  }
}
END_TEST

/* Limits built by length: 63-character labels, 253-character names,
 * 107-byte socket paths. */
START_TEST(test_lengths) {
  char addr[400], why[256];
  memset(addr, 'a', 63);
  strcpy(addr + 63, ".b:1");
  ck_assert(tf__cluster_addr_check("tcp", addr, why, sizeof why));
  memset(addr, 'a', 64);
  strcpy(addr + 64, ".b:1");
  ck_assert(!tf__cluster_addr_check("tcp", addr, why, sizeof why));
  ck_assert(strstr(why, "not a valid hostname") != NULL);
  /* 4 labels of 63 plus 3 dots: 255 characters; then 253 exactly. */
  size_t k = 0;
  for (int l = 0; l < 4; l++) {
    memset(addr + k, 'a' + l, 63);
    k += 63;
    addr[k++] = l < 3 ? '.' : ':';
  }
  strcpy(addr + k, "1");
  ck_assert(!tf__cluster_addr_check("tcp", addr, why, sizeof why));
  memmove(addr + 3 * 64 + 61, addr + 3 * 64 + 63, 3); /* last label: 61 */
  ck_assert_int_eq(strchr(addr, ':') - addr, 253);
  ck_assert_msg(tf__cluster_addr_check("tcp", addr, why, sizeof why), "%s",
                why);
  memset(addr, 'p', 107);
  addr[107] = '\0';
  ck_assert(tf__cluster_addr_check("ipc", addr, why, sizeof why));
  addr[107] = 'p';
  addr[108] = '\0';
  ck_assert(!tf__cluster_addr_check("ipc", addr, why, sizeof why));
  ck_assert_msg(strstr(why, "socket path is 108 bytes, more than the 107") !=
                    NULL, "%s", why);
  /* A small why buffer is clipped, not overrun. */
  char tiny[8];
  memset(tiny, 'Z', sizeof tiny);
  ck_assert(!tf__cluster_addr_check("tcp", "abc", tiny, 5));
  ck_assert_int_eq(strlen(tiny), 4);
  ck_assert(tiny[5] == 'Z');
}
END_TEST

START_TEST(test_transports) {
  ck_assert(tf__cluster_transport_known("tcp"));
  ck_assert(tf__cluster_transport_known("ipc"));
  ck_assert(tf__cluster_transport_known("inproc"));
  ck_assert(tf__cluster_transport_known("tls+tcp"));
  ck_assert(!tf__cluster_transport_known("TCP"));
  ck_assert(!tf__cluster_transport_known("udp"));
  ck_assert(!tf__cluster_transport_known(""));
  ck_assert(!tf__cluster_transport_known(NULL));
  ck_assert_str_eq(tf__cluster_addr_expected("tcp"), "host:port");
  ck_assert_str_eq(tf__cluster_addr_expected("tls+tcp"), "host:port");
  ck_assert_str_eq(tf__cluster_addr_expected("ipc"), "a socket path");
  ck_assert_str_eq(tf__cluster_addr_expected("inproc"), "an inproc name");
}
END_TEST

/* The endpoints of one address, joined by " | " (given twice, so that
 * its port is shared and a name is resolved). */
static void endpoints_of(const char *transport, const char *addr, char *buf, size_t n) {
  char **eps[2];
  tf__cluster_endpoints(transport, (const char *[]){addr, addr}, 2, 2000, eps);
  tf__cluster_endpoints_free(eps[1]);
  buf[0] = '\0';
  for (int i = 0; eps[0][i] != NULL; i++) {
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, "%s%s", i ? " | " : "", eps[0][i]);
  }
  tf__cluster_endpoints_free(eps[0]);
}

START_TEST(test_endpoints) {
  static const struct {
    const char *transport, *addr, *want;
  } cases[] = {
      {"tcp", "127.0.0.1:7070", "127.0.0.1 port 7070"},
      {"tcp", "no-such-host.invalid:0070", "host 'no-such-host.invalid' port 70 (not resolved)"},
      {"tcp", "[0:0::1]:9", "[::1] port 9"},
      {"tcp", "[::ffff:127.0.0.1]:9", "127.0.0.1 port 9"},
      {"tls+tcp", "NoSuch.Invalid:5", "host 'nosuch.invalid' port 5 (not resolved)"},
      {"ipc", "a/../b.sock", "socket 'b.sock'"},
      {"ipc", "./run//x/./y.sock", "socket 'run/x/y.sock'"},
      {"ipc", "../up.sock", "socket '../up.sock'"},
      {"ipc", "/../tmp/m.sock", "socket '/tmp/m.sock'"},
      {"ipc", "/tmp/../..", "socket '/'"},
      {"ipc", "a/..", "socket '.'"},
      {"inproc", "Master", "inproc name 'Master'"},
  };
  char buf[512];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    endpoints_of(cases[i].transport, cases[i].addr, buf, sizeof buf);
    ck_assert_msg(strcmp(buf, cases[i].want) == 0, "%s '%s': got '%s', want '%s'",
                  cases[i].transport, cases[i].addr, buf, cases[i].want);
  }
  /* localhost stands for what /etc/hosts gives it, 127.0.0.1 among them. */
  endpoints_of("tcp", "LocalHost:17101", buf, sizeof buf);
  ck_assert_msg(strstr(buf, "127.0.0.1 port 17101") != NULL, "%s", buf);
}
END_TEST

/* Which pairs share an endpoint. */
START_TEST(test_endpoints_shared) {
  const char *tcp[] = {"localhost:17101", "127.0.0.1:17101", "127.0.0.1:17102",
                       "x.invalid:1",     "X.INVALID:1",     "y.invalid:1"};
  char **e[6];
  tf__cluster_endpoints("tcp", tcp, 6, 2000, e);
  ck_assert_str_eq(tf__cluster_endpoints_shared(e[0], e[1]), "127.0.0.1 port 17101");
  ck_assert_ptr_null(tf__cluster_endpoints_shared(e[1], e[2]));
  ck_assert_ptr_null(tf__cluster_endpoints_shared(e[0], e[2]));
  ck_assert_str_eq(tf__cluster_endpoints_shared(e[3], e[4]), "host 'x.invalid' port 1 (not resolved)");
  ck_assert_ptr_null(tf__cluster_endpoints_shared(e[3], e[5]));
  ck_assert_ptr_null(tf__cluster_endpoints_shared(e[2], NULL));
  ck_assert_str_eq(e[5][0], "host 'y.invalid' port 1 (not resolved)");
  for (int i = 0; i < 6; i++) {
    tf__cluster_endpoints_free(e[i]);
  }
  /* Ports no other address has: names are not looked up at all. */
  const char *lone[] = {"localhost:1", "localhost:2"};
  tf__cluster_endpoints("tcp", lone, 2, 2000, e);
  ck_assert_str_eq(e[0][0], "host 'localhost' port 1 (not resolved)");
  ck_assert_str_eq(e[1][0], "host 'localhost' port 2 (not resolved)");
  for (int i = 0; i < 2; i++) {
    tf__cluster_endpoints_free(e[i]);
  }
  tf__cluster_endpoints("tcp", tcp, 6, 2000, e);
  for (int i = 0; i < 6; i++) {
    tf__cluster_endpoints_free(e[i]);
  }
  const char *ipc[] = {"a/../b.sock", "b.sock", "/b.sock"};
  tf__cluster_endpoints("ipc", ipc, 3, 2000, e);
  ck_assert_str_eq(tf__cluster_endpoints_shared(e[0], e[1]), "socket 'b.sock'");
  ck_assert_ptr_null(tf__cluster_endpoints_shared(e[1], e[2]));
  for (int i = 0; i < 3; i++) {
    tf__cluster_endpoints_free(e[i]);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cluster_spec_addr");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_table);
  tcase_add_test(tc, test_lengths);
  tcase_add_test(tc, test_transports);
  tcase_add_test(tc, test_endpoints);
  tcase_add_test(tc, test_endpoints_shared);
  suite_add_tcase(s, tc);
  return s;
}
