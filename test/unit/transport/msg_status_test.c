/* msg_status_test.c: the status replies (msg_status.c): GetStatus in its
 * worker and master forms (and devices given as plain names, and with and
 * without the traffic and memory counters older peers leave out), ListDevices
 * and ClusterStatus with their optional fields' defaults: round trips,
 * the exact body bytes docs/wire.md lists, hostile bodies refused naming
 * the field, and seeded byte flips through the fuzz harness's checks. */
#include "test/unit/transport/msg_testlib.h"

MSG_OPS(status_ops, tf_msg_get_status_reply, TF_M_GET_STATUS, true)
MSG_OPS(list_ops, tf_msg_list_devices_reply, TF_M_LIST_DEVICES, true)
MSG_OPS(cluster_ops, tf_msg_cluster_status_reply, TF_M_CLUSTER_STATUS, true)

#define DEV "/job:worker/replica:0/task:1/device:CPU:0"

static tf_msg_get_status_reply worker_status(const tf_msg_status_device *devs, int n) {
  return (tf_msg_get_status_reply){
      .job = "worker", .task = 1, .incarnation = 0xfedcba9876543210ULL, .n_devices = n,
      .devices = (tf_msg_status_device *)devs, .has = TF_MSG_STATUS_WORKER,
      .running_steps = 2, .step_tables = 3, .buffered_bytes = 1LL << 40, .graphs = 4,
      .steps_run = UINT64_MAX};
}

static tf_wire_msg *status_msg(const tf_msg_get_status_reply *b) {
  tf_wire_writer *w = mt_writer(TF_M_GET_STATUS, true);
  tf_msg_get_status_reply_encode(w, b);
  return mt_parse(w);
}

static tf_wire_msg *list_msg(const tf_msg_device *ds, int n) {
  tf_wire_writer *w = mt_writer(TF_M_LIST_DEVICES, true);
  tf_msg_list_devices_reply_encode(w, &(tf_msg_list_devices_reply){n, (tf_msg_device *)ds});
  return mt_parse(w);
}

static const char *devs1[] = {DEV};
static const tf_msg_task_status tasks3[] = {
    {"master", 0, "tcp://127.0.0.1:2220", true, 5, 0, NULL, 0, ""},
    {"worker", 1, "tcp://127.0.0.1:2222", true, 7, 1, devs1, 12, "", "job-1@40 job-2@7"},
    {"ps", 0, "tcp://127.0.0.1:2223", false, 0, 0, NULL, -1, "no answer within 500 ms"}};

static tf_wire_msg *cluster_msg(const tf_msg_task_status *ts, int n) {
  tf_wire_writer *w = mt_writer(TF_M_CLUSTER_STATUS, true);
  tf_msg_cluster_status_reply_encode(w, &(tf_msg_cluster_status_reply){
                                            n, (tf_msg_task_status *)ts});
  return mt_parse(w);
}

START_TEST(get_status_round_trip) {
  tf_msg_status_device devs[] = {{DEV, "CPU", 42}, {"/job:worker/replica:0/task:1/device:CPU:1", "", 0}};
  tf_msg_get_status_reply in = worker_status(devs, 2);
  tf_wire_msg *r = status_msg(&in);
  tf_msg_get_status_reply b;
  tf_status st;
  ck_assert_msg(tf_msg_get_status_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_str_eq(b.job, "worker");
  ck_assert_int_eq(b.task, 1);
  ck_assert(b.incarnation == in.incarnation);
  ck_assert_int_eq(b.n_devices, 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_str_eq(b.devices[i].name, devs[i].name);
    ck_assert_str_eq(b.devices[i].type, devs[i].type);
    ck_assert(b.devices[i].incarnation == devs[i].incarnation);
  }
  ck_assert_uint_eq(b.has, TF_MSG_STATUS_WORKER);
  ck_assert(b.running_steps == 2 && b.step_tables == 3 && b.buffered_bytes == 1LL << 40 &&
            b.graphs == 4 && b.steps_run == UINT64_MAX && b.sessions == 0);
  ck_assert_str_eq(b.tensor_stream, ""); /* not sent: "" */
  tf_msg_get_status_reply_fini(&b);
  /* With a tensor stream: carried; "" is not packed. */
  in.tensor_stream = "tcp://127.0.0.1:40123";
  r = status_msg(&in);
  ck_assert_msg(tf_msg_get_status_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(b.tensor_stream, "tcp://127.0.0.1:40123");
  tf_msg_get_status_reply_fini(&b);
  ck_assert_uint_eq(r->body.via.map.size, 9 + 1);
  tf_wire_msg_free(r);
  in.tensor_stream = "";
  r = status_msg(&in);
  ck_assert_uint_eq(r->body.via.map.size, 9);
  tf_wire_msg_free(r);
  /* Not a str: refused, naming the field. */
  tf_wire_writer *w = mt_writer(TF_M_GET_STATUS, true);
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map bm;
  tf__mp_map_begin(&bm, pk, 5);
  tf__mp_map_key(&bm, "job");
  tf__msgpack_pack_cstr(pk, "worker");
  tf__mp_map_key(&bm, "task");
  msgpack_pack_int(pk, 1);
  tf__mp_map_key(&bm, "incarnation");
  msgpack_pack_uint64(pk, 1);
  tf__mp_map_key(&bm, "devices");
  msgpack_pack_array(pk, 0);
  tf__mp_map_key(&bm, "tensor_stream");
  msgpack_pack_int(pk, 5);
  tf__mp_map_end(&bm);
  r = mt_parse(w);
  ck_assert_int_eq(tf_msg_get_status_reply_decode(r, &b, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "tensor_stream") != NULL, "%s", st.msg);
  tf_wire_msg_free(r);
  /* The master's form: no devices, sessions and running_steps. */
  tf_msg_get_status_reply m = {.job = "master", .incarnation = 9, .has = TF_MSG_STATUS_MASTER,
                               .sessions = 3, .running_steps = 1};
  r = status_msg(&m);
  ck_assert_msg(tf_msg_get_status_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_str_eq(b.job, "master");
  ck_assert_int_eq(b.n_devices, 0);
  ck_assert_uint_eq(b.has, TF_MSG_STATUS_MASTER);
  ck_assert(b.sessions == 3 && b.running_steps == 1 && b.graphs == 0);
  tf_msg_get_status_reply_fini(&b);
}
END_TEST

/* Devices given as names, or as maps with only "name", decode with type
 * "" and incarnation 0 (tfctl reads such replies). */
START_TEST(get_status_devices_as_names) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  tf__mp_map b, d;
  tf__mp_map_begin(&b, &pk, 4);
  tf__mp_map_key(&b, "job");
  tf__msgpack_pack_cstr(&pk, "ps");
  tf__mp_map_key(&b, "task");
  msgpack_pack_int(&pk, 3);
  tf__mp_map_key(&b, "incarnation");
  msgpack_pack_uint64(&pk, 1);
  tf__mp_map_key(&b, "devices");
  msgpack_pack_array(&pk, 2);
  tf__msgpack_pack_cstr(&pk, "/job:ps/replica:0/task:3/device:CPU:0");
  tf__mp_map_begin(&d, &pk, 1);
  tf__mp_map_key(&d, "name");
  tf__msgpack_pack_cstr(&pk, "/job:ps/replica:0/task:3/device:CPU:1");
  tf__mp_map_end(&d);
  tf__mp_map_end(&b);
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_GET_STATUS, .is_reply = true};
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert(tf_wire_parse(raw_build(&h, sb.data, sb.size, NULL, 0), &r, &st) == TF_OK);
  tf_msg_get_status_reply s;
  ck_assert_msg(tf_msg_get_status_reply_decode(r, &s, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(s.n_devices, 2);
  ck_assert_str_eq(s.devices[0].name, "/job:ps/replica:0/task:3/device:CPU:0");
  ck_assert_str_eq(s.devices[1].name, "/job:ps/replica:0/task:3/device:CPU:1");
  ck_assert_str_eq(s.devices[0].type, "");
  ck_assert(s.devices[1].incarnation == 0);
  ck_assert_uint_eq(s.has, 0);
  tf_msg_get_status_reply_fini(&s);
  tf_wire_msg_free(r);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* The traffic and memory counters (TF_MSG_STATUS_USAGE): carried at their
 * extremes in both forms; a reply without them (an older peer) decodes
 * with them 0 and their bits clear; each bit is packed on its own. */
START_TEST(get_status_usage) {
  tf_msg_status_device dev = {DEV, "CPU", 42};
  tf_msg_get_status_reply in = worker_status(&dev, 1);
  in.has |= TF_MSG_STATUS_USAGE;
  in.bytes_sent = UINT64_MAX;
  in.bytes_received = 123456789012345ULL;
  in.mem_in_use = INT64_MAX;
  in.mem_peak = 7;
  tf_msg_get_status_reply b;
  tf_status st;
  tf_wire_msg *r = status_msg(&in);
  ck_assert_uint_eq(r->body.via.map.size, 9 + 4);
  ck_assert_msg(tf_msg_get_status_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_uint_eq(b.has, TF_MSG_STATUS_WORKER | TF_MSG_STATUS_USAGE);
  ck_assert(b.bytes_sent == UINT64_MAX && b.bytes_received == 123456789012345ULL);
  ck_assert(b.mem_in_use == INT64_MAX && b.mem_peak == 7);
  ck_assert(b.steps_run == UINT64_MAX && b.graphs == 4);
  tf_msg_get_status_reply_fini(&b);
  /* Without them: 0 and clear, whatever the struct held. */
  in.has = TF_MSG_STATUS_WORKER;
  r = status_msg(&in);
  ck_assert_msg(tf_msg_get_status_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_uint_eq(b.has & TF_MSG_STATUS_USAGE, 0);
  ck_assert(b.bytes_sent == 0 && b.bytes_received == 0 && b.mem_in_use == 0 &&
            b.mem_peak == 0);
  tf_msg_get_status_reply_fini(&b);
  /* One bit at a time, in the master's form. */
  static const unsigned bits[] = {TF_MSG_STATUS_BYTES_SENT, TF_MSG_STATUS_BYTES_RECEIVED,
                                  TF_MSG_STATUS_MEM_IN_USE, TF_MSG_STATUS_MEM_PEAK};
  for (int i = 0; i < 4; i++) {
    tf_msg_get_status_reply m = {.job = "master", .incarnation = 9,
                                 .has = TF_MSG_STATUS_MASTER | bits[i], .sessions = 1,
                                 .bytes_sent = 11, .bytes_received = 12, .mem_in_use = 13,
                                 .mem_peak = 14};
    r = status_msg(&m);
    ck_assert_uint_eq(r->body.via.map.size, 4 + 2 + 1);
    ck_assert_msg(tf_msg_get_status_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert_uint_eq(b.has, TF_MSG_STATUS_MASTER | bits[i]);
    const uint64_t got[] = {b.bytes_sent, b.bytes_received, (uint64_t)b.mem_in_use,
                            (uint64_t)b.mem_peak};
    for (int k = 0; k < 4; k++) {
      ck_assert_uint_eq(got[k], k == i ? (uint64_t)(11 + k) : 0);
    }
    tf_msg_get_status_reply_fini(&b);
  }
}
END_TEST

START_TEST(list_and_cluster_round_trip) {
  tf_msg_device ds[] = {{DEV, "CPU", 3, "/job:worker/replica:0/task:1", "tcp://h:1"},
                        {"/job:ps/replica:0/task:0/device:CPU:0", "CPU", 4,
                         "/job:ps/replica:0/task:0", "ipc:///tmp/ps"}};
  for (int n = 0; n <= 2; n += 2) {
    tf_wire_msg *r = list_msg(ds, n);
    tf_msg_list_devices_reply b;
    tf_status st;
    ck_assert_msg(tf_msg_list_devices_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert_int_eq(b.n_devices, n);
    for (int i = 0; i < n; i++) {
      ck_assert_str_eq(b.devices[i].name, ds[i].name);
      ck_assert_str_eq(b.devices[i].type, ds[i].type);
      ck_assert_str_eq(b.devices[i].task, ds[i].task);
      ck_assert_str_eq(b.devices[i].url, ds[i].url);
      ck_assert(b.devices[i].incarnation == ds[i].incarnation);
    }
    tf_msg_list_devices_reply_fini(&b);
  }
  tf_wire_msg *r = cluster_msg(tasks3, 3);
  tf_msg_cluster_status_reply b;
  tf_status st;
  ck_assert_msg(tf_msg_cluster_status_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_int_eq(b.n_tasks, 3);
  for (int i = 0; i < 3; i++) {
    const tf_msg_task_status *t = &b.tasks[i], *want = &tasks3[i];
    ck_assert_str_eq(t->job, want->job);
    ck_assert_int_eq(t->task, want->task);
    ck_assert_str_eq(t->url, want->url);
    ck_assert(t->up == want->up);
    ck_assert(t->incarnation == want->incarnation);
    ck_assert_int_eq(t->n_devices, want->n_devices);
    for (int k = 0; k < t->n_devices; k++) ck_assert_str_eq(t->devices[k], want->devices[k]);
    ck_assert(t->last_ok_ms == want->last_ok_ms);
    ck_assert_str_eq(t->error, want->error);
    ck_assert_str_eq(t->jobs, want->jobs ? want->jobs : "");
  }
  tf_msg_cluster_status_reply_fini(&b);
}
END_TEST

/* Only job, task and up are required in a ClusterStatus entry, only name
 * in a ListDevices one; the rest default. */
START_TEST(optional_fields_default) {
  tf_wire_msg *valid = cluster_msg(tasks3 + 1, 1);
  msgpack_zone z;
  ck_assert(msgpack_zone_init(&z, 1024));
  msgpack_object o = valid->body;
  static const char *drop[] = {"url", "incarnation", "devices", "last_ok_ms", "error"};
  for (int i = 0; i < 5; i++) {
    char path[32];
    snprintf(path, sizeof path, "tasks.0.%s", drop[i]);
    mt_case c = {path, MT_DEL, 0, ""};
    o = mt_mutate(&z, &o, path, &c);
  }
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_object(&pk, o);
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert(tf_wire_parse(raw_build(&valid->h, sb.data, sb.size, NULL, 0), &r, &st) == TF_OK);
  tf_msg_cluster_status_reply b;
  ck_assert_msg(tf_msg_cluster_status_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(b.tasks[0].job, "worker");
  ck_assert_str_eq(b.tasks[0].url, "");
  ck_assert_str_eq(b.tasks[0].error, "");
  ck_assert(b.tasks[0].incarnation == 0);
  ck_assert_int_eq(b.tasks[0].n_devices, 0);
  ck_assert(b.tasks[0].last_ok_ms == -1);
  tf_msg_cluster_status_reply_fini(&b);
  tf_wire_msg_free(r);
  tf_wire_msg_free(valid);
  msgpack_sbuffer_destroy(&sb);
  msgpack_zone_destroy(&z);
}
END_TEST

static void pack_s(msgpack_packer *pk, const char *s) {
  msgpack_pack_str(pk, strlen(s));
  msgpack_pack_str_body(pk, s, strlen(s));
}

/* The worker's GetStatus reply, key by key as docs/wire.md lists it. */
START_TEST(bodies_are_the_documented_bytes) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 9);
  pack_s(&pk, "job");
  pack_s(&pk, "worker");
  pack_s(&pk, "task");
  msgpack_pack_int(&pk, 1);
  pack_s(&pk, "incarnation");
  msgpack_pack_uint64(&pk, 0xfedcba9876543210ULL);
  pack_s(&pk, "devices");
  msgpack_pack_array(&pk, 1);
  msgpack_pack_map(&pk, 3);
  pack_s(&pk, "name");
  pack_s(&pk, DEV);
  pack_s(&pk, "type");
  pack_s(&pk, "CPU");
  pack_s(&pk, "incarnation");
  msgpack_pack_uint64(&pk, 42);
  pack_s(&pk, "running_steps");
  msgpack_pack_int(&pk, 2);
  pack_s(&pk, "step_tables");
  msgpack_pack_int(&pk, 3);
  pack_s(&pk, "buffered_bytes");
  msgpack_pack_int64(&pk, 1LL << 40);
  pack_s(&pk, "graphs");
  msgpack_pack_int(&pk, 4);
  pack_s(&pk, "steps_run");
  msgpack_pack_uint64(&pk, UINT64_MAX);
  tf_msg_status_device dev = {DEV, "CPU", 42};
  tf_msg_get_status_reply in = worker_status(&dev, 1);
  tf_wire_msg *r = status_msg(&in);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  /* With the traffic and memory counters: the same keys, then these four
   * (before tensor_stream, which this reply does not carry). */
  size_t head = sb.size;
  pack_s(&pk, "bytes_sent");
  msgpack_pack_uint64(&pk, 1ULL << 33);
  pack_s(&pk, "bytes_received");
  msgpack_pack_uint64(&pk, 5);
  pack_s(&pk, "mem_in_use");
  msgpack_pack_int64(&pk, 1 << 20);
  pack_s(&pk, "mem_peak");
  msgpack_pack_int64(&pk, 3 << 20);
  ck_assert_uint_eq((unsigned char)sb.data[0], 0x80 | 9); /* fixmap of 9 */
  sb.data[0] = (char)(0x80 | 13);
  in.has |= TF_MSG_STATUS_USAGE;
  in.bytes_sent = 1ULL << 33;
  in.bytes_received = 5;
  in.mem_in_use = 1 << 20;
  in.mem_peak = 3 << 20;
  r = status_msg(&in);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  ck_assert_uint_gt(sb.size, head);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 1);
  pack_s(&pk, "tasks");
  msgpack_pack_array(&pk, 1);
  msgpack_pack_map(&pk, 9);
  pack_s(&pk, "job");
  pack_s(&pk, "worker");
  pack_s(&pk, "task");
  msgpack_pack_int(&pk, 1);
  pack_s(&pk, "url");
  pack_s(&pk, "tcp://127.0.0.1:2222");
  pack_s(&pk, "up");
  msgpack_pack_true(&pk);
  pack_s(&pk, "incarnation");
  msgpack_pack_uint64(&pk, 7);
  pack_s(&pk, "devices");
  msgpack_pack_array(&pk, 1);
  pack_s(&pk, DEV);
  pack_s(&pk, "last_ok_ms");
  msgpack_pack_int64(&pk, 12);
  pack_s(&pk, "error");
  pack_s(&pk, "");
  pack_s(&pk, "jobs");
  pack_s(&pk, "job-1@40 job-2@7");
  r = cluster_msg(tasks3 + 1, 1);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(status_hostile) {
  tf_msg_status_device dev = {DEV, "CPU", 42};
  tf_msg_get_status_reply in = worker_status(&dev, 1);
  static const mt_case st[] = {
      {"job", MT_DEL, 0, "GetStatus reply: field 'job' is missing"},
      {"job", MT_INT, 1, "GetStatus reply: field 'job' is a int, not a str"},
      {"task", MT_INT, -1, "GetStatus reply: field 'task' is -1, not in [0, 2147483647]"},
      {"task", MT_INT, 1LL << 31, "field 'task' is 2147483648, not in [0, 2147483647]"},
      {"incarnation", MT_DEL, 0, "GetStatus reply: field 'incarnation' is missing"},
      {"devices", MT_DEL, 0, "GetStatus reply: field 'devices' is missing"},
      {"devices", MT_ARRAY, TF_MSG_MAX_DEVICES + 1,
       "'devices' has 65537 entries, over the cap of 65536 (TF_MSG_MAX_DEVICES)"},
      {"devices.0", MT_INT, 7, "GetStatus reply: devices[0] is a int, not a device"},
      {"devices.0.name", MT_DEL, 0, "GetStatus reply: devices[0]: field 'name' is missing"},
      {"devices.0.type", MT_NIL, 0, "devices[0]: field 'type' is a nil, not a str"},
      {"devices.0.incarnation", MT_INT, -7, "devices[0]: field 'incarnation' is a int"},
      {"running_steps", MT_INT, -1, "field 'running_steps' is -1, not in [0,"},
      {"buffered_bytes", MT_STR, 1, "field 'buffered_bytes' is a str, not an int"},
      {"steps_run", MT_INT, -2, "field 'steps_run' is a int, not an unsigned int"},
      {"graphs", MT_DUP, 0, "GetStatus reply: field 'graphs' appears twice"},
  };
  mt_hostile(&status_ops, status_msg(&in), st, 15);
  in.has |= TF_MSG_STATUS_USAGE;
  in.bytes_sent = in.bytes_received = 9;
  in.mem_in_use = in.mem_peak = 10;
  static const mt_case usage[] = {
      {"bytes_sent", MT_INT, -1, "GetStatus reply: field 'bytes_sent' is a int, not an "
                                 "unsigned int"},
      {"bytes_received", MT_STR, 2, "field 'bytes_received' is a str, not an unsigned int"},
      {"mem_in_use", MT_INT, -1, "GetStatus reply: field 'mem_in_use' is -1, not in [0,"},
      {"mem_peak", MT_NIL, 0, "GetStatus reply: field 'mem_peak' is a nil, not an int"},
      {"mem_peak", MT_DUP, 0, "GetStatus reply: field 'mem_peak' appears twice"},
  };
  mt_hostile(&status_ops, status_msg(&in), usage, 5);
  tf_msg_device ds[] = {{DEV, "CPU", 3, "/job:worker/replica:0/task:1", "tcp://h:1"}};
  static const mt_case list[] = {
      {"devices", MT_DEL, 0, "ListDevices reply: field 'devices' is missing"},
      {"devices.0", MT_STR, 2, "ListDevices reply: devices[0] is a str, not a map"},
      {"devices.0.name", MT_DEL, 0, "ListDevices reply: devices[0]: field 'name' is missing"},
      {"devices.0.url", MT_INT, 1, "ListDevices reply: devices[0]: field 'url' is a int"},
      {"devices.0.incarnation", MT_STR, 1, "devices[0]: field 'incarnation' is a str"},
  };
  mt_hostile(&list_ops, list_msg(ds, 1), list, 5);
  static const mt_case cl[] = {
      {"tasks", MT_STR, 4, "ClusterStatus reply: field 'tasks' is a str, not an array"},
      {"tasks.2", MT_NIL, 0, "ClusterStatus reply: tasks[2] is a nil, not a map"},
      {"tasks.1.up", MT_DEL, 0, "ClusterStatus reply: tasks[1]: field 'up' is missing"},
      {"tasks.1.job", MT_NIL, 0, "tasks[1]: field 'job' is a nil, not a str"},
      {"tasks.0.task", MT_INT, -4, "tasks[0]: field 'task' is -4, not in [0, 2147483647]"},
      {"tasks.1.last_ok_ms", MT_INT, -2, "tasks[1]: field 'last_ok_ms' is -2, not in [-1,"},
      {"tasks.1.devices.0", MT_INT, 3, "tasks[1]: devices[0] is a int, not a str"},
      {"tasks.1.devices.0", MT_MAP, 0, "tasks[1]: devices[0] has no 'name'"},
      {"tasks.2.error", MT_STRNUL, 0, "tasks[2]: field 'error' holds a NUL byte"},
      {"tasks", MT_ARRAY, TF_MSG_MAX_DEVICES + 1, "'tasks' has 65537 entries, over the cap"},
  };
  mt_hostile(&cluster_ops, cluster_msg(tasks3, 3), cl, 10);
}
END_TEST

START_TEST(byte_flips) {
  tf_msg_status_device dev = {DEV, "CPU", 42};
  tf_msg_get_status_reply in = worker_status(&dev, 1);
  int n = 400;
  ck_assert_int_gt(mt_flips(&status_ops, status_msg(&in), n), 0);
  in.has |= TF_MSG_STATUS_USAGE;
  in.bytes_sent = 1ULL << 40;
  in.mem_peak = 1 << 30;
  ck_assert_int_gt(mt_flips(&status_ops, status_msg(&in), n), 0);
  tf_msg_device ds[] = {{DEV, "CPU", 3, "/job:worker/replica:0/task:1", "tcp://h:1"}};
  mt_flips(&list_ops, list_msg(ds, 1), n);
  mt_flips(&cluster_ops, cluster_msg(tasks3, 3), n);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("msg_status");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, get_status_round_trip);
  tcase_add_test(tc, get_status_devices_as_names);
  tcase_add_test(tc, get_status_usage);
  tcase_add_test(tc, list_and_cluster_round_trip);
  tcase_add_test(tc, optional_fields_default);
  tcase_add_test(tc, bodies_are_the_documented_bytes);
  tcase_add_test(tc, status_hostile);
  tcase_add_test(tc, byte_flips);
  suite_add_tcase(s, tc);
  return s;
}
