/* msg_job_test.c: the job messages (msg_job.c): SubmitJob, ListJobs,
 * JobStatus, JobControl, JobLogs and JobCheckpoints requests and replies
 * round trip (every field, the optional ones' defaults, a body from an
 * older peer without the checkpoint fields, a NaN loss and infinite
 * metric values bit for bit), bodies are the bytes docs/wire.md lists,
 * every cap is enforced on both sides (tf_wire_finish names the field and
 * the cap; decoders refuse), float fields take float32, float64 and ints
 * and refuse the rest, hostile bodies are refused naming the field, and
 * seeded byte flips run through the fuzz harness's checks. */
#include <math.h>

#include "test/unit/transport/msg_testlib.h"

MSG_OPS(submit_ops, tf_msg_submit_job_req, TF_M_SUBMIT_JOB, false)
MSG_OPS(submit_reply_ops, tf_msg_submit_job_reply, TF_M_SUBMIT_JOB, true)
MSG_OPS(list_ops, tf_msg_list_jobs_reply, TF_M_LIST_JOBS, true)
MSG_OPS(status_ops, tf_msg_job_status_req, TF_M_JOB_STATUS, false)
MSG_OPS(control_ops, tf_msg_job_control_req, TF_M_JOB_CONTROL, false)
MSG_OPS(logs_ops, tf_msg_job_logs_req, TF_M_JOB_LOGS, false)
MSG_OPS(logs_reply_ops, tf_msg_job_logs_reply, TF_M_JOB_LOGS, true)
MSG_OPS(ckpts_ops, tf_msg_job_checkpoints_req, TF_M_JOB_CHECKPOINTS, false)
MSG_OPS(ckpts_reply_ops, tf_msg_job_checkpoints_reply, TF_M_JOB_CHECKPOINTS, true)

/* The job info reply decodes under a method: one ops per method. */
MSG_OPS_METHOD(info_status_ops, tf_msg_job_info_reply, TF_M_JOB_STATUS, true)
MSG_OPS_METHOD(info_control_ops, tf_msg_job_info_reply, TF_M_JOB_CONTROL, true)

static const tf_msg_metric metrics3[] = {
    {"test_accuracy", 0.8912}, {"test_loss", 0.31415926535897931}, {"big", -1e300}};

static int64_t replica_steps2[] = {601, 0};

static tf_msg_job_info job_info(const char *id, int n_metrics) {
  return (tf_msg_job_info){.job = id, .name = "fmnist-mlp", .state = "running",
                           .mode = "sync", .workers = 2, .step = 1200, .steps = 3000,
                           .loss = 0.4123, .steps_per_s = 85.2, .elapsed_ms = 14100,
                           .submitted_ms = 1790000000123LL, .error = "",
                           .n_metrics = n_metrics, .metrics = (tf_msg_metric *)metrics3,
                           .n_replica_steps = 2, .replica_steps = replica_steps2,
                           .recoveries = 2, .checkpoint = "run/ckpt/fmnist/ckpt-1000",
                           .checkpoint_step = 1000, .note = ""};
}

static tf_wire_msg *info_msg(int method, const tf_msg_job_info *j) {
  tf_wire_writer *w = mt_writer(method, true);
  tf_msg_job_info_reply_encode(w, &(tf_msg_job_info_reply){.info = *j});
  return mt_parse(w);
}

static tf_wire_msg *list_msg(const tf_msg_job_info *js, int n) {
  tf_wire_writer *w = mt_writer(TF_M_LIST_JOBS, true);
  tf_msg_list_jobs_reply_encode(w, &(tf_msg_list_jobs_reply){.n_jobs = n,
                                                              .jobs = (tf_msg_job_info *)js});
  return mt_parse(w);
}

static tf_wire_msg *submit_msg(const void *spec, size_t len, const char *name) {
  tf_wire_writer *w = mt_writer(TF_M_SUBMIT_JOB, false);
  tf_msg_submit_job_req_encode(w, &(tf_msg_submit_job_req){.spec = spec, .spec_len = len,
                                                            .name = name});
  return mt_parse(w);
}

static tf_wire_msg *control_msg(const char *job, const char *action, int64_t steps) {
  tf_wire_writer *w = mt_writer(TF_M_JOB_CONTROL, false);
  tf_msg_job_control_req_encode(w, &(tf_msg_job_control_req){.job = job, .action = action,
                                                              .steps = steps});
  return mt_parse(w);
}

static tf_wire_msg *restore_msg(const char *job, const char *ckpt) {
  tf_wire_writer *w = mt_writer(TF_M_JOB_CONTROL, false);
  tf_msg_job_control_req_encode(w, &(tf_msg_job_control_req){.job = job, .action = "restore",
                                                              .checkpoint = ckpt});
  return mt_parse(w);
}

static tf_msg_checkpoint ckpts3[] = {{"ckpt-100", 100, 1790000000123LL, 4096},
                                     {"ckpt-200", 200, 1790000060456LL, 812},
                                     {"ckpt-300", 300, 1790000120789LL, 1536}};

static tf_wire_msg *ckpts_reply_msg(const char *dir, const tf_msg_checkpoint *cs, int n) {
  tf_wire_writer *w = mt_writer(TF_M_JOB_CHECKPOINTS, true);
  tf_msg_job_checkpoints_reply_encode(w, &(tf_msg_job_checkpoints_reply){
                                             .dir = dir, .n_checkpoints = n,
                                             .checkpoints = (tf_msg_checkpoint *)cs});
  return mt_parse(w);
}

static tf_wire_msg *logs_reply_msg(int64_t first, const char **lines, int n, int64_t next) {
  tf_wire_writer *w = mt_writer(TF_M_JOB_LOGS, true);
  tf_msg_job_logs_reply_encode(w, &(tf_msg_job_logs_reply){.first = first, .next = next,
                                                            .n_lines = n, .lines = lines});
  return mt_parse(w);
}

/* The same double, bit for bit (NaN included). */
static void same_f64(double a, double b) {
  ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "%.17g != %.17g", a, b);
}

static void same_info(const tf_msg_job_info *a, const tf_msg_job_info *b) {
  ck_assert_str_eq(a->job, b->job);
  ck_assert_str_eq(a->name, b->name);
  ck_assert_str_eq(a->state, b->state);
  ck_assert_str_eq(a->mode, b->mode);
  ck_assert_int_eq(a->workers, b->workers);
  ck_assert(a->step == b->step && a->steps == b->steps);
  same_f64(a->loss, b->loss);
  same_f64(a->steps_per_s, b->steps_per_s);
  ck_assert(a->elapsed_ms == b->elapsed_ms && a->submitted_ms == b->submitted_ms);
  ck_assert_str_eq(a->error, b->error);
  ck_assert_int_eq(a->n_metrics, b->n_metrics);
  for (int i = 0; i < a->n_metrics; i++) {
    ck_assert_str_eq(a->metrics[i].name, b->metrics[i].name);
    same_f64(a->metrics[i].value, b->metrics[i].value);
  }
  ck_assert_int_eq(a->n_replica_steps, b->n_replica_steps);
  for (int i = 0; i < a->n_replica_steps; i++) {
    ck_assert(a->replica_steps[i] == b->replica_steps[i]);
  }
  ck_assert_int_eq(a->recoveries, b->recoveries);
  ck_assert_str_eq(a->checkpoint, b->checkpoint);
  ck_assert(a->checkpoint_step == b->checkpoint_step);
  ck_assert_str_eq(a->note, b->note);
}

/* A body packed by hand (sb) under a header of method, parsed. */
static tf_wire_msg *raw_msg(int method, bool reply, const msgpack_sbuffer *sb) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method, .is_reply = reply};
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert(tf_wire_parse(raw_build(&h, sb->data, sb->size, NULL, 0), &r, &st) == TF_OK);
  return r;
}

static void pack_s(msgpack_packer *pk, const char *s) {
  msgpack_pack_str(pk, strlen(s));
  msgpack_pack_str_body(pk, s, strlen(s));
}

/* ---- round trips ----------------------------------------------------------- */

START_TEST(submit_round_trip) {
  tt_rng_reseed(tt_seed() ^ 0x5b);
  size_t n = 1000 + tt_rand_u64() % 1000;
  uint8_t *spec = malloc(n);
  for (size_t i = 0; i < n; i++) spec[i] = (uint8_t)tt_rand_u64(); /* NULs included */
  tf_wire_msg *r = submit_msg(spec, n, "conf/jobs/fmnist.yaml");
  tf_msg_submit_job_req b;
  tf_status st;
  ck_assert_msg(tf_msg_submit_job_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert_uint_eq(b.spec_len, n);
  ck_assert(memcmp(b.spec, spec, n) == 0);
  ck_assert_str_eq(b.name, "conf/jobs/fmnist.yaml");
  tf_msg_submit_job_req_fini(&b);
  ck_assert_ptr_null(b.spec);
  tf_wire_msg_free(r);
  /* An empty spec decodes (the master judges it). */
  r = submit_msg("", 0, "");
  ck_assert_msg(tf_msg_submit_job_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert_uint_eq(b.spec_len, 0);
  ck_assert_str_eq(b.name, "");
  tf_msg_submit_job_req_fini(&b);
  tf_wire_msg_free(r);
  free(spec);
  tf_wire_writer *w = mt_writer(TF_M_SUBMIT_JOB, true);
  tf_msg_submit_job_reply_encode(w, &(tf_msg_submit_job_reply){.job = "fmnist-mlp-sync-1"});
  r = mt_parse(w);
  tf_msg_submit_job_reply sb;
  ck_assert_msg(tf_msg_submit_job_reply_decode(r, &sb, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_str_eq(sb.job, "fmnist-mlp-sync-1");
  tf_msg_submit_job_reply_fini(&sb);
}
END_TEST

/* A spec of exactly TF_MSG_MAX_JOB_SPEC_BYTES goes; one byte more fails
 * tf_wire_finish naming the field and the cap, and is refused when it
 * arrives anyway. */
START_TEST(submit_spec_cap) {
  size_t cap = TF_MSG_MAX_JOB_SPEC_BYTES;
  char *spec = malloc(cap + 1);
  memset(spec, 'y', cap + 1);
  tf_wire_msg *r = submit_msg(spec, cap, "big.yaml");
  tf_msg_submit_job_req b;
  tf_status st;
  ck_assert_msg(tf_msg_submit_job_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert_uint_eq(b.spec_len, cap);
  tf_msg_submit_job_req_fini(&b);
  tf_wire_msg_free(r);
  tf_wire_writer *w = mt_writer(TF_M_SUBMIT_JOB, false);
  tf_msg_submit_job_req_encode(w, &(tf_msg_submit_job_req){.spec = spec, .spec_len = cap + 1,
                                                            .name = "big.yaml"});
  mt_finish_fails(w, "SubmitJob: 'spec' is 1048577 bytes long, over the cap of 1048576 "
                     "(TF_MSG_MAX_JOB_SPEC_BYTES)");
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  pack_s(&pk, "spec");
  msgpack_pack_bin(&pk, cap + 1);
  msgpack_pack_bin_body(&pk, spec, cap + 1);
  pack_s(&pk, "name");
  pack_s(&pk, "big.yaml");
  r = raw_msg(TF_M_SUBMIT_JOB, false, &sb);
  memset(&b, 0x5a, sizeof b);
  ck_assert_int_eq(tf_msg_submit_job_req_decode(r, &b, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "SubmitJob: field 'spec' is 1048577 bytes long, over the cap of "
                           "1048576 (TF_MSG_MAX_JOB_SPEC_BYTES)");
  ck_assert(msg_fuzz_is_zero(&b, sizeof b));
  tf_wire_msg_free(r);
  msgpack_sbuffer_destroy(&sb);
  free(spec);
}
END_TEST

START_TEST(info_round_trip) {
  const int methods[] = {TF_M_JOB_STATUS, TF_M_JOB_CONTROL};
  for (int k = 0; k < 2; k++) {
    for (int n_metrics = 0; n_metrics <= 3; n_metrics += 3) {
      tf_msg_job_info in = job_info("fmnist-mlp-sync-1", n_metrics);
      if (k == 1) { /* a failed job: every string set, extremes */
        in.state = "failed";
        in.error = "worker 1: step 1201: loss is NaN";
        in.step = INT64_MAX;
        in.steps = 0;
        in.workers = INT32_MAX;
        in.steps_per_s = 0;
        in.recoveries = INT32_MAX;
        in.checkpoint_step = INT64_MAX;
        in.note = "restoring run/ckpt/fmnist/ckpt-1000 (step 1000); skipped ckpt-1200: "
                  "ps-0.shard: CRC mismatch";
      } else if (n_metrics == 0) { /* no checkpoint yet */
        in.recoveries = 0;
        in.checkpoint = "";
        in.checkpoint_step = 0;
      }
      tf_wire_msg *r = info_msg(methods[k], &in);
      tf_msg_job_info_reply b;
      tf_status st;
      ck_assert_msg(tf_msg_job_info_reply_decode(r, methods[k], &b, &st) == TF_OK, "%s",
                    st.msg);
      tf_wire_msg_free(r);
      same_info(&b.info, &in);
      tf_msg_job_info_reply_fini(&b);
    }
  }
  /* A reply of one method is not the other's. */
  tf_msg_job_info in = job_info("j", 0);
  tf_wire_msg *r = info_msg(TF_M_JOB_STATUS, &in);
  tf_msg_job_info_reply b;
  tf_status st;
  ck_assert_int_eq(tf_msg_job_info_reply_decode(r, TF_M_JOB_CONTROL, &b, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "JobControl reply: the message is a JobStatus reply");
  tf_wire_msg_free(r);
}
END_TEST

/* No loss yet (NaN) and non-finite metrics cross unchanged. */
START_TEST(nan_loss_round_trip) {
  tf_msg_metric ms[] = {{"test_loss", NAN}, {"up", INFINITY}, {"down", -INFINITY},
                        {"zero", -0.0}};
  tf_msg_job_info in = job_info("queued-1", 4);
  in.state = "queued";
  in.loss = NAN;
  in.metrics = ms;
  tf_wire_msg *r = info_msg(TF_M_JOB_STATUS, &in);
  tf_msg_job_info_reply b;
  tf_status st;
  ck_assert_msg(tf_msg_job_info_reply_decode(r, TF_M_JOB_STATUS, &b, &st) == TF_OK, "%s",
                st.msg);
  tf_wire_msg_free(r);
  ck_assert(isnan(b.info.loss));
  ck_assert(isnan(b.info.metrics[0].value));
  ck_assert(isinf(b.info.metrics[1].value) && b.info.metrics[1].value > 0);
  ck_assert(isinf(b.info.metrics[2].value) && b.info.metrics[2].value < 0);
  ck_assert(signbit(b.info.metrics[3].value));
  same_info(&b.info, &in);
  tf_msg_job_info_reply_fini(&b);
  /* In a list too. */
  tf_msg_job_info js[] = {in, job_info("b", 3)};
  r = list_msg(js, 2);
  tf_msg_list_jobs_reply l;
  ck_assert_msg(tf_msg_list_jobs_reply_decode(r, &l, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert(isnan(l.jobs[0].loss));
  same_info(&l.jobs[0], &js[0]);
  same_info(&l.jobs[1], &js[1]);
  tf_msg_list_jobs_reply_fini(&l);
}
END_TEST

/* Only job, name and state are required; the rest default (messages.h). */
START_TEST(info_defaults) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 3);
  pack_s(&pk, "state");
  pack_s(&pk, "queued");
  pack_s(&pk, "job");
  pack_s(&pk, "j-7");
  pack_s(&pk, "name");
  pack_s(&pk, "mlp");
  tf_wire_msg *r = raw_msg(TF_M_JOB_CONTROL, true, &sb);
  tf_msg_job_info_reply b;
  tf_status st;
  ck_assert_msg(tf_msg_job_info_reply_decode(r, TF_M_JOB_CONTROL, &b, &st) == TF_OK, "%s",
                st.msg);
  tf_wire_msg_free(r);
  const tf_msg_job_info *j = &b.info;
  ck_assert_str_eq(j->job, "j-7");
  ck_assert_str_eq(j->name, "mlp");
  ck_assert_str_eq(j->state, "queued");
  ck_assert_str_eq(j->mode, "");
  ck_assert_str_eq(j->error, "");
  ck_assert(j->workers == 0 && j->step == 0 && j->steps == 0 && j->elapsed_ms == 0 &&
            j->submitted_ms == 0 && j->steps_per_s == 0);
  ck_assert(isnan(j->loss));
  ck_assert_int_eq(j->n_metrics, 0);
  ck_assert_int_eq(j->n_replica_steps, 0);
  ck_assert(j->recoveries == 0 && j->checkpoint_step == 0);
  ck_assert_str_eq(j->checkpoint, "");
  ck_assert_str_eq(j->note, "");
  tf_msg_job_info_reply_fini(&b);
  /* JobControl's steps and JobLogs' from default to 0. */
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 2);
  pack_s(&pk, "action");
  pack_s(&pk, "pause");
  pack_s(&pk, "job");
  pack_s(&pk, "j-7");
  r = raw_msg(TF_M_JOB_CONTROL, false, &sb);
  tf_msg_job_control_req c;
  ck_assert_msg(tf_msg_job_control_req_decode(r, &c, &st) == TF_OK, "%s", st.msg);
  ck_assert(c.steps == 0);
  ck_assert_str_eq(c.action, "pause");
  ck_assert_str_eq(c.checkpoint, ""); /* an older client: no checkpoint key */
  tf_msg_job_control_req_fini(&c);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 1);
  pack_s(&pk, "job");
  pack_s(&pk, "j-7");
  r = raw_msg(TF_M_JOB_LOGS, false, &sb);
  tf_msg_job_logs_req lq;
  ck_assert_msg(tf_msg_job_logs_req_decode(r, &lq, &st) == TF_OK, "%s", st.msg);
  ck_assert(lq.from == 0);
  ck_assert_str_eq(lq.job, "j-7");
  tf_msg_job_logs_req_fini(&lq);
  tf_wire_msg_free(r);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(list_round_trip) {
  tf_msg_job_info js[3] = {job_info("a-1", 0), job_info("b-2", 3), job_info("c-3", 1)};
  js[2].state = "done";
  js[2].mode = "async";
  for (int n = 0; n <= 3; n += 3) {
    tf_wire_msg *r = list_msg(js, n);
    tf_msg_list_jobs_reply b;
    tf_status st;
    ck_assert_msg(tf_msg_list_jobs_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert_int_eq(b.n_jobs, n);
    for (int i = 0; i < n; i++) same_info(&b.jobs[i], &js[i]);
    tf_msg_list_jobs_reply_fini(&b);
  }
}
END_TEST

START_TEST(requests_round_trip) {
  tf_status st;
  tf_wire_writer *w = mt_writer(TF_M_JOB_STATUS, false);
  tf_msg_job_status_req_encode(w, &(tf_msg_job_status_req){.job = "fmnist-mlp-sync-1"});
  tf_wire_msg *r = mt_parse(w);
  tf_msg_job_status_req s;
  ck_assert_msg(tf_msg_job_status_req_decode(r, &s, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_str_eq(s.job, "fmnist-mlp-sync-1");
  tf_msg_job_status_req_fini(&s);
  const char *actions[] = {"pause", "resume", "cancel", "step", "frobnicate"};
  const int64_t steps[] = {0, 0, 0, INT32_MAX, 1};
  for (int i = 0; i < 5; i++) {
    r = control_msg("j", actions[i], steps[i]);
    tf_msg_job_control_req c;
    ck_assert_msg(tf_msg_job_control_req_decode(r, &c, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert_str_eq(c.job, "j");
    ck_assert_str_eq(c.action, actions[i]); /* any str: the master judges */
    ck_assert(c.steps == steps[i]);
    ck_assert_str_eq(c.checkpoint, ""); /* NULL packs as "" */
    tf_msg_job_control_req_fini(&c);
  }
  const char *ckpts[] = {"", "ckpt-300", "run/ckpt/fmnist/ckpt-300"};
  for (int i = 0; i < 3; i++) {
    r = restore_msg("j", ckpts[i]);
    tf_msg_job_control_req c;
    ck_assert_msg(tf_msg_job_control_req_decode(r, &c, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert_str_eq(c.action, "restore");
    ck_assert_str_eq(c.checkpoint, ckpts[i]);
    ck_assert(c.steps == 0);
    tf_msg_job_control_req_fini(&c);
  }
  w = mt_writer(TF_M_JOB_CHECKPOINTS, false);
  tf_msg_job_checkpoints_req_encode(w, &(tf_msg_job_checkpoints_req){.job = "mlp-3"});
  r = mt_parse(w);
  tf_msg_job_checkpoints_req cq;
  ck_assert_msg(tf_msg_job_checkpoints_req_decode(r, &cq, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_str_eq(cq.job, "mlp-3");
  tf_msg_job_checkpoints_req_fini(&cq);
  ck_assert_ptr_null(cq.job);
  const int64_t froms[] = {0, 17, INT64_MAX};
  for (int i = 0; i < 3; i++) {
    w = mt_writer(TF_M_JOB_LOGS, false);
    tf_msg_job_logs_req_encode(w, &(tf_msg_job_logs_req){.job = "j", .from = froms[i]});
    r = mt_parse(w);
    tf_msg_job_logs_req l;
    ck_assert_msg(tf_msg_job_logs_req_decode(r, &l, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert(l.from == froms[i]);
    tf_msg_job_logs_req_fini(&l);
  }
}
END_TEST

START_TEST(logs_reply_round_trip) {
  const char *lines[] = {"step 100 loss 0.6931", "", "evaluation: test_accuracy 0.8912",
                         "tab\there \xc3\xa9"};
  const struct { int64_t first; int n; int64_t next; } cases[] = {
      {0, 4, 4}, {1000, 2, 1002}, {5, 0, 5}, {5, 0, 9}, {0, 1, 7}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tf_wire_msg *r = logs_reply_msg(cases[k].first, lines, cases[k].n, cases[k].next);
    tf_msg_job_logs_reply b;
    tf_status st;
    ck_assert_msg(tf_msg_job_logs_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert(b.first == cases[k].first && b.next == cases[k].next);
    ck_assert_int_eq(b.n_lines, cases[k].n);
    for (int i = 0; i < b.n_lines; i++) ck_assert_str_eq(b.lines[i], lines[i]);
    tf_msg_job_logs_reply_fini(&b);
  }
  /* next before the end of the lines it follows: refused. */
  tf_wire_msg *r = logs_reply_msg(10, lines, 3, 12);
  tf_msg_job_logs_reply b;
  tf_status st;
  ck_assert_int_eq(tf_msg_job_logs_reply_decode(r, &b, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "JobLogs reply: field 'next' is 12, before the end of the 3 "
                           "lines from 10");
  tf_wire_msg_free(r);
  r = logs_reply_msg(INT64_MAX, lines, 1, INT64_MAX);
  ck_assert_int_eq(tf_msg_job_logs_reply_decode(r, &b, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "field 'next'") != NULL, "%s", st.msg);
  tf_wire_msg_free(r);
}
END_TEST

/* ---- caps on the sending side ---------------------------------------------- */

START_TEST(caps_on_encode) {
  int n = TF_MSG_MAX_JOBS + 1;
  tf_msg_job_info *js = calloc((size_t)n, sizeof *js);
  for (int i = 0; i < n; i++) js[i] = job_info("j", 0);
  tf_wire_writer *w = mt_writer(TF_M_LIST_JOBS, true);
  tf_msg_list_jobs_reply_encode(w, &(tf_msg_list_jobs_reply){.n_jobs = n, .jobs = js});
  mt_finish_fails(w, "ListJobs reply: 'jobs' has 1025 entries, over the cap of 1024 "
                     "(TF_MSG_MAX_JOBS)");
  /* Exactly the cap goes. */
  tf_wire_msg *r = list_msg(js, TF_MSG_MAX_JOBS);
  tf_msg_list_jobs_reply l;
  tf_status st;
  ck_assert_msg(tf_msg_list_jobs_reply_decode(r, &l, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(l.n_jobs, TF_MSG_MAX_JOBS);
  tf_msg_list_jobs_reply_fini(&l);
  tf_wire_msg_free(r);
  tf_msg_metric *ms = calloc(TF_MSG_MAX_JOB_METRICS + 1, sizeof *ms);
  for (int i = 0; i <= TF_MSG_MAX_JOB_METRICS; i++) ms[i] = (tf_msg_metric){"m", i};
  tf_msg_job_info j = job_info("j", TF_MSG_MAX_JOB_METRICS + 1);
  j.metrics = ms;
  w = mt_writer(TF_M_JOB_STATUS, true);
  tf_msg_job_info_reply_encode(w, &(tf_msg_job_info_reply){.info = j});
  mt_finish_fails(w, "'metrics' has 65 entries, over the cap of 64 (TF_MSG_MAX_JOB_METRICS)");
  js[3] = j;
  w = mt_writer(TF_M_LIST_JOBS, true);
  tf_msg_list_jobs_reply_encode(w, &(tf_msg_list_jobs_reply){.n_jobs = 5, .jobs = js});
  mt_finish_fails(w, "ListJobs reply: jobs[3]: 'metrics' has 65 entries, over the cap of 64");
  j.n_metrics = TF_MSG_MAX_JOB_METRICS;
  r = info_msg(TF_M_JOB_STATUS, &j);
  tf_msg_job_info_reply b;
  ck_assert_msg(tf_msg_job_info_reply_decode(r, TF_M_JOB_STATUS, &b, &st) == TF_OK, "%s",
                st.msg);
  same_info(&b.info, &j);
  tf_msg_job_info_reply_fini(&b);
  tf_wire_msg_free(r);
  /* replica_steps: over the cap refused when packing. */
  int64_t *rs = calloc(TF_MSG_MAX_JOB_REPLICAS + 1, sizeof *rs);
  j.n_replica_steps = TF_MSG_MAX_JOB_REPLICAS + 1;
  j.replica_steps = rs;
  w = mt_writer(TF_M_JOB_STATUS, true);
  tf_msg_job_info_reply_encode(w, &(tf_msg_job_info_reply){.info = j});
  mt_finish_fails(w, "'replica_steps' has 1025 entries, over the cap of 1024 "
                  "(TF_MSG_MAX_JOB_REPLICAS)");
  free(rs);
  free(ms);
  free(js);
}
END_TEST

START_TEST(caps_on_encode_strings) {
  const char **lines = calloc(TF_MSG_MAX_LOG_LINES + 1, sizeof *lines);
  for (int i = 0; i <= TF_MSG_MAX_LOG_LINES; i++) lines[i] = "x";
  tf_wire_writer *w = mt_writer(TF_M_JOB_LOGS, true);
  tf_msg_job_logs_reply_encode(w, &(tf_msg_job_logs_reply){
                                      .n_lines = TF_MSG_MAX_LOG_LINES + 1, .lines = lines,
                                      .next = TF_MSG_MAX_LOG_LINES + 1});
  mt_finish_fails(w, "JobLogs reply: 'lines' has 4097 entries, over the cap of 4096 "
                     "(TF_MSG_MAX_LOG_LINES)");
  size_t big = TF_MSG_MAX_STR_BYTES + 1;
  char *s = malloc(big + 1);
  memset(s, 'l', big);
  s[big] = '\0';
  lines[2] = s;
  w = mt_writer(TF_M_JOB_LOGS, true);
  tf_msg_job_logs_reply_encode(w, &(tf_msg_job_logs_reply){.n_lines = 3, .lines = lines,
                                                            .next = 3});
  mt_finish_fails(w, "JobLogs reply: 'lines' is 65537 bytes long, over the cap of 65536 "
                     "(TF_MSG_MAX_STR_BYTES)");
  tf_msg_job_info j = job_info("j", 0);
  j.error = s;
  w = mt_writer(TF_M_JOB_CONTROL, true);
  tf_msg_job_info_reply_encode(w, &(tf_msg_job_info_reply){.info = j});
  mt_finish_fails(w, "'error' is 65537 bytes long, over the cap of 65536");
  j = job_info("j", 0);
  j.note = s;
  w = mt_writer(TF_M_JOB_CONTROL, true);
  tf_msg_job_info_reply_encode(w, &(tf_msg_job_info_reply){.info = j});
  mt_finish_fails(w, "JobStatus/JobControl reply: 'note' is 65537 bytes long");
  j = job_info("j", 0);
  j.checkpoint = s;
  w = mt_writer(TF_M_JOB_STATUS, true);
  tf_msg_job_info_reply_encode(w, &(tf_msg_job_info_reply){.info = j});
  mt_finish_fails(w, "'checkpoint' is 65537 bytes long");
  w = mt_writer(TF_M_JOB_CONTROL, false);
  tf_msg_job_control_req_encode(w, &(tf_msg_job_control_req){.job = "j", .action = "restore",
                                                              .checkpoint = s});
  mt_finish_fails(w, "JobControl: 'checkpoint' is 65537 bytes long");
  w = mt_writer(TF_M_JOB_CHECKPOINTS, false);
  tf_msg_job_checkpoints_req_encode(w, &(tf_msg_job_checkpoints_req){.job = s});
  mt_finish_fails(w, "JobCheckpoints: 'job' is 65537 bytes long");
  tf_msg_checkpoint big_name[] = {{s, 1, 2, 3}};
  w = mt_writer(TF_M_JOB_CHECKPOINTS, true);
  tf_msg_job_checkpoints_reply_encode(w, &(tf_msg_job_checkpoints_reply){
                                             .dir = "d", .n_checkpoints = 1,
                                             .checkpoints = big_name});
  mt_finish_fails(w, "JobCheckpoints reply: 'checkpoints' is 65537 bytes long");
  w = mt_writer(TF_M_JOB_CHECKPOINTS, true);
  tf_msg_job_checkpoints_reply_encode(w, &(tf_msg_job_checkpoints_reply){.dir = s});
  mt_finish_fails(w, "JobCheckpoints reply: 'dir' is 65537 bytes long");
  w = mt_writer(TF_M_SUBMIT_JOB, false);
  tf_msg_submit_job_req_encode(w, &(tf_msg_submit_job_req){.spec = "a", .spec_len = 1,
                                                            .name = s});
  mt_finish_fails(w, "SubmitJob: 'name' is 65537 bytes long");
  w = mt_writer(TF_M_JOB_CONTROL, false);
  tf_msg_job_control_req_encode(w, &(tf_msg_job_control_req){.job = s, .action = "pause"});
  mt_finish_fails(w, "JobControl: 'job' is 65537 bytes long");
  free(s);
  free(lines);
}
END_TEST

/* ---- float fields ---------------------------------------------------------- */

/* A JobStatus reply {job, name, state, key: <packed by put>} decoded. */
static tf_code decode_with(const char *key, void (*put)(msgpack_packer *pk),
                           tf_msg_job_info_reply *b, tf_status *st) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 4);
  pack_s(&pk, "job");
  pack_s(&pk, "j");
  pack_s(&pk, "name");
  pack_s(&pk, "n");
  pack_s(&pk, "state");
  pack_s(&pk, "running");
  pack_s(&pk, key);
  put(&pk);
  tf_wire_msg *r = raw_msg(TF_M_JOB_STATUS, true, &sb);
  tf_code c = tf_msg_job_info_reply_decode(r, TF_M_JOB_STATUS, b, st);
  tf_wire_msg_free(r);
  msgpack_sbuffer_destroy(&sb);
  return c;
}

static void put_f32(msgpack_packer *pk) { msgpack_pack_float(pk, 1.5f); }
static void put_neg_int(msgpack_packer *pk) { msgpack_pack_int64(pk, -3); }
static void put_big_uint(msgpack_packer *pk) { msgpack_pack_uint64(pk, UINT64_MAX); }
static void put_nan(msgpack_packer *pk) { msgpack_pack_double(pk, NAN); }
static void put_neg(msgpack_packer *pk) { msgpack_pack_double(pk, -0.5); }
static void put_str(msgpack_packer *pk) { pack_s(pk, "1.5"); }
static void put_bool(msgpack_packer *pk) { msgpack_pack_true(pk); }
static void put_metric_str(msgpack_packer *pk) {
  msgpack_pack_array(pk, 1);
  msgpack_pack_map(pk, 2);
  pack_s(pk, "name");
  pack_s(pk, "acc");
  pack_s(pk, "value");
  pack_s(pk, "high");
}
static void put_metric_f32(msgpack_packer *pk) {
  msgpack_pack_array(pk, 1);
  msgpack_pack_map(pk, 2);
  pack_s(pk, "value");
  msgpack_pack_float(pk, 0.25f);
  pack_s(pk, "name");
  pack_s(pk, "acc");
}

START_TEST(float_fields) {
  tf_msg_job_info_reply b;
  tf_status st;
  ck_assert_msg(decode_with("loss", put_f32, &b, &st) == TF_OK, "%s", st.msg);
  same_f64(b.info.loss, 1.5);
  tf_msg_job_info_reply_fini(&b);
  ck_assert_msg(decode_with("loss", put_neg_int, &b, &st) == TF_OK, "%s", st.msg);
  same_f64(b.info.loss, -3.0);
  tf_msg_job_info_reply_fini(&b);
  ck_assert_msg(decode_with("steps_per_s", put_big_uint, &b, &st) == TF_OK, "%s", st.msg);
  same_f64(b.info.steps_per_s, 18446744073709551615.0);
  tf_msg_job_info_reply_fini(&b);
  ck_assert_msg(decode_with("loss", put_nan, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert(isnan(b.info.loss));
  tf_msg_job_info_reply_fini(&b);
  ck_assert_msg(decode_with("metrics", put_metric_f32, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(b.info.n_metrics, 1);
  ck_assert_str_eq(b.info.metrics[0].name, "acc");
  same_f64(b.info.metrics[0].value, 0.25);
  tf_msg_job_info_reply_fini(&b);
  const struct {
    const char *key;
    void (*put)(msgpack_packer *);
    const char *want;
  } bad[] = {
      {"steps_per_s", put_nan, "JobStatus reply: field 'steps_per_s' is NaN, not a number "
                               "in [0, inf]"},
      {"steps_per_s", put_neg, "JobStatus reply: field 'steps_per_s' is -0.5, not in [0, inf]"},
      {"steps_per_s", put_neg_int, "field 'steps_per_s' is -3, not in [0, inf]"},
      {"loss", put_str, "JobStatus reply: field 'loss' is a str, not a number"},
      {"loss", put_bool, "JobStatus reply: field 'loss' is a bool, not a number"},
      {"metrics", put_metric_str, "JobStatus reply: metrics[0]: field 'value' is a str, not "
                                  "a number"},
      {"step", put_f32, "JobStatus reply: field 'step' is a float, not an int"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&b, 0x77, sizeof b);
    ck_assert_int_eq(decode_with(bad[i].key, bad[i].put, &b, &st), TF_INVALID_ARGUMENT);
    ck_assert_msg(strcmp(st.msg, bad[i].want) == 0 || strstr(st.msg, bad[i].want) != NULL,
                  "case %zu: '%s' does not say '%s'", i, st.msg, bad[i].want);
    ck_assert(msg_fuzz_is_zero(&b, sizeof b));
  }
}
END_TEST

/* ---- the documented bytes -------------------------------------------------- */

/* A job's map as docs/wire.md lists it; with_ckpt false: as an older
 * master packs it, without recoveries, checkpoint, checkpoint_step, note. */
static void pack_info_bytes(msgpack_packer *pk, const tf_msg_job_info *j, bool with_ckpt) {
  msgpack_pack_map(pk, with_ckpt ? 18 : 14);
  pack_s(pk, "job");
  pack_s(pk, j->job);
  pack_s(pk, "name");
  pack_s(pk, j->name);
  pack_s(pk, "state");
  pack_s(pk, j->state);
  pack_s(pk, "mode");
  pack_s(pk, j->mode);
  pack_s(pk, "workers");
  msgpack_pack_int64(pk, j->workers);
  pack_s(pk, "step");
  msgpack_pack_int64(pk, j->step);
  pack_s(pk, "steps");
  msgpack_pack_int64(pk, j->steps);
  pack_s(pk, "loss");
  msgpack_pack_double(pk, j->loss);
  pack_s(pk, "steps_per_s");
  msgpack_pack_double(pk, j->steps_per_s);
  pack_s(pk, "elapsed_ms");
  msgpack_pack_int64(pk, j->elapsed_ms);
  pack_s(pk, "submitted_ms");
  msgpack_pack_int64(pk, j->submitted_ms);
  pack_s(pk, "error");
  pack_s(pk, j->error);
  pack_s(pk, "metrics");
  msgpack_pack_array(pk, (size_t)j->n_metrics);
  for (int i = 0; i < j->n_metrics; i++) {
    msgpack_pack_map(pk, 2);
    pack_s(pk, "name");
    pack_s(pk, j->metrics[i].name);
    pack_s(pk, "value");
    msgpack_pack_double(pk, j->metrics[i].value);
  }
  pack_s(pk, "replica_steps");
  msgpack_pack_array(pk, (size_t)j->n_replica_steps);
  for (int i = 0; i < j->n_replica_steps; i++) {
    msgpack_pack_int64(pk, j->replica_steps[i]);
  }
  if (!with_ckpt) {
    return;
  }
  pack_s(pk, "recoveries");
  msgpack_pack_int64(pk, j->recoveries);
  pack_s(pk, "checkpoint");
  pack_s(pk, j->checkpoint);
  pack_s(pk, "checkpoint_step");
  msgpack_pack_int64(pk, j->checkpoint_step);
  pack_s(pk, "note");
  pack_s(pk, j->note);
}

START_TEST(bodies_are_the_documented_bytes) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  tf_msg_job_info j = job_info("fmnist-mlp-sync-1", 2);
  j.note = "ckpt";
  pack_info_bytes(&pk, &j, true);
  tf_wire_msg *r = info_msg(TF_M_JOB_STATUS, &j);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 1);
  pack_s(&pk, "jobs");
  msgpack_pack_array(&pk, 1);
  pack_info_bytes(&pk, &j, true);
  r = list_msg(&j, 1);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 2);
  pack_s(&pk, "spec");
  msgpack_pack_bin(&pk, 3);
  msgpack_pack_bin_body(&pk, "a:1", 3);
  pack_s(&pk, "name");
  pack_s(&pk, "j.yaml");
  r = submit_msg("a:1", 3, "j.yaml");
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 4);
  pack_s(&pk, "job");
  pack_s(&pk, "j");
  pack_s(&pk, "action");
  pack_s(&pk, "step");
  pack_s(&pk, "steps");
  msgpack_pack_int64(&pk, 10);
  pack_s(&pk, "checkpoint");
  pack_s(&pk, "");
  r = control_msg("j", "step", 10);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 4);
  pack_s(&pk, "job");
  pack_s(&pk, "j");
  pack_s(&pk, "action");
  pack_s(&pk, "restore");
  pack_s(&pk, "steps");
  msgpack_pack_int64(&pk, 0);
  pack_s(&pk, "checkpoint");
  pack_s(&pk, "ckpt-300");
  r = restore_msg("j", "ckpt-300");
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 2);
  pack_s(&pk, "dir");
  pack_s(&pk, "run/ckpt");
  pack_s(&pk, "checkpoints");
  msgpack_pack_array(&pk, 2);
  for (int i = 0; i < 2; i++) {
    msgpack_pack_map(&pk, 4);
    pack_s(&pk, "name");
    pack_s(&pk, ckpts3[i].name);
    pack_s(&pk, "step");
    msgpack_pack_int64(&pk, ckpts3[i].step);
    pack_s(&pk, "time_ms");
    msgpack_pack_int64(&pk, ckpts3[i].time_ms);
    pack_s(&pk, "bytes");
    msgpack_pack_int64(&pk, ckpts3[i].bytes);
  }
  r = ckpts_reply_msg("run/ckpt", ckpts3, 2);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 1);
  pack_s(&pk, "job");
  pack_s(&pk, "j");
  tf_wire_writer *w = mt_writer(TF_M_JOB_CHECKPOINTS, false);
  tf_msg_job_checkpoints_req_encode(w, &(tf_msg_job_checkpoints_req){.job = "j"});
  r = mt_parse(w);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  const char *lines[] = {"a", "b"};
  msgpack_pack_map(&pk, 3);
  pack_s(&pk, "first");
  msgpack_pack_int64(&pk, 3);
  pack_s(&pk, "lines");
  msgpack_pack_array(&pk, 2);
  pack_s(&pk, "a");
  pack_s(&pk, "b");
  pack_s(&pk, "next");
  msgpack_pack_int64(&pk, 5);
  r = logs_reply_msg(3, lines, 2, 5);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* ---- hostile bodies -------------------------------------------------------- */

START_TEST(submit_and_requests_hostile) {
  static const mt_case sub[] = {
      {"spec", MT_DEL, 0, "SubmitJob: field 'spec' is missing"},
      {"name", MT_DEL, 0, "SubmitJob: field 'name' is missing"},
      {"spec", MT_STR, 3, "SubmitJob: field 'spec' is a str, not binary"},
      {"name", MT_BIN, 0, "SubmitJob: field 'name' is a bin, not a str"},
      {"name", MT_STRNUL, 0, "SubmitJob: field 'name' holds a NUL byte"},
      {"name", MT_STR, TF_MSG_MAX_STR_BYTES + 1, "SubmitJob: field 'name' is 65537 bytes"},
      {"spec", MT_DUP, 0, "SubmitJob: field 'spec' appears twice"},
      {"", MT_INTKEY, 0, "SubmitJob: key 2 is a int, not a str"},
  };
  mt_hostile(&submit_ops, submit_msg("a: 1\n", 5, "j.yaml"), sub, 8);
  tf_wire_writer *w = mt_writer(TF_M_SUBMIT_JOB, true);
  tf_msg_submit_job_reply_encode(w, &(tf_msg_submit_job_reply){.job = "j-1"});
  static const mt_case subr[] = {
      {"job", MT_DEL, 0, "SubmitJob reply: field 'job' is missing"},
      {"job", MT_INT, 4, "SubmitJob reply: field 'job' is a int, not a str"},
  };
  mt_hostile(&submit_reply_ops, mt_parse(w), subr, 2);
  w = mt_writer(TF_M_JOB_STATUS, false);
  tf_msg_job_status_req_encode(w, &(tf_msg_job_status_req){.job = "j-1"});
  static const mt_case stq[] = {
      {"job", MT_DEL, 0, "JobStatus: field 'job' is missing"},
      {"job", MT_NIL, 0, "JobStatus: field 'job' is a nil, not a str"},
  };
  mt_hostile(&status_ops, mt_parse(w), stq, 2);
  static const mt_case ctl[] = {
      {"job", MT_DEL, 0, "JobControl: field 'job' is missing"},
      {"action", MT_DEL, 0, "JobControl: field 'action' is missing"},
      {"action", MT_TRUE, 0, "JobControl: field 'action' is a bool, not a str"},
      {"steps", MT_INT, -1, "JobControl: field 'steps' is -1, not in [0, 2147483647]"},
      {"steps", MT_INT, 1LL << 31, "field 'steps' is 2147483648, not in [0, 2147483647]"},
      {"steps", MT_STR, 1, "JobControl: field 'steps' is a str, not an int"},
      {"checkpoint", MT_INT, 300, "JobControl: field 'checkpoint' is a int, not a str"},
      {"checkpoint", MT_STRNUL, 0, "JobControl: field 'checkpoint' holds a NUL byte"},
      {"checkpoint", MT_DUP, 0, "JobControl: field 'checkpoint' appears twice"},
  };
  mt_hostile(&control_ops, control_msg("j-1", "step", 5), ctl, 9);
  static const mt_case rst[] = {
      {"checkpoint", MT_NIL, 0, "JobControl: field 'checkpoint' is a nil, not a str"},
      {"checkpoint", MT_STR, TF_MSG_MAX_STR_BYTES + 1,
       "JobControl: field 'checkpoint' is 65537 bytes"},
      {"action", MT_DEL, 0, "JobControl: field 'action' is missing"},
  };
  mt_hostile(&control_ops, restore_msg("j-1", "ckpt-300"), rst, 3);
  w = mt_writer(TF_M_JOB_CHECKPOINTS, false);
  tf_msg_job_checkpoints_req_encode(w, &(tf_msg_job_checkpoints_req){.job = "j-1"});
  static const mt_case ckq[] = {
      {"job", MT_DEL, 0, "JobCheckpoints: field 'job' is missing"},
      {"job", MT_ARRAY, 1, "JobCheckpoints: field 'job' is a array, not a str"},
      {"job", MT_DUP, 0, "JobCheckpoints: field 'job' appears twice"},
  };
  mt_hostile(&ckpts_ops, mt_parse(w), ckq, 3);
  w = mt_writer(TF_M_JOB_LOGS, false);
  tf_msg_job_logs_req_encode(w, &(tf_msg_job_logs_req){.job = "j-1", .from = 3});
  static const mt_case lq[] = {
      {"job", MT_DEL, 0, "JobLogs: field 'job' is missing"},
      {"from", MT_INT, -2, "JobLogs: field 'from' is -2, not in [0, 9223372036854775807]"},
      {"from", MT_HUGE, 0, "JobLogs: field 'from' is 18446744073709551615, not in [0,"},
      {"from", MT_NIL, 0, "JobLogs: field 'from' is a nil, not an int"},
  };
  mt_hostile(&logs_ops, mt_parse(w), lq, 4);
}
END_TEST

START_TEST(info_hostile) {
  tf_msg_job_info j = job_info("j-1", 3);
  static const mt_case info[] = {
      {"job", MT_DEL, 0, "JobStatus reply: field 'job' is missing"},
      {"name", MT_DEL, 0, "JobStatus reply: field 'name' is missing"},
      {"state", MT_DEL, 0, "JobStatus reply: field 'state' is missing"},
      {"state", MT_INT, 3, "JobStatus reply: field 'state' is a int, not a str"},
      {"mode", MT_ARRAY, 0, "JobStatus reply: field 'mode' is a array, not a str"},
      {"error", MT_STRNUL, 0, "JobStatus reply: field 'error' holds a NUL byte"},
      {"workers", MT_INT, -1, "field 'workers' is -1, not in [0, 2147483647]"},
      {"workers", MT_INT, 1LL << 31, "field 'workers' is 2147483648, not in [0,"},
      {"step", MT_INT, -5, "JobStatus reply: field 'step' is -5, not in [0,"},
      {"steps", MT_HUGE, 0, "field 'steps' is 18446744073709551615, not in [0,"},
      {"elapsed_ms", MT_INT, -1, "field 'elapsed_ms' is -1, not in [0,"},
      {"submitted_ms", MT_STR, 2, "field 'submitted_ms' is a str, not an int"},
      {"loss", MT_NIL, 0, "JobStatus reply: field 'loss' is a nil, not a number"},
      {"steps_per_s", MT_INT, -1, "field 'steps_per_s' is -1, not in [0, inf]"},
      {"metrics", MT_MAP, 0, "JobStatus reply: field 'metrics' is a map, not an array"},
      {"metrics", MT_ARRAY, TF_MSG_MAX_JOB_METRICS + 1,
       "JobStatus reply: 'metrics' has 65 entries, over the cap of 64 (TF_MSG_MAX_JOB_METRICS)"},
      {"metrics.1", MT_STR, 1, "JobStatus reply: metrics[1] is a str, not a map"},
      {"metrics.2.name", MT_DEL, 0, "JobStatus reply: metrics[2]: field 'name' is missing"},
      {"metrics.0.value", MT_DEL, 0, "JobStatus reply: metrics[0]: field 'value' is missing"},
      {"metrics.0.value", MT_TRUE, 0, "metrics[0]: field 'value' is a bool, not a number"},
      {"metrics.0.name", MT_DUP, 0, "JobStatus reply: metrics[0]: field 'name' appears twice"},
      {"metrics.0.", MT_INTKEY, 0, "JobStatus reply: metrics[0]: key 2 is a int, not a str"},
      {"job", MT_DUP, 0, "JobStatus reply: field 'job' appears twice"},
      {"recoveries", MT_INT, -1, "JobStatus reply: field 'recoveries' is -1, not in [0, "
                                 "2147483647]"},
      {"recoveries", MT_INT, 1LL << 31, "field 'recoveries' is 2147483648, not in [0,"},
      {"checkpoint", MT_INT, 7, "JobStatus reply: field 'checkpoint' is a int, not a str"},
      {"checkpoint_step", MT_INT, -1, "JobStatus reply: field 'checkpoint_step' is -1, not "
                                      "in [0,"},
      {"checkpoint_step", MT_STR, 3, "field 'checkpoint_step' is a str, not an int"},
      {"note", MT_STRNUL, 0, "JobStatus reply: field 'note' holds a NUL byte"},
      {"note", MT_DUP, 0, "JobStatus reply: field 'note' appears twice"},
  };
  int n = (int)(sizeof info / sizeof info[0]);
  mt_hostile(&info_status_ops, info_msg(TF_M_JOB_STATUS, &j), info, n);
  static const mt_case ctl[] = {
      {"state", MT_DEL, 0, "JobControl reply: field 'state' is missing"},
      {"metrics.1.value", MT_STR, 1, "JobControl reply: metrics[1]: field 'value' is a str"},
  };
  mt_hostile(&info_control_ops, info_msg(TF_M_JOB_CONTROL, &j), ctl, 2);
  tf_msg_job_info js[] = {job_info("a", 0), j};
  static const mt_case list[] = {
      {"jobs", MT_DEL, 0, "ListJobs reply: field 'jobs' is missing"},
      {"jobs", MT_STR, 1, "ListJobs reply: field 'jobs' is a str, not an array"},
      {"jobs", MT_ARRAY, TF_MSG_MAX_JOBS + 1,
       "ListJobs reply: 'jobs' has 1025 entries, over the cap of 1024 (TF_MSG_MAX_JOBS)"},
      {"jobs.1", MT_NIL, 0, "ListJobs reply: jobs[1] is a nil, not a map"},
      {"jobs.1.job", MT_DEL, 0, "ListJobs reply: jobs[1]: field 'job' is missing"},
      {"jobs.0.state", MT_INT, 0, "ListJobs reply: jobs[0]: field 'state' is a int"},
      {"jobs.1.metrics.2.value", MT_STR, 1, "ListJobs reply: jobs[1]: metrics[2]: field "
                                            "'value' is a str, not a number"},
      {"jobs.1.metrics", MT_ARRAY, 65, "ListJobs reply: jobs[1]: 'metrics' has 65 entries"},
      {"jobs.0.step", MT_INT, -1, "ListJobs reply: jobs[0]: field 'step' is -1, not in"},
      {"jobs.1.note", MT_TRUE, 0, "ListJobs reply: jobs[1]: field 'note' is a bool, not a "
                                  "str"},
  };
  n = (int)(sizeof list / sizeof list[0]);
  mt_hostile(&list_ops, list_msg(js, 2), list, n);
}
END_TEST

START_TEST(logs_reply_hostile) {
  const char *lines[] = {"one", "two", "three"};
  static const mt_case lr[] = {
      {"first", MT_DEL, 0, "JobLogs reply: field 'first' is missing"},
      {"lines", MT_DEL, 0, "JobLogs reply: field 'lines' is missing"},
      {"next", MT_DEL, 0, "JobLogs reply: field 'next' is missing"},
      {"first", MT_INT, -1, "JobLogs reply: field 'first' is -1, not in [0,"},
      {"next", MT_STR, 1, "JobLogs reply: field 'next' is a str, not an int"},
      {"lines", MT_ARRAY, TF_MSG_MAX_LOG_LINES + 1,
       "JobLogs reply: 'lines' has 4097 entries, over the cap of 4096 (TF_MSG_MAX_LOG_LINES)"},
      {"lines.1", MT_INT, 2, "JobLogs reply: lines[1] is a int, not a str"},
      {"lines.2", MT_STRNUL, 0, "JobLogs reply: lines[2] holds a NUL byte"},
      {"lines.0", MT_STR, TF_MSG_MAX_STR_BYTES + 1, "JobLogs reply: lines[0] is 65537 bytes"},
      {"next", MT_INT, 12, "JobLogs reply: field 'next' is 12, before the end of the 3 lines "
                           "from 10"},
  };
  mt_hostile(&logs_reply_ops, logs_reply_msg(10, lines, 3, 13), lr, 10);
}
END_TEST

/* ---- JobCheckpoints, and a job from an older master ------------------------ */

/* A body packed by an older master (no recoveries, checkpoint,
 * checkpoint_step, note) decodes, those defaulting to 0 and "". */
START_TEST(info_from_older_peer) {
  tf_msg_job_info j = job_info("fmnist-mlp-sync-1", 3);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  pack_info_bytes(&pk, &j, false);
  tf_wire_msg *r = raw_msg(TF_M_JOB_STATUS, true, &sb);
  tf_msg_job_info_reply b;
  tf_status st;
  ck_assert_msg(tf_msg_job_info_reply_decode(r, TF_M_JOB_STATUS, &b, &st) == TF_OK, "%s",
                st.msg);
  tf_wire_msg_free(r);
  j.recoveries = 0;
  j.checkpoint = "";
  j.checkpoint_step = 0;
  same_info(&b.info, &j);
  tf_msg_job_info_reply_fini(&b);
  /* A list of them too. */
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 1);
  pack_s(&pk, "jobs");
  msgpack_pack_array(&pk, 2);
  pack_info_bytes(&pk, &j, false);
  pack_info_bytes(&pk, &j, false);
  r = raw_msg(TF_M_LIST_JOBS, true, &sb);
  tf_msg_list_jobs_reply l;
  ck_assert_msg(tf_msg_list_jobs_reply_decode(r, &l, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_int_eq(l.n_jobs, 2);
  same_info(&l.jobs[1], &j);
  tf_msg_list_jobs_reply_fini(&l);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

static void same_ckpts(const tf_msg_job_checkpoints_reply *b, const char *dir,
                       const tf_msg_checkpoint *cs, int n) {
  ck_assert_str_eq(b->dir, dir);
  ck_assert_int_eq(b->n_checkpoints, n);
  for (int i = 0; i < n; i++) {
    ck_assert_str_eq(b->checkpoints[i].name, cs[i].name);
    ck_assert(b->checkpoints[i].step == cs[i].step);
    ck_assert(b->checkpoints[i].time_ms == cs[i].time_ms);
    ck_assert(b->checkpoints[i].bytes == cs[i].bytes);
  }
}

START_TEST(checkpoints_round_trip) {
  tf_msg_checkpoint extremes[] = {{"", 0, 0, 0}, {"ckpt-9223372036854775807", INT64_MAX,
                                                  INT64_MAX, INT64_MAX}};
  const struct { const char *dir; const tf_msg_checkpoint *cs; int n; } cases[] = {
      {"run/ckpt/fmnist", ckpts3, 0}, {"run/ckpt/fmnist", ckpts3, 3},
      {"/var/lib/tf/\xc3\xa9", extremes, 2}, {"", ckpts3, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tf_wire_msg *r = ckpts_reply_msg(cases[k].dir, cases[k].cs, cases[k].n);
    tf_msg_job_checkpoints_reply b;
    tf_status st;
    ck_assert_msg(tf_msg_job_checkpoints_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    same_ckpts(&b, cases[k].dir, cases[k].cs, cases[k].n);
    tf_msg_job_checkpoints_reply_fini(&b);
    ck_assert_ptr_null(b.checkpoints);
  }
  /* A request's body is not a reply's, nor another method's. */
  tf_wire_msg *r = ckpts_reply_msg("d", ckpts3, 1);
  tf_msg_job_checkpoints_req q;
  tf_status st;
  ck_assert_int_eq(tf_msg_job_checkpoints_req_decode(r, &q, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "JobCheckpoints") != NULL, "%s", st.msg);
  tf_wire_msg_free(r);
  r = logs_reply_msg(0, NULL, 0, 0);
  tf_msg_job_checkpoints_reply b;
  ck_assert_int_eq(tf_msg_job_checkpoints_reply_decode(r, &b, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "JobCheckpoints reply: the message is a JobLogs reply");
  tf_wire_msg_free(r);
}
END_TEST

/* TF_MSG_MAX_CHECKPOINTS entries go; one more fails tf_wire_finish naming
 * the field and the cap, and is refused when it arrives anyway. */
START_TEST(checkpoints_cap) {
  int n = TF_MSG_MAX_CHECKPOINTS + 1;
  tf_msg_checkpoint *cs = calloc((size_t)n, sizeof *cs);
  for (int i = 0; i < n; i++) cs[i] = (tf_msg_checkpoint){"ckpt-1", i, 1000 + i, 10 * i};
  tf_wire_writer *w = mt_writer(TF_M_JOB_CHECKPOINTS, true);
  tf_msg_job_checkpoints_reply_encode(w, &(tf_msg_job_checkpoints_reply){
                                             .dir = "d", .n_checkpoints = n,
                                             .checkpoints = cs});
  mt_finish_fails(w, "JobCheckpoints reply: 'checkpoints' has 1001 entries, over the cap of "
                     "1000 (TF_MSG_MAX_CHECKPOINTS)");
  tf_wire_msg *r = ckpts_reply_msg("d", cs, n - 1);
  tf_msg_job_checkpoints_reply b;
  tf_status st;
  ck_assert_msg(tf_msg_job_checkpoints_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  same_ckpts(&b, "d", cs, n - 1);
  tf_msg_job_checkpoints_reply_fini(&b);
  tf_wire_msg_free(r);
  free(cs);
}
END_TEST

START_TEST(checkpoints_reply_hostile) {
  static const mt_case cr[] = {
      {"dir", MT_DEL, 0, "JobCheckpoints reply: field 'dir' is missing"},
      {"checkpoints", MT_DEL, 0, "JobCheckpoints reply: field 'checkpoints' is missing"},
      {"dir", MT_NIL, 0, "JobCheckpoints reply: field 'dir' is a nil, not a str"},
      {"dir", MT_STRNUL, 0, "JobCheckpoints reply: field 'dir' holds a NUL byte"},
      {"checkpoints", MT_MAP, 0, "JobCheckpoints reply: field 'checkpoints' is a map, not "
                                 "an array"},
      {"checkpoints", MT_ARRAY, TF_MSG_MAX_CHECKPOINTS + 1,
       "JobCheckpoints reply: 'checkpoints' has 1001 entries, over the cap of 1000 "
       "(TF_MSG_MAX_CHECKPOINTS)"},
      {"checkpoints.1", MT_STR, 2, "JobCheckpoints reply: checkpoints[1] is a str, not a "
                                   "map"},
      {"checkpoints.0.name", MT_DEL, 0, "JobCheckpoints reply: checkpoints[0]: field "
                                        "'name' is missing"},
      {"checkpoints.2.step", MT_DEL, 0, "checkpoints[2]: field 'step' is missing"},
      {"checkpoints.1.time_ms", MT_DEL, 0, "checkpoints[1]: field 'time_ms' is missing"},
      {"checkpoints.1.bytes", MT_DEL, 0, "checkpoints[1]: field 'bytes' is missing"},
      {"checkpoints.0.name", MT_INT, 1, "checkpoints[0]: field 'name' is a int, not a str"},
      {"checkpoints.0.step", MT_INT, -1, "JobCheckpoints reply: checkpoints[0]: field "
                                         "'step' is -1, not in [0, 9223372036854775807]"},
      {"checkpoints.2.time_ms", MT_HUGE, 0, "checkpoints[2]: field 'time_ms' is "
                                            "18446744073709551615, not in [0,"},
      {"checkpoints.2.bytes", MT_STR, 4, "checkpoints[2]: field 'bytes' is a str, not an "
                                         "int"},
      {"checkpoints.1.bytes", MT_DUP, 0, "checkpoints[1]: field 'bytes' appears twice"},
      {"checkpoints.1.", MT_INTKEY, 0, "checkpoints[1]: key 4 is a int, not a str"},
      {"", MT_INTKEY, 0, "JobCheckpoints reply: key 2 is a int, not a str"},
  };
  int n = (int)(sizeof cr / sizeof cr[0]);
  mt_hostile(&ckpts_reply_ops, ckpts_reply_msg("run/ckpt", ckpts3, 3), cr, n);
}
END_TEST

START_TEST(byte_flips) {
  tt_rng_reseed(tt_seed() ^ 0xf1);
  int n = 300;
  tf_msg_job_info j = job_info("fmnist-mlp-sync-1", 3);
  ck_assert_int_gt(mt_flips(&info_status_ops, info_msg(TF_M_JOB_STATUS, &j), n), 0);
  mt_flips(&info_control_ops, info_msg(TF_M_JOB_CONTROL, &j), n);
  tf_msg_job_info js[] = {j, job_info("b", 0)};
  mt_flips(&list_ops, list_msg(js, 2), n);
  mt_flips(&submit_ops, submit_msg("a: 1\nb: [2]\n", 12, "j.yaml"), n);
  mt_flips(&control_ops, control_msg("j", "step", 3), n);
  const char *lines[] = {"one", "", "three"};
  mt_flips(&logs_reply_ops, logs_reply_msg(4, lines, 3, 7), n);
  mt_flips(&control_ops, restore_msg("j", "ckpt-300"), n);
  ck_assert_int_gt(mt_flips(&ckpts_reply_ops, ckpts_reply_msg("run/ckpt", ckpts3, 3), n), 0);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("msg_job");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, submit_round_trip);
  tcase_add_test(tc, submit_spec_cap);
  tcase_add_test(tc, info_round_trip);
  tcase_add_test(tc, nan_loss_round_trip);
  tcase_add_test(tc, info_defaults);
  tcase_add_test(tc, list_round_trip);
  tcase_add_test(tc, requests_round_trip);
  tcase_add_test(tc, logs_reply_round_trip);
  tcase_add_test(tc, caps_on_encode);
  tcase_add_test(tc, caps_on_encode_strings);
  tcase_add_test(tc, float_fields);
  tcase_add_test(tc, bodies_are_the_documented_bytes);
  tcase_add_test(tc, submit_and_requests_hostile);
  tcase_add_test(tc, info_hostile);
  tcase_add_test(tc, logs_reply_hostile);
  tcase_add_test(tc, info_from_older_peer);
  tcase_add_test(tc, checkpoints_round_trip);
  tcase_add_test(tc, checkpoints_cap);
  tcase_add_test(tc, checkpoints_reply_hostile);
  tcase_add_test(tc, byte_flips);
  suite_add_tcase(s, tc);
  return s;
}
