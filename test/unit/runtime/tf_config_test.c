/* tf_config_test.c: TF_CONFIG: real values (TensorFlow's documented
 * examples, with tabs, escapes and a surrogate pair) mapped to this
 * system's jobs, the strict JSON reader against Python's json module on
 * the same texts, and malformed values (missing task, index out of range,
 * wrong types, chief and master both, bad JSON) each with a clear error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/runtime/json.h"
#include "lib/runtime/tf_config.h"
#include "test/unit/testutil.h"

static tf_tfconfig *parse_ok(const char *text) {
  tf_status st;
  tf_status_init(&st);
  tf_tfconfig *c = NULL;
  ck_assert_msg(tf_tfconfig_parse(text, strlen(text), &c, &st) == TF_OK,
                "%s: %s", text, st.msg);
  return c;
}

static void parse_bad(const char *text, const char *want) {
  tf_status st;
  tf_status_init(&st);
  tf_tfconfig *c = (tf_tfconfig *)1;
  ck_assert_int_eq(tf_tfconfig_parse(text, strlen(text), &c, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(st.msg, want) != NULL, "%s: '%s' lacks '%s'", text,
                st.msg, want);
}

START_TEST(test_tensorflow_example) {
  /* wave2-notes §I, the TensorFlow docs' example. */
  tf_tfconfig *c = parse_ok(
      "{\"cluster\": {\"chief\": [\"h0:2222\"], \"worker\": [\"h1:2222\", "
      "\"h2:2222\"], \"ps\": [\"h3:2222\"], \"evaluator\": [\"h4:2222\"]}, "
      "\"task\": {\"type\": \"worker\", \"index\": 1}, \"rpc_layer\": "
      "\"grpc\"}");
  ck_assert_int_eq(c->n_jobs, 3);
  ck_assert_str_eq(c->jobs[0].name, "master");
  ck_assert_int_eq(c->jobs[0].n_tasks, 1);
  ck_assert_str_eq(c->jobs[0].addrs[0], "h0:2222");
  ck_assert_str_eq(c->jobs[1].name, "worker");
  ck_assert_int_eq(c->jobs[1].n_tasks, 2);
  ck_assert_str_eq(c->jobs[1].addrs[1], "h2:2222");
  ck_assert_str_eq(c->jobs[2].name, "ps");
  ck_assert_str_eq(c->job, "worker");
  ck_assert_int_eq(c->task, 1);
  ck_assert_msg(strstr(c->note, "evaluator job is left out") != NULL, "%s",
                c->note);
  tf_tfconfig_free(c);
  /* "master" works as "chief" does; tabs, newlines, escapes. */
  c = parse_ok("{\n\t\"task\":\t{\"index\": 0, \"type\": \"master\"},\r\n"
               "\t\"cluster\": {\"worker\": [\"w\\u0030:1\"], \"master\": "
               "[\"m\\/x:2\"]}, \"environment\": \"cloud\"}\n");
  ck_assert_str_eq(c->job, "master");
  ck_assert_int_eq(c->task, 0);
  ck_assert_str_eq(c->jobs[0].addrs[0], "m/x:2");
  ck_assert_str_eq(c->jobs[1].addrs[0], "w0:1");
  ck_assert_str_eq(c->note, "");
  tf_tfconfig_free(c);
  c = parse_ok("{\"cluster\": {\"chief\": [\"a:1\"]}, \"task\": {\"type\": "
               "\"chief\", \"index\": 0}}");
  ck_assert_str_eq(c->job, "master");
  tf_tfconfig_free(c);
  tf_tfconfig_free(NULL);
}
END_TEST

START_TEST(test_malformed) {
  const char *cl = "\"cluster\": {\"chief\": [\"h0:1\"], \"worker\": "
                   "[\"h1:1\", \"h2:1\"]}";
  char b[512];
#define WITH(task) (snprintf(b, sizeof b, "{%s, \"task\": %s}", cl, task), b)
  parse_bad(WITH("{\"type\": \"worker\", \"index\": 2}"),
            "TF_CONFIG: task.index 2 is out of range (job \"worker\" has 2 "
            "tasks: 0..1)");
  parse_bad(WITH("{\"type\": \"worker\", \"index\": \"1\"}"),
            "task.index: expected an integer >= 0, got a string");
  parse_bad(WITH("{\"type\": \"worker\", \"index\": -1}"),
            "task.index: expected an integer >= 0, got '-1'");
  parse_bad(WITH("{\"type\": \"worker\", \"index\": 1.0}"), "got '1.0'");
  parse_bad(WITH("{\"type\": \"worker\"}"), "got nothing");
  parse_bad(WITH("{\"type\": 3, \"index\": 0}"),
            "task.type: expected a job name string, got a number");
  parse_bad(WITH("{\"type\": \"ps\", \"index\": 0}"),
            "task.type \"ps\" is not a job of the cluster");
  parse_bad(WITH("{\"type\": \"evaluator\", \"index\": 0}"),
            "task.type \"evaluator\" is not supported");
  parse_bad(WITH("{\"type\": \"worker\", \"index\": 0, \"x\": 1}"),
            "task: unknown key \"x\"");
  parse_bad(WITH("[]"), "task: expected an object");
  parse_bad(WITH("{\"type\": \"worker\", \"index\": 0}, \"zz\": 1"),
            "unknown key \"zz\"");
  parse_bad(WITH("{\"type\": \"worker\", \"index\": 0}, \"rpc_layer\": 1"),
            "rpc_layer: expected a string, got a number");
#undef WITH
  parse_bad("{\"cluster\": {\"chief\": [\"a:1\"]}}",
            "missing key \"task\"");
  parse_bad("{\"task\": {\"type\": \"chief\", \"index\": 0}}",
            "missing key \"cluster\"");
  parse_bad("{\"cluster\": {\"chief\": [\"a:1\"], \"master\": [\"b:1\"]}, "
            "\"task\": {\"type\": \"chief\", \"index\": 0}}",
            "cluster has both \"chief\" and \"master\"");
  parse_bad("{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": "
            "\"worker\", \"index\": 0}}", "cluster has no \"chief\"");
  parse_bad("{\"cluster\": {\"chief\": [\"a:1\", \"b:1\"]}, \"task\": "
            "{\"type\": \"chief\", \"index\": 0}}",
            "cluster.chief: expected exactly one task, got 2");
  parse_bad("{\"cluster\": {\"chief\": [\"a:1\"], \"worker\": {\"1\": "
            "\"b:1\"}}, \"task\": {\"type\": \"chief\", \"index\": 0}}",
            "cluster.worker: a sparse job (a mapping of task indices) is "
            "not supported");
  parse_bad("{\"cluster\": {\"chief\": [\"a:1\"], \"worker\": []}, \"task\": "
            "{\"type\": \"chief\", \"index\": 0}}",
            "cluster.worker: expected 1..65536 addresses, got 0");
  parse_bad("{\"cluster\": {\"chief\": [\"a:1\"], \"worker\": [7]}, "
            "\"task\": {\"type\": \"chief\", \"index\": 0}}",
            "cluster.worker[0]: expected a \"host:port\" address, got a "
            "number");
  parse_bad("{\"cluster\": {\"chief\": [\"a:1\"], \"w k\": [\"b:1\"]}, "
            "\"task\": {\"type\": \"chief\", \"index\": 0}}",
            "job name \"w k\" must be 1..63 characters");
  parse_bad("{\"cluster\": \"x\", \"task\": {}}",
            "cluster: expected an object of job names");
  parse_bad("[1]", "TF_CONFIG: expected an object");
}
END_TEST

START_TEST(test_bad_json) {
  static const char *const t[][2] = {
      {"", "TF_CONFIG at character 1: expected a value, got the end"},
      {"{\"a\" 1}", "at character 6: expected ':' after the key, got '1'"},
      {"{\"a\": 1,}", "at character 9: expected a key in quotes, got '}'"},
      {"{\"a\": 1 \"b\": 2}", "at character 9: expected ',' or '}', got '\"'"},
      {"{\"a\": 1, \"a\": 2}", "at character 10: key \"a\" appears twice"},
      {"{\"a\": [1, 2,]}", "expected a value (object, array, string, number, "
       "true, false or null), got ']'"},
      {"{\"a\": 1} x", "at character 10: unexpected 'x' after the value"},
      {"{\"a\": \"x", "at character 7: string not closed"},
      {"{\"a\": \"\\q\"}", "at character 8: unknown escape '\\q'"},
      {"{\"a\": \"\\u00\"}", "expected 4 hex digits after '\\u'"},
      {"{\"a\": \"\\ud83d\"}", "high surrogate \\ud83d without a low one"},
      {"{\"a\": \"\\ude00\"}", "lone low surrogate \\ude00"},
      {"{\"a\": \"\\u0000\"}", "\\u0000 (a NUL character) is not supported"},
      {"{\"a\": \"x\ty\"}", "at character 9: byte 0x09 in a string"},
      {"{\"a\": 01}", "a number may not start with 0"},
      {"{\"a\": 1.}", "expected a digit after '.', got '}'"},
      {"{\"a\": 1e}", "expected a digit in the exponent"},
      {"{\"a\": -}", "expected a digit, got '}'"},
      {"{a: 1}", "expected a key in quotes, got 'a'"},
      {"{\"a\": tru}", "expected a value"},
      {"// c\n{}", "expected a value"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    parse_bad(t[i][0], t[i][1]);
  }
  /* Nesting is capped; 32 levels of arrays is one too many. */
  char deep[80] = "";
  for (int i = 0; i < 33; i++) {
    strcat(deep, "[");
  }
  parse_bad(deep, "nested deeper than 32");
}
END_TEST

/* The JSON reader agrees with Python's json on random valid texts: both
 * print the value's strings and numbers in order. */
static void walk(const tf__json *v, char *out, size_t cap) {
  size_t l = strlen(out);
  if (v->type == TF__JSON_STRING || v->type == TF__JSON_NUMBER) {
    snprintf(out + l, cap - l, "%s|", v->text);
  } else if (v->type == TF__JSON_BOOL || v->type == TF__JSON_NULL) {
    snprintf(out + l, cap - l, "%s|", v->type == TF__JSON_NULL ? "null"
             : v->b ? "true" : "false");
  }
  for (int i = 0; i < v->n; i++) {
    if (v->keys[i] != NULL) {
      l = strlen(out);
      snprintf(out + l, cap - l, "%s=", v->keys[i]);
    }
    walk(&v->items[i], out, cap);
  }
}

START_TEST(test_json_against_python) {
  if (access("/usr/bin/python3", X_OK) != 0) {
    printf("tf_config_test: no /usr/bin/python3: JSON not cross-checked\n");
    return;
  }
  static const char *const texts[] = {
      "{\"k\\u00e9y\": [\"\\ud83d\\ude00\", -0.5e+3, 12, true, null], "
      "\"b\": {\"c\": \"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}}",
      " [ {} , [ ] , \"\\u20ac\" , 0 , 1E9 ]\t",
      "{\"cluster\":{\"chief\":[\"h0:2222\"]},\"task\":{\"type\":\"chief\","
      "\"index\":0}}",
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    tf_status st;
    tf_status_init(&st);
    tf__json *v = NULL;
    ck_assert_msg(tf__json_parse(texts[i], strlen(texts[i]), "t", &v, &st) ==
                  TF_OK, "%s", st.msg);
    char got[2048] = "", want[2048] = "";
    walk(v, got, sizeof got);
    tf__json_free(v);
    char path[] = "/tmp/tf_config_testXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert(write(fd, texts[i], strlen(texts[i])) > 0);
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c '\n"
             "import json,sys\n"
             "def w(v):\n"
             " if isinstance(v,dict):\n"
             "  return \"\".join(k+\"=\"+w(x) for k,x in v.items())\n"
             " if isinstance(v,list): return \"\".join(w(x) for x in v)\n"
             " if v is None: return \"null|\"\n"
             " if isinstance(v,bool): return (\"true\" if v else \"false\")+\"|\"\n"
             " return str(v)+\"|\"\n"
             "sys.stdout.write(w(json.load(open(sys.argv[1]))))' %s", path);
    FILE *p = popen(cmd, "r");
    size_t n = fread(want, 1, sizeof want - 1, p);
    pclose(p);
    unlink(path);
    want[n] = '\0';
    /* Python prints numbers as values; compare those texts as numbers. */
    ck_assert_msg(strlen(got) > 0 && strlen(want) > 0, "%s / %s", got, want);
    char *g = got, *w = want, *gs, *ws;
    for (char *a = strtok_r(g, "|", &gs), *b = strtok_r(w, "|", &ws);
         a != NULL || b != NULL;
         a = strtok_r(NULL, "|", &gs), b = strtok_r(NULL, "|", &ws)) {
      ck_assert_msg(a != NULL && b != NULL, "text %zu: lengths differ", i);
      char *ae, *be;
      double x = strtod(strchr(a, '=') ? strrchr(a, '=') + 1 : a, &ae);
      double y = strtod(strchr(b, '=') ? strrchr(b, '=') + 1 : b, &be);
      bool nums = *ae == '\0' && *be == '\0' && ae != a && be != b;
      ck_assert_msg(nums ? x == y : strcmp(a, b) == 0, "text %zu: '%s' vs "
                    "python '%s'", i, a, b);
    }
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("tf_config");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_tensorflow_example);
  tcase_add_test(tc, test_malformed);
  tcase_add_test(tc, test_bad_json);
  tcase_add_test(tc, test_json_against_python);
  suite_add_tcase(s, tc);
  return s;
}
