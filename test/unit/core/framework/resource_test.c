/* resource_test.c: the resource manager through its own API: create once
 * then look up the same object, "" as the default container, NOT_FOUND and
 * type mismatches naming container, name and types, counts, reset dropping
 * only its container's references (a holder keeps its resource alive and
 * the next lookup creates a fresh one), shutdown callbacks in creation
 * order and without the manager's lock, shutdown without dropping, free,
 * and concurrent lookup_or_create creating exactly once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/resource.h"
#include "test/unit/testutil.h"

/* A test resource that logs its shutdowns and frees. */
typedef struct thing {
  tf_resource base;
  int id;
} thing;

static char event_log[4096];
static int n_freed, n_created;
static tf_resource_mgr *reentrant_mgr; /* shutdown looks this up */
static atomic_int racing_creates;

static void log_event(const char *what, const tf_resource *r) {
  size_t off = strlen(event_log);
  snprintf(event_log + off, sizeof event_log - off, "%s %s/%s;", what,
           r->container, r->name);
}

static void thing_free(tf_resource *r) {
  log_event("free", r);
  n_freed++;
  tf_resource_fini(r);
  free(r);
}

static void thing_shutdown(tf_resource *r) {
  log_event("shutdown", r);
  if (reentrant_mgr != NULL) {
    /* Deadlocks (the test times out) if the manager's lock is held. */
    tf_resource *x;
    tf_status st;
    tf_resource_lookup(reentrant_mgr, "", "anything", &x, &st);
    tf_resource_unref(x);
  }
}

static const tf_resource_type thing_type = {
    .name = "Thing", .free = thing_free, .shutdown = thing_shutdown};
static const tf_resource_type other_type = {.name = "Other",
                                            .free = thing_free};

typedef struct make_arg {
  const tf_resource_type *type;
  const char *container, *name;
  tf_code fail; /* TF_OK: succeed */
} make_arg;

static tf_code make_thing(void *arg, tf_resource **out, tf_status *st) {
  const make_arg *a = arg;
  if (a->fail != TF_OK) {
    return tf_status_set(st, a->fail, "cannot make %s", a->name);
  }
  thing *t = calloc(1, sizeof *t);
  tf_resource_init(&t->base, a->type, a->container, a->name);
  t->id = ++n_created;
  *out = &t->base;
  return TF_OK;
}

/* Each test starts with an empty log (also when Check does not fork). */
static void reset_log(void) {
  event_log[0] = '\0';
  n_freed = n_created = 0;
  reentrant_mgr = NULL;
  atomic_store(&racing_creates, 0);
}

/* lookup_or_create of a Thing in container c (as stored: "" -> default). */
static thing *get(tf_resource_mgr *m, const char *c, const char *name) {
  make_arg a = {&thing_type, *c ? c : TF_DEFAULT_CONTAINER, name, TF_OK};
  tf_resource *r = NULL;
  tf_status st;
  ck_assert_int_eq(tf_resource_lookup_or_create(m, c, name, &thing_type,
                                                make_thing, &a, &r, &st),
                   TF_OK);
  ck_assert_ptr_nonnull(r);
  return (thing *)r;
}

START_TEST(test_create_and_lookup) {
  tf_resource_mgr *m = tf_resource_mgr_new();
  thing *a = get(m, "", "a");
  ck_assert_int_eq(a->id, 1);
  ck_assert_str_eq(a->base.container, TF_DEFAULT_CONTAINER);
  ck_assert_str_eq(a->base.name, "a");
  thing *a2 = get(m, TF_DEFAULT_CONTAINER, "a"); /* "" is the default */
  ck_assert_ptr_eq(a, a2);
  ck_assert_int_eq(n_created, 1);
  ck_assert_int_eq(atomic_load(&a->base.refs), 3); /* container + 2 */
  thing *b = get(m, "c2", "a");                   /* same name, other place */
  ck_assert_ptr_ne(a, b);
  tf_resource *r;
  tf_status st;
  ck_assert_int_eq(tf_resource_lookup(m, "", "a", &r, &st), TF_OK);
  ck_assert_ptr_eq(r, &a->base);
  tf_resource_unref(r);
  ck_assert_int_eq(tf_resource_lookup(m, "c2", "zz", &r, &st), TF_NOT_FOUND);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(st.msg, "c2/zz"), "%s", st.msg);
  ck_assert_int_eq(tf_resource_lookup(m, "c3", "a", &r, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "c3/a"), "%s", st.msg);
  ck_assert_int_eq(tf_resource_mgr_count(m, ""), 1);
  ck_assert_int_eq(tf_resource_mgr_count(m, TF_DEFAULT_CONTAINER), 1);
  ck_assert_int_eq(tf_resource_mgr_count(m, "c2"), 1);
  ck_assert_int_eq(tf_resource_mgr_count(m, "nope"), 0);
  ck_assert_int_eq(tf_resource_mgr_count(m, NULL), 2);
  tf_resource_unref(&a->base);
  tf_resource_unref(&a2->base);
  tf_resource_unref(&b->base);
  ck_assert_int_eq(n_freed, 0);
  tf_resource_mgr_free(m);
  ck_assert_int_eq(n_freed, 2);
  tf_resource_mgr_free(NULL);
  tf_resource_unref(NULL);
}
END_TEST

START_TEST(test_type_mismatch_and_create_error) {
  tf_resource_mgr *m = tf_resource_mgr_new();
  thing *a = get(m, "c", "q");
  make_arg o = {&other_type, "c", "q", TF_OK};
  tf_resource *r = (tf_resource *)0x1;
  tf_status st;
  ck_assert_int_eq(tf_resource_lookup_or_create(m, "c", "q", &other_type,
                                                make_thing, &o, &r, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(st.msg, "c/q") && strstr(st.msg, "Thing") &&
                    strstr(st.msg, "Other"),
                "%s", st.msg);
  /* A failing create inserts nothing and passes its error on. */
  make_arg f = {&thing_type, "c", "bad", TF_RESOURCE_EXHAUSTED};
  ck_assert_int_eq(tf_resource_lookup_or_create(m, "c", "bad", &thing_type,
                                                make_thing, &f, &r, &st),
                   TF_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(st.msg, "cannot make bad"), "%s", st.msg);
  ck_assert_int_eq(tf_resource_mgr_count(m, "c"), 1);
  /* A create that makes the wrong type is a bug reported as INTERNAL. */
  make_arg w = {&other_type, "c", "w", TF_OK};
  ck_assert_int_eq(tf_resource_lookup_or_create(m, "c", "w", &thing_type,
                                                make_thing, &w, &r, &st),
                   TF_INTERNAL);
  ck_assert_int_eq(n_freed, 1); /* the wrong object was dropped */
  ck_assert_int_eq(tf_resource_mgr_count(m, "c"), 1);
  tf_resource_unref(&a->base);
  tf_resource_mgr_free(m);
  ck_assert_int_eq(n_freed, 2);
}
END_TEST

START_TEST(test_reset_keeps_held_alive) {
  tf_resource_mgr *m = tf_resource_mgr_new();
  thing *held = get(m, "", "v");
  thing *other = get(m, "c2", "v");
  tf_resource_unref(&other->base);
  tf_resource_mgr_reset(m, "");
  ck_assert_int_eq(n_freed, 0); /* a step still holds it */
  ck_assert_str_eq(event_log, "shutdown localhost/v;");
  ck_assert_int_eq(tf_resource_mgr_count(m, ""), 0);
  ck_assert_int_eq(tf_resource_mgr_count(m, "c2"), 1);
  tf_resource *r;
  tf_status st;
  ck_assert_int_eq(tf_resource_lookup(m, "", "v", &r, &st), TF_NOT_FOUND);
  thing *fresh = get(m, "", "v");
  ck_assert_ptr_ne(fresh, held);
  ck_assert_int_eq(fresh->id, 3);
  ck_assert_int_eq(held->id, 1); /* still readable */
  tf_resource_unref(&held->base);
  ck_assert_int_eq(n_freed, 1);
  tf_resource_mgr_reset(m, "no-such-container"); /* not an error */
  tf_resource_mgr_reset(m, "c2");
  ck_assert_int_eq(n_freed, 2);
  ck_assert_int_eq(tf_resource_mgr_count(m, NULL), 1);
  tf_resource_unref(&fresh->base);
  tf_resource_mgr_free(m);
  ck_assert_int_eq(n_freed, 3);
}
END_TEST

START_TEST(test_shutdown_order_and_no_lock) {
  tf_resource_mgr *m = tf_resource_mgr_new();
  reentrant_mgr = m;
  const char *names[] = {"q3", "q1", "q2"};
  for (int i = 0; i < 3; i++) {
    tf_resource_unref(&get(m, "", names[i])->base);
  }
  tf_resource_unref(&get(m, "other", "z")->base);
  tf_resource_mgr_shutdown(m); /* shuts down, drops nothing */
  ck_assert_str_eq(event_log,
                   "shutdown localhost/q3;shutdown localhost/q1;"
                   "shutdown localhost/q2;shutdown other/z;");
  ck_assert_int_eq(n_freed, 0);
  ck_assert_int_eq(tf_resource_mgr_count(m, NULL), 4);
  event_log[0] = '\0';
  tf_resource_mgr_reset(m, "");
  ck_assert_str_eq(event_log,
                   "shutdown localhost/q3;shutdown localhost/q1;"
                   "shutdown localhost/q2;free localhost/q3;"
                   "free localhost/q1;free localhost/q2;");
  event_log[0] = '\0';
  tf_resource_mgr_free(m);
  ck_assert_str_eq(event_log, "shutdown other/z;free other/z;");
  reentrant_mgr = NULL;
}
END_TEST

/* ---- concurrency --------------------------------------------------------- */

static tf_code make_slow(void *arg, tf_resource **out, tf_status *st) {
  atomic_fetch_add(&racing_creates, 1);
  thing *t = calloc(1, sizeof *t);
  tf_resource_init(&t->base, &thing_type, TF_DEFAULT_CONTAINER, arg);
  *out = &t->base;
  return TF_OK;
}

typedef struct race {
  tf_resource_mgr *m;
  tf_resource *got[64];
} race;

static void *racer(void *arg) {
  race *r = arg;
  char name[16];
  tf_status st;
  for (int i = 0; i < 64; i++) {
    snprintf(name, sizeof name, "r%d", i);
    if (tf_resource_lookup_or_create(r->m, "", name, &thing_type, make_slow,
                                     name, &r->got[i], &st) != TF_OK) {
      r->got[i] = NULL;
    }
  }
  return NULL;
}

START_TEST(test_concurrent_create_once) {
  tf_resource_mgr *m = tf_resource_mgr_new();
  race rs[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    rs[i].m = m;
    pthread_create(&th[i], NULL, racer, &rs[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
  }
  ck_assert_int_eq(atomic_load(&racing_creates), 64);
  ck_assert_int_eq(tf_resource_mgr_count(m, ""), 64);
  for (int k = 0; k < 64; k++) {
    for (int i = 0; i < 4; i++) {
      ck_assert_ptr_nonnull(rs[i].got[k]);
      ck_assert_ptr_eq(rs[i].got[k], rs[0].got[k]);
    }
    ck_assert_int_eq(atomic_load(&rs[0].got[k]->refs), 5);
  }
  for (int i = 0; i < 4; i++) {
    for (int k = 0; k < 64; k++) {
      tf_resource_unref(rs[i].got[k]);
    }
  }
  tf_resource_mgr_free(m);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("resource");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_create_and_lookup);
  tcase_add_test(tc, test_type_mismatch_and_create_error);
  tcase_add_test(tc, test_reset_keeps_held_alive);
  tcase_add_test(tc, test_shutdown_order_and_no_lock);
  tcase_add_test(tc, test_concurrent_create_once);
  tcase_add_checked_fixture(tc, reset_log, NULL);
  tcase_set_timeout(tc, 30);
  suite_add_tcase(s, tc);
  return s;
}
