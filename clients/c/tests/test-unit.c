/* Tests that need no daemon: the method table, key files, decoding, the JSON printer, the
 * follower's rules, argument checks and an unreachable endpoint. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/internal.h"
#include "check.h"

static char directory[] = "/tmp/earshot-c-unit-XXXXXX";

static const ProtobufCServiceDescriptor *const services[] = {
    &earshot__v1__recognizer__descriptor, &earshot__v1__session__descriptor, &earshot__v1__catalogs__descriptor,
    &earshot__v1__cues__descriptor,       &earshot__v1__library__descriptor, &earshot__v1__health__descriptor,
};

static void method_table_matches_the_protos(test_tally *t) {
    size_t total = 0;
    for (size_t s = 0; s < sizeof services / sizeof services[0]; s++) {
        for (unsigned m = 0; m < services[s]->n_methods; m++, total++) {
            char path[128];
            snprintf(path, sizeof path, "/%s/%s", services[s]->name, services[s]->methods[m].name);
            const earshot_method *method = earshot_method_find(path);
            CHECK(t, method != NULL, "%s is not in the table", path);
            if (method == NULL) continue;
            CHECK(t, method->request == services[s]->methods[m].input, "%s: request type", path);
            CHECK(t, method->response == services[s]->methods[m].output, "%s: response type", path);
        }
    }
    CHECK(t, total == earshot_method_count, "%zu methods in the protos, %zu in the table", total,
          earshot_method_count);
    /* The streaming ones, as the protos' `stream` keyword says (protobuf-c drops it). */
    const char *streaming[] = {"/earshot.v1.Recognizer/StreamMatches", "/earshot.v1.Cues/StreamCues",
                               "/earshot.v1.Library/WatchLibrary", "/earshot.v1.Health/Watch"};
    size_t count = 0;
    for (size_t i = 0; i < earshot_method_count; i++) count += earshot_methods[i]->server_streaming;
    CHECK(t, count == 4, "%zu streaming methods", count);
    for (size_t i = 0; i < 4; i++)
        CHECK(t, earshot_method_find(streaming[i]) && earshot_method_find(streaming[i])->server_streaming, "%s",
              streaming[i]);
    CHECK(t, earshot_method_find("/earshot.v1.Nope/Nope") == NULL, "unknown path found");
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f == NULL) abort();
    fputs(text, f);
    fclose(f);
}

static void key_files(test_tally *t) {
    char public_key[41], secret[41], path[256], key[EARSHOT_KEY_TEXT], derived[EARSHOT_KEY_TEXT];
    earshot_status status;
    /* '#' is a Z85 digit (never the first of a key): a key holding one is still read as a key. */
    for (int i = 0; i < 20000; i++) {
        CHECK(t, zmq_curve_keypair(public_key, secret) == 0, "zmq_curve_keypair");
        if (strchr(secret, '#') != NULL) break;
    }
    CHECK(t, strchr(secret, '#') != NULL, "no secret key with a '#' in 20000 tries");
    char text[256];
    snprintf(text, sizeof text, "# a comment\n\n  %s  \n#2345678901234567890123456789012345678901\n", secret);
    snprintf(path, sizeof path, "%s/client.key", directory);
    write_file(path, text);
    CHECK(t, earshot_read_key_file(path, key, &status) == EARSHOT_OK, "%s", status.message);
    CHECK(t, strcmp(key, secret) == 0, "read %s", key);
    CHECK(t, earshot_public_key(key, derived, &status) == EARSHOT_OK && strcmp(derived, public_key) == 0,
          "derived %s", derived);

    snprintf(text, sizeof text, "%s\n%s\n", secret, public_key);
    write_file(path, text);
    CHECK(t, earshot_read_key_file(path, key, &status) == EARSHOT_INVALID_ARGUMENT, "two keys: %d", status.code);
    CHECK(t, strstr(status.message, "2 key(s)") != NULL, "%s", status.message);
    /* Comments of any length, as the Swift reader takes them; a long line that is not one is bad. */
    char long_text[2048];
    memset(long_text, 'x', sizeof long_text);
    long_text[0] = '#';
    snprintf(long_text + 1500, sizeof long_text - 1500, "\n  %s\r\n", secret);
    write_file(path, long_text);
    CHECK(t, earshot_read_key_file(path, key, &status) == EARSHOT_OK && strcmp(key, secret) == 0,
          "a 1500-byte comment: %s", status.message);
    long_text[0] = 'x';
    write_file(path, long_text);
    CHECK(t, earshot_read_key_file(path, key, &status) == EARSHOT_INVALID_ARGUMENT &&
                 strstr(status.message, "1 other line"),
          "a long line that is no comment: %s", status.message);
    write_file(path, "# only a comment\nnot-a-key\n");
    CHECK(t, earshot_read_key_file(path, key, &status) == EARSHOT_INVALID_ARGUMENT, "no key: %d", status.code);
    snprintf(path, sizeof path, "%s/missing.key", directory);
    CHECK(t, earshot_read_key_file(path, key, &status) == EARSHOT_NOT_FOUND, "missing: %d", status.code);
    CHECK(t, earshot_public_key("short", derived, &status) == EARSHOT_INVALID_ARGUMENT, "bad secret");
}

/* The JSON of a message into a string (at most `size`). */
static const char *json(const ProtobufCMessage *message, char *buffer, size_t size) {
    FILE *f = fmemopen(buffer, size, "w");
    if (f == NULL) abort();
    int result = earshot_json_write(f, message);
    fclose(f);
    return result == 0 ? buffer : "(write failed)";
}

static void json_mapping(test_tally *t) {
    char buffer[2048];
    Earshot__V1__MediaItem media = EARSHOT__V1__MEDIA_ITEM__INIT;
    media.id = "second";
    media.title = "Quote \" and\nnewline";
    char *genres[] = {"jazz", "live"};
    media.n_genres = 2;
    media.genres = genres;
    media._explicit_content_case = EARSHOT__V1__MEDIA_ITEM___EXPLICIT_CONTENT_EXPLICIT_CONTENT;
    media.explicit_content = 0; /* set to false: present, as proto3 optional */
    Earshot__V1__MatchedMediaItem item = EARSHOT__V1__MATCHED_MEDIA_ITEM__INIT;
    item.media_item = &media;
    item.predicted_current_match_offset = 4.18;
    item.confidence = 0.9275602429657486;
    item.reference_index = 1;
    item.catalog = "test";
    item.catalog_version = 1;
    item.time_skew = -6.534852748818487e-06;
    Earshot__V1__MatchedMediaItem *items[] = {&item};
    Earshot__V1__MatchResult result = EARSHOT__V1__MATCH_RESULT__INIT;
    result.outcome = EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_MATCH;
    result.n_items = 1;
    result.items = items;
    result.stream_time = 12;
    result.made_at_unix_ms = 1795661411422;
    const char *want =
        "{\"outcome\":\"MATCH_OUTCOME_MATCH\",\"items\":[{\"mediaItem\":{\"id\":\"second\",\"title\":\"Quote \\\" "
        "and\\nnewline\",\"genres\":[\"jazz\",\"live\"],\"explicitContent\":false},\"predictedCurrentMatchOffset\":4.18,"
        "\"timeSkew\":-6.534852748818487e-06,\"confidence\":0.9275602429657486,\"referenceIndex\":1,\"catalog\":"
        "\"test\",\"catalogVersion\":1}],\"streamTime\":12,\"madeAtUnixMs\":1795661411422}";
    const char *got = json(&result.base, buffer, sizeof buffer);
    CHECK(t, strcmp(got, want) == 0, "\n got  %s\n want %s", got, want);

    /* Maps as objects, uint64 as numbers, an unknown enum value as its number, bytes in base64. */
    Earshot__V1__SessionSnapshot__TopicSeqEntry a = EARSHOT__V1__SESSION_SNAPSHOT__TOPIC_SEQ_ENTRY__INIT;
    a.key = "earshot.v1/hb/";
    a.value = 18446744073709551615u;
    Earshot__V1__SessionSnapshot__TopicSeqEntry *entries[] = {&a};
    Earshot__V1__SessionSnapshot snapshot = EARSHOT__V1__SESSION_SNAPSHOT__INIT;
    snapshot.state = 42;
    snapshot.n_topic_seq = 1;
    snapshot.topic_seq = entries;
    got = json(&snapshot.base, buffer, sizeof buffer);
    CHECK(t, strcmp(got, "{\"state\":42,\"topicSeq\":{\"earshot.v1/hb/\":18446744073709551615}}") == 0, "%s", got);
    Earshot__V1__MatchSignatureRequest signature = EARSHOT__V1__MATCH_SIGNATURE_REQUEST__INIT;
    uint8_t bytes[] = {0xff, 0x00, 0x41, 0x42};
    signature.signature.len = 4;
    signature.signature.data = bytes;
    got = json(&signature.base, buffer, sizeof buffer);
    CHECK(t, strcmp(got, "{\"signature\":\"/wBBQg==\"}") == 0, "%s", got);
    Earshot__V1__Cue cue = EARSHOT__V1__CUE__INIT;
    got = json(&cue.base, buffer, sizeof buffer);
    CHECK(t, strcmp(got, "{}") == 0, "empty cue %s", got);
    cue._duration_case = EARSHOT__V1__CUE___DURATION_DURATION;
    cue.duration = 0;
    got = json(&cue.base, buffer, sizeof buffer);
    CHECK(t, strcmp(got, "{\"duration\":0}") == 0, "optional zero %s", got);
}

static Earshot__V1__ResponseEnvelope *round_trip_reply(Earshot__V1__ResponseEnvelope *reply, const char *signature) {
    uint8_t buffer[512];
    size_t n = earshot__v1__response_envelope__pack(reply, buffer);
    return es_decode_reply((const uint8_t *)signature, strlen(signature), buffer, n);
}

static void decoding(test_tally *t) {
    Earshot__V1__Status status_message = EARSHOT__V1__STATUS__INIT;
    status_message.code = EARSHOT_NOT_FOUND;
    status_message.message = "no catalog \"x\"";
    Earshot__V1__ResponseEnvelope reply = EARSHOT__V1__RESPONSE_ENVELOPE__INIT;
    reply.request_id = 7;
    reply.kind = EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_END;
    reply.status = &status_message;
    Earshot__V1__ResponseEnvelope *decoded = round_trip_reply(&reply, "EARSHOT/1");
    CHECK(t, decoded != NULL && decoded->request_id == 7, "a valid reply");
    earshot_status status;
    if (decoded != NULL) {
        CHECK(t, es_reply_status(decoded, &status) == EARSHOT_NOT_FOUND, "code %d", status.code);
        CHECK(t, strcmp(status.message, "no catalog \"x\"") == 0, "%s", status.message);
        earshot__v1__response_envelope__free_unpacked(decoded, NULL);
    }
    /* A code past those known (a newer daemon) is UNKNOWN, its number kept in the message. */
    int strange[] = {99, -7};
    for (size_t i = 0; i < 2; i++) {
        status_message.code = strange[i];
        decoded = round_trip_reply(&reply, "EARSHOT/1");
        CHECK(t, decoded != NULL, "a reply with code %d", strange[i]);
        if (decoded == NULL) continue;
        char number[32];
        snprintf(number, sizeof number, "status code %d: ", strange[i]);
        CHECK(t, es_reply_status(decoded, &status) == EARSHOT_UNKNOWN && status.code == EARSHOT_UNKNOWN,
              "code %d -> %d", strange[i], status.code);
        CHECK(t, strstr(status.message, number) && strstr(status.message, "no catalog"), "%s", status.message);
        earshot__v1__response_envelope__free_unpacked(decoded, NULL);
    }
    status_message.code = EARSHOT_NOT_FOUND;
    CHECK(t, round_trip_reply(&reply, "EARSHOT/2") == NULL, "another protocol accepted");
    reply.request_id = 0;
    CHECK(t, round_trip_reply(&reply, "EARSHOT/1") == NULL, "request_id 0 accepted");
    reply.request_id = 1;
    reply.kind = 9;
    CHECK(t, round_trip_reply(&reply, "EARSHOT/1") == NULL, "unknown kind accepted");
    uint8_t junk[] = {0xff, 0xff, 0xff};
    CHECK(t, es_decode_reply((const uint8_t *)"EARSHOT/1", 9, junk, 3) == NULL, "junk accepted");
    ProtobufCBinaryData payload = {3, junk};
    ProtobufCMessage *message = NULL;
    CHECK(t, es_decode_payload(&payload, &earshot__v1__match_result__descriptor, &message, "tcp://x:1", "/p", &status) ==
                 EARSHOT_INTERNAL && message == NULL,
          "junk payload");
    CHECK(t, strstr(status.message, "earshot.v1.MatchResult") != NULL, "%s", status.message);

    Earshot__V1__EventEnvelope event = EARSHOT__V1__EVENT_ENVELOPE__INIT;
    event.seq = 3;
    uint8_t buffer[256];
    size_t n = earshot__v1__event_envelope__pack(&event, buffer);
    Earshot__V1__EventEnvelope *got = es_decode_event((const uint8_t *)"earshot.v1/match/", 17, buffer, n);
    CHECK(t, got != NULL && strcmp(got->topic, "earshot.v1/match/") == 0, "an empty topic takes the frame's");
    if (got) earshot__v1__event_envelope__free_unpacked(got, NULL);
    event.topic = "earshot.v1/session/";
    n = earshot__v1__event_envelope__pack(&event, buffer);
    CHECK(t, es_decode_event((const uint8_t *)"earshot.v1/match/", 17, buffer, n) == NULL, "a topic mismatch accepted");
    CHECK(t, strcmp(earshot_code_name(EARSHOT_UNAUTHENTICATED), "UNAUTHENTICATED") == 0 &&
                 strcmp(earshot_code_name(99), "UNKNOWN_CODE") == 0,
          "code names");
}

static void buffers(test_tally *t) {
    es_buffer buffer = {NULL, 0};
    CHECK(t, es_buffer_reserve(&buffer, 1000) == 0 && buffer.capacity >= 1000, "reserve 1000");
    CHECK(t, es_buffer_reserve(&buffer, SIZE_MAX) == -1, "reserve SIZE_MAX: the doubling overflows");
    CHECK(t, es_buffer_reserve(&buffer, SIZE_MAX / 2 + 2) == -1, "reserve SIZE_MAX / 2 + 2");
    CHECK(t, buffer.capacity >= 1000 && buffer.data != NULL, "kept what it had");
    es_buffer_free(&buffer);
}

static Earshot__V1__EventEnvelope event_of(const char *topic, uint64_t epoch, uint64_t seq) {
    Earshot__V1__EventEnvelope event = EARSHOT__V1__EVENT_ENVELOPE__INIT;
    event.topic = (char *)topic;
    event.epoch = epoch;
    event.seq = seq;
    return event;
}

static void follower_rules(test_tally *t) {
    es_topics topics = {.count = 0};
    es_topics_add(&topics, EARSHOT_TOPIC_MATCH, NULL);
    es_topics_add(&topics, EARSHOT_TOPIC_HEARTBEAT, NULL);
    es_core core;
    es_core_init(&core, &topics);
    CHECK(t, core.resync && strcmp(core.reason, "start") == 0, "starts wanting a snapshot");
    Earshot__V1__SessionSnapshot__TopicSeqEntry seq = EARSHOT__V1__SESSION_SNAPSHOT__TOPIC_SEQ_ENTRY__INIT;
    seq.key = EARSHOT_TOPIC_MATCH;
    seq.value = 3;
    Earshot__V1__SessionSnapshot__TopicSeqEntry *entries[] = {&seq};
    Earshot__V1__SessionSnapshot snapshot = EARSHOT__V1__SESSION_SNAPSHOT__INIT;
    snapshot.epoch = 5;
    snapshot.n_topic_seq = 1;
    snapshot.topic_seq = entries;
    CHECK(t, !es_core_snapshot(&core, &snapshot, 0), "first snapshot is no epoch change");
    Earshot__V1__EventEnvelope e = event_of(EARSHOT_TOPIC_MATCH, 5, 3);
    CHECK(t, es_core_event(&core, &e, 10) == ES_DROP, "seq <= snapshot applied");
    e.seq = 4;
    CHECK(t, es_core_event(&core, &e, 20) == ES_APPLY, "the next seq dropped");
    CHECK(t, es_core_event(&core, &e, 30) == ES_DROP, "a repeat applied");
    e.seq = 6;
    CHECK(t, es_core_event(&core, &e, 40) == ES_DROP && core.resync, "a gap did not ask for a snapshot");
    CHECK(t, strstr(core.reason, "gap on earshot.v1/match/: expected seq 5, got 6") != NULL, "%s", core.reason);
    seq.value = 6;
    es_core_snapshot(&core, &snapshot, 50);
    e.seq = 7;
    CHECK(t, es_core_event(&core, &e, 60) == ES_APPLY, "after the resnapshot");
    /* A daemon restart: an event of a new epoch asks for a snapshot; the old epoch is dead. */
    Earshot__V1__EventEnvelope restarted = event_of(EARSHOT_TOPIC_MATCH, 9, 1);
    CHECK(t, es_core_event(&core, &restarted, 70) == ES_DROP && core.resync, "new epoch");
    CHECK(t, strstr(core.reason, "epoch changed (5 -> 9)") != NULL, "%s", core.reason);
    snapshot.epoch = 9;
    seq.value = 1;
    CHECK(t, es_core_snapshot(&core, &snapshot, 80), "epoch change not reported");
    e.seq = 8;
    CHECK(t, es_core_event(&core, &e, 90) == ES_DROP && !core.resync, "a late event of the dead epoch");
    restarted.seq = 2;
    CHECK(t, es_core_event(&core, &restarted, 100) == ES_APPLY, "the new epoch's next event");
    CHECK(t, core.stats.epoch_changes == 1 && core.stats.gaps == 1 && core.stats.snapshots == 3, "stats %llu %llu %llu",
          (unsigned long long)core.stats.epoch_changes, (unsigned long long)core.stats.gaps,
          (unsigned long long)core.stats.snapshots);
    /* Heartbeats: a head ahead once is in flight; still ahead at the next one is a loss. */
    Earshot__V1__Heartbeat__HeadsEntry head = EARSHOT__V1__HEARTBEAT__HEADS_ENTRY__INIT;
    head.key = EARSHOT_TOPIC_MATCH;
    head.value = 4;
    Earshot__V1__Heartbeat__HeadsEntry *heads[] = {&head};
    Earshot__V1__Heartbeat beat = EARSHOT__V1__HEARTBEAT__INIT;
    beat.n_heads = 1;
    beat.heads = heads;
    Earshot__V1__EventEnvelope hb = event_of(EARSHOT_TOPIC_HEARTBEAT, 9, 1);
    hb.body_case = EARSHOT__V1__EVENT_ENVELOPE__BODY_HEARTBEAT;
    hb.heartbeat = &beat;
    CHECK(t, es_core_event(&core, &hb, 1000) == ES_DROP && !core.resync, "first heartbeat ahead");
    hb.seq = 2;
    CHECK(t, es_core_event(&core, &hb, 2000) == ES_DROP && core.resync, "second heartbeat ahead");
    CHECK(t, strstr(core.reason, "heartbeat: earshot.v1/match/ is at seq 4, applied 2") != NULL, "%s", core.reason);
    es_core_snapshot(&core, &snapshot, 3000);
    /* Another topic with a Heartbeat body (the benchmark's loadtest/) is an event, not a heartbeat. */
    Earshot__V1__EventEnvelope load = event_of("earshot.v1/loadtest/", 9, 1);
    load.body_case = EARSHOT__V1__EVENT_ENVELOPE__BODY_HEARTBEAT;
    load.heartbeat = &beat;
    CHECK(t, es_core_event(&core, &load, 5000) == ES_APPLY, "a loadtest event taken for a heartbeat");
    CHECK(t, !es_core_check_heartbeat(&core, 5999, 3000), "heartbeat timeout too early");
    CHECK(t, es_core_check_heartbeat(&core, 6000, 3000) && strstr(core.reason, "no heartbeat for 3 s"), "%s",
          core.reason);
}

/* A snapshot's topic_seq of topics not subscribed takes no room; a topic past the table's room
 * is UNTRACKED (its order cannot be kept), not applied. */
static void follower_topic_table(test_tally *t) {
    es_topics topics = {.count = 0};
    es_topics_add(&topics, "earshot.v1/", NULL); /* every topic */
    es_core core;
    es_core_init(&core, &topics);
    char names[40][ES_TOPIC_MAX];
    Earshot__V1__SessionSnapshot__TopicSeqEntry entries[40], *list[40];
    for (int i = 0; i < 40; i++) {
        Earshot__V1__SessionSnapshot__TopicSeqEntry init = EARSHOT__V1__SESSION_SNAPSHOT__TOPIC_SEQ_ENTRY__INIT;
        entries[i] = init;
        snprintf(names[i], sizeof names[i], "%s/t%d/", i % 2 ? "other.v1" : "earshot.v1", i);
        entries[i].key = names[i];
        entries[i].value = 5;
        list[i] = &entries[i];
    }
    Earshot__V1__SessionSnapshot snapshot = EARSHOT__V1__SESSION_SNAPSHOT__INIT;
    snapshot.epoch = 1;
    snapshot.n_topic_seq = 40;
    snapshot.topic_seq = list;
    es_core_snapshot(&core, &snapshot, 0);
    CHECK(t, core.seq_count == ES_TOPICS_MAX, "%zu topics loaded", core.seq_count);
    for (size_t i = 0; i < core.seq_count; i++)
        CHECK(t, strncmp(core.seqs[i].topic, "earshot.v1/", 11) == 0, "loaded %s", core.seqs[i].topic);
    /* Only subscribed ones: 20 of the 40; the first 16 fill the table. */
    Earshot__V1__EventEnvelope e = event_of(names[0], 1, 6);
    CHECK(t, es_core_event(&core, &e, 1) == ES_APPLY, "a loaded topic");
    e = event_of(names[38], 1, 6); /* subscribed, the 20th: no room */
    CHECK(t, es_core_event(&core, &e, 2) == ES_UNTRACKED, "a topic past the table");
    /* With only the session/, match/ and hb/ topics subscribed, the snapshot's others are left out. */
    es_topics few = {.count = 0};
    es_topics_add(&few, EARSHOT_TOPIC_MATCH, NULL);
    es_topics_add(&few, EARSHOT_TOPIC_HEARTBEAT, NULL);
    es_core_init(&core, &few);
    Earshot__V1__SessionSnapshot__TopicSeqEntry match = EARSHOT__V1__SESSION_SNAPSHOT__TOPIC_SEQ_ENTRY__INIT;
    match.key = EARSHOT_TOPIC_MATCH;
    match.value = 2;
    list[20] = &match;
    snapshot.topic_seq = list + 4; /* 16 of the others (none subscribed), then match/ */
    snapshot.n_topic_seq = 17;
    es_core_snapshot(&core, &snapshot, 0);
    CHECK(t, core.seq_count == 1 && strcmp(core.seqs[0].topic, EARSHOT_TOPIC_MATCH) == 0 && core.seqs[0].applied == 2,
          "%zu topics loaded", core.seq_count);
}

static void arguments_and_unreachable(test_tally *t) {
    earshot_options options;
    earshot_options_init(&options);
    earshot_status status;
    earshot_client *client = NULL;
    options.server_key = "J>DK8Ou]A/(D}ef[)Il$CcAjw@jm2f^^tc7Oftlt";
    CHECK(t, earshot_client_open(&options, &client, &status) == EARSHOT_INVALID_ARGUMENT && client == NULL,
          "one key without the other: %s", status.message);
    options.server_key = NULL;
    options.endpoint = "no-port";
    CHECK(t, earshot_client_open(&options, &client, &status) == EARSHOT_INVALID_ARGUMENT, "%s", status.message);
    /* Nothing listens on port 9 of loopback: the call ends at its deadline, naming why. */
    options.endpoint = "127.0.0.1:9";
    CHECK(t, earshot_client_open(&options, &client, &status) == EARSHOT_OK, "%s", status.message);
    if (client == NULL) return;
    CHECK(t, strcmp(earshot_client_endpoint(client), "tcp://127.0.0.1:9") == 0, "%s", earshot_client_endpoint(client));
    int64_t start = es_now_ms();
    Earshot__V1__ServingStatus serving;
    CHECK(t, earshot_check_health(client, NULL, &serving, 300, &status) == EARSHOT_DEADLINE_EXCEEDED, "%d",
          status.code);
    int64_t took = es_now_ms() - start;
    CHECK(t, took >= 290 && took < 2000, "took %lld ms", (long long)took);
    CHECK(t, strstr(status.message, "no connection to tcp://127.0.0.1:9") != NULL, "%s", status.message);
    Earshot__V1__PrepareRequest wrong = EARSHOT__V1__PREPARE_REQUEST__INIT;
    ProtobufCMessage *response;
    CHECK(t, earshot_call(client, &earshot_recognizer_match, &wrong.base, &response, 100, &status) ==
                 EARSHOT_INVALID_ARGUMENT,
          "a request of the wrong type: %s", status.message);
    CHECK(t, earshot_call(client, &earshot_health_watch, &wrong.base, &response, 100, &status) ==
                 EARSHOT_INVALID_ARGUMENT,
          "a streaming method as unary");
    /* Over the daemon's 4 MiB frame limit: refused here at once (a daemon would drop the connection). */
    static uint8_t big[(4 << 20) + 1];
    start = es_now_ms();
    CHECK(t, earshot_call_raw(client, earshot_health_check.path, big, sizeof big, NULL, 0, NULL, 300, &status) ==
                 EARSHOT_INVALID_ARGUMENT && strstr(status.message, "4 MiB"),
          "a request over 4 MiB: %s %s", earshot_code_name(status.code), status.message);
    Earshot__V1__MatchSignatureRequest signature = EARSHOT__V1__MATCH_SIGNATURE_REQUEST__INIT;
    signature.signature.len = (4 << 20) - 8; /* the payload fits, the envelope around it does not */
    signature.signature.data = big;
    CHECK(t, earshot_call(client, &earshot_recognizer_match_signature, &signature.base, &response, 300, &status) ==
                 EARSHOT_INVALID_ARGUMENT && strstr(status.message, "frame limit"),
          "an envelope over 4 MiB: %s %s", earshot_code_name(status.code), status.message);
    CHECK(t, es_now_ms() - start < 250, "refused after %lld ms", (long long)(es_now_ms() - start));
    /* NULL where a handle or a place is wanted: INVALID_ARGUMENT (or END), never a crash. */
    ProtobufCMessage *none;
    CHECK(t, earshot_stream_next(NULL, &none, 0, &status) == EARSHOT_NEXT_END && status.code == EARSHOT_INVALID_ARGUMENT,
          "stream_next(NULL)");
    CHECK(t, earshot_stream_cancel(NULL, &status) == EARSHOT_INVALID_ARGUMENT, "stream_cancel(NULL)");
    CHECK(t, earshot_match(client, false, NULL, 100, &status) == EARSHOT_INVALID_ARGUMENT, "match into NULL");
    CHECK(t, earshot_get_snapshot(client, NULL, 100, &status) == EARSHOT_INVALID_ARGUMENT, "snapshot into NULL");
    CHECK(t, earshot_ping(NULL, 100, NULL, &status) == EARSHOT_INVALID_ARGUMENT, "ping(NULL)");
    earshot_update update;
    CHECK(t, earshot_follower_poll(NULL, &update, 0) == EARSHOT_NEXT_END && update.error.code == EARSHOT_INVALID_ARGUMENT,
          "follower_poll(NULL)");
    Earshot__V1__EventEnvelope *event;
    CHECK(t, earshot_subscriber_next(NULL, &event, 0) == EARSHOT_NEXT_END, "subscriber_next(NULL)");
    earshot_client_close(client);
    earshot_client_close(NULL);
    Earshot__V1__MatchedMediaItem item = EARSHOT__V1__MATCHED_MEDIA_ITEM__INIT;
    item.predicted_current_match_offset = 10;
    item.time_skew = 0.04;
    CHECK(t, earshot_predict_offset(&item, 1000, 3000) == 10 + 2 * 1.04, "predict");
    CHECK(t, earshot_predict_offset(&item, 0, 3000) == 10, "predict without time");
}

int main(int argc, char **argv) {
    if (mkdtemp(directory) == NULL) return 1;
    const char *only = argc > 1 ? argv[1] : NULL; /* one test by name, for debugging */
    test_tally tally = {0, 0, 0};
#define RUN(f) \
    if (only == NULL || strcmp(only, #f) == 0) TEST(&tally, f)
    RUN(method_table_matches_the_protos);
    RUN(key_files);
    RUN(json_mapping);
    RUN(decoding);
    RUN(buffers);
    RUN(follower_rules);
    RUN(follower_topic_table);
    RUN(arguments_and_unreachable);
    char path[300];
    snprintf(path, sizeof path, "%s/client.key", directory);
    unlink(path);
    rmdir(directory);
    printf("unit: %d passed, %d failed\n", tally.passed, tally.failed);
    return tally.failed ? 1 : 0;
}
