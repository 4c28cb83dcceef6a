/* The C client against a real earshotd over CURVE on loopback (tests/run-tests.sh starts it).
 * Environment: EARSHOT_RPC, EARSHOT_EVENTS (endpoints), EARSHOT_SERVER_KEY (server.public),
 * EARSHOT_KEYS (a folder with admin.key, operator.key, viewer.key, stranger.key — the last not
 * in the allow-list), EARSHOT_TEST_CATALOG and EARSHOT_TEST_CATALOG_SHA256 (a catalog file to
 * upload and its SHA-256 in hex), EARSHOT_TEST_ITEM (the media item id the programme matches),
 * EARSHOT_RESTART (a command that restarts the daemon on the same ports and state). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../src/internal.h"
#include "check.h"

static const char *rpc, *events, *server_key, *keys, *catalog_path, *catalog_sha256, *item_id, *restart;

static earshot_options options_for(const char *name) {
    static char paths[4][512];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, 512, "%s/%s.key", keys, name);
    earshot_options o;
    earshot_options_init(&o);
    o.endpoint = rpc;
    o.events_endpoint = events;
    o.server_key = server_key;
    o.client_key = path;
    o.timeout_ms = 10000;
    return o;
}

static earshot_client *open_client(test_tally *t, const char *name) {
    earshot_options o = options_for(name);
    earshot_client *c = NULL;
    earshot_status st;
    CHECK(t, earshot_client_open(&o, &c, &st) == EARSHOT_OK, "open %s: %s", name, st.message);
    return c;
}

/* A unary call expected to succeed; returns the response (or NULL after recording why). */
static ProtobufCMessage *ok_call(test_tally *t, earshot_client *c, const earshot_method *m, const ProtobufCMessage *req) {
    ProtobufCMessage *response = NULL;
    earshot_status st;
    int code = earshot_call(c, m, req, &response, 0, &st);
    CHECK(t, code == EARSHOT_OK && response != NULL, "%s: %s %s", m->path, earshot_code_name(code), st.message);
    return response;
}

static int failing_call(earshot_client *c, const earshot_method *m, const ProtobufCMessage *req, earshot_status *st) {
    ProtobufCMessage *response = NULL;
    int code = earshot_call(c, m, req, &response, 0, st);
    earshot_message_free(response);
    return code;
}

static void ping_and_health(test_tally *t) {
    earshot_client *c = open_client(t, "viewer");
    if (c == NULL) return;
    earshot_status st;
    double rtt = -1;
    CHECK(t, earshot_ping(c, 5000, &rtt, &st) == EARSHOT_OK && rtt > 0, "ping: %s", st.message);
    Earshot__V1__ServingStatus serving = 0;
    CHECK(t, earshot_check_health(c, "", &serving, 0, &st) == EARSHOT_OK, "%s", st.message);
    CHECK(t, serving == EARSHOT__V1__SERVING_STATUS__SERVING_STATUS_SERVING, "daemon: %d", serving);
    CHECK(t, earshot_check_health(c, "earshot.v1.Library", &serving, 0, &st) == EARSHOT_OK &&
                 serving == EARSHOT__V1__SERVING_STATUS__SERVING_STATUS_SERVING,
          "library: %d %s", serving, st.message);
    Earshot__V1__GetStatsRequest req = EARSHOT__V1__GET_STATS_REQUEST__INIT;
    Earshot__V1__Stats *stats = (Earshot__V1__Stats *)ok_call(t, c, &earshot_health_get_stats, &req.base);
    if (stats) {
        CHECK(t, stats->uptime_ms > 0 && stats->version[0] != '\0' && stats->n_counters > 0, "stats %s %" PRId64,
              stats->version, stats->uptime_ms);
        earshot_message_free(&stats->base);
    }
    /* A path the daemon does not know: UNIMPLEMENTED with its message. */
    size_t length = 0;
    CHECK(t, earshot_call_raw(c, "/earshot.v1.Nope/Nope", NULL, 0, NULL, 0, &length, 0, &st) == EARSHOT_UNIMPLEMENTED,
          "unknown method: %s %s", earshot_code_name(st.code), st.message);
    CHECK(t, strstr(st.message, "unknown method") != NULL, "%s", st.message);
    earshot_client_close(c);
}

static void session_snapshot(test_tally *t) {
    earshot_client *c = open_client(t, "viewer");
    if (c == NULL) return;
    Earshot__V1__SessionSnapshot *s = NULL;
    earshot_status st;
    CHECK(t, earshot_get_snapshot(c, &s, 0, &st) == EARSHOT_OK && s, "%s", st.message);
    if (s) {
        bool hb = false;
        for (size_t i = 0; i < s->n_topic_seq; i++) hb |= strcmp(s->topic_seq[i]->key, EARSHOT_TOPIC_HEARTBEAT) == 0;
        CHECK(t, s->epoch != 0 && hb, "epoch %" PRIu64 ", heartbeat seq %d", s->epoch, hb);
        CHECK(t, s->capture && strstr(s->capture->source, "file:") == s->capture->source, "capture source");
        earshot_message_free(&s->base);
    }
    earshot_client_close(c);
}

static void recognizer(test_tally *t) {
    earshot_client *op = open_client(t, "operator"), *viewer = open_client(t, "viewer");
    if (op == NULL || viewer == NULL) goto done;
    earshot_status st;
    CHECK(t, earshot_prepare(op, 0, &st) == EARSHOT_OK, "prepare: %s", st.message);
    Earshot__V1__MatchResult *result = NULL;
    CHECK(t, earshot_match(op, false, &result, 0, &st) == EARSHOT_OK && result, "match: %s", st.message);
    if (result) {
        CHECK(t, result->outcome == EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_MATCH && result->n_items > 0 &&
                     strcmp(result->items[0]->media_item->id, item_id) == 0,
              "outcome %d, %zu items", result->outcome, result->n_items);
        earshot_message_free(&result->base);
    }
    /* A viewer may not match: PERMISSION_DENIED, saying which role it needs. */
    CHECK(t, earshot_match(viewer, false, &result, 0, &st) == EARSHOT_PERMISSION_DENIED && result == NULL, "viewer: %s",
          earshot_code_name(st.code));
    CHECK(t, strstr(st.message, "operator") != NULL, "%s", st.message);
    /* A signature that is not one. */
    Earshot__V1__MatchSignatureRequest sig = EARSHOT__V1__MATCH_SIGNATURE_REQUEST__INIT;
    uint8_t junk[] = "not a signature";
    sig.signature.len = sizeof junk;
    sig.signature.data = junk;
    ProtobufCMessage *reply = NULL;
    int code = earshot_call(op, &earshot_recognizer_match_signature, &sig.base, &reply, 0, &st);
    CHECK(t,
          code == EARSHOT_INVALID_ARGUMENT ||
              (code == EARSHOT_OK &&
               ((Earshot__V1__MatchResult *)reply)->outcome == EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_ERROR),
          "junk signature: %s %s", earshot_code_name(code), st.message);
    earshot_message_free(reply);
    /* Cancel stops prerecording; a Match then has to listen, and a 300 ms deadline passes. */
    Earshot__V1__CancelRequest cancel = EARSHOT__V1__CANCEL_REQUEST__INIT;
    Earshot__V1__CancelResponse *cancelled =
        (Earshot__V1__CancelResponse *)ok_call(t, op, &earshot_recognizer_cancel, &cancel.base);
    if (cancelled) {
        CHECK(t, cancelled->state == EARSHOT__V1__SESSION_STATE__SESSION_STATE_IDLE, "state after cancel %d",
              cancelled->state);
        earshot_message_free(&cancelled->base);
    }
    int64_t start = es_now_ms();
    CHECK(t, earshot_match(op, false, &result, 300, &st) == EARSHOT_DEADLINE_EXCEEDED && result == NULL,
          "deadline: %s %s", earshot_code_name(st.code), st.message);
    int64_t took = es_now_ms() - start;
    CHECK(t, took >= 280 && took < 3000, "the deadline took %" PRId64 " ms", took);
    CHECK(t, earshot_prepare(op, 0, &st) == EARSHOT_OK, "prepare again: %s", st.message);
    /* The client goes on after a deadline: the late END is dropped as stale. */
    double rtt;
    CHECK(t, earshot_ping(op, 5000, &rtt, &st) == EARSHOT_OK, "ping after deadline: %s", st.message);
done:
    earshot_client_close(op);
    earshot_client_close(viewer);
}

/* A stream read in part, unary calls made while it is open, then cancelled midway. */
static void streams_and_cancel(test_tally *t) {
    earshot_client *op = open_client(t, "operator");
    if (op == NULL) return;
    earshot_status st;
    Earshot__V1__StreamMatchesRequest req = EARSHOT__V1__STREAM_MATCHES_REQUEST__INIT;
    req.include_repeats = true;
    earshot_stream *matches = NULL, *health = NULL;
    CHECK(t, earshot_stream_open(op, &earshot_recognizer_stream_matches, &req.base, 0, &matches, &st) == EARSHOT_OK,
          "%s", st.message);
    Earshot__V1__HealthCheckRequest hreq = EARSHOT__V1__HEALTH_CHECK_REQUEST__INIT;
    CHECK(t, earshot_stream_open(op, &earshot_health_watch, &hreq.base, 0, &health, &st) == EARSHOT_OK, "%s",
          st.message);
    if (matches == NULL || health == NULL) goto done;
    ProtobufCMessage *item = NULL;
    CHECK(t, earshot_stream_next(health, &item, 5000, &st) == EARSHOT_NEXT_ITEM && item, "health watch: %s",
          st.message);
    if (item) {
        CHECK(t, ((Earshot__V1__HealthCheckResponse *)item)->status == EARSHOT__V1__SERVING_STATUS__SERVING_STATUS_SERVING,
              "first health item");
        earshot_message_free(item);
    }
    int got = 0;
    for (int i = 0; i < 40 && got < 2; i++) {
        earshot_next next = earshot_stream_next(matches, &item, 500, &st);
        CHECK(t, next != EARSHOT_NEXT_END, "matches ended: %s %s", earshot_code_name(st.code), st.message);
        if (next == EARSHOT_NEXT_END) break;
        if (next == EARSHOT_NEXT_ITEM) {
            got++;
            earshot_message_free(item);
        }
        /* Unary calls on the same client while both streams run. */
        Earshot__V1__ServingStatus serving;
        CHECK(t, earshot_check_health(op, NULL, &serving, 0, &st) == EARSHOT_OK, "check during streams: %s",
              st.message);
    }
    CHECK(t, got == 2, "%d stream items", got);
    CHECK(t, earshot_stream_count(matches) == 2, "count");
    /* Cancel midway: the daemon ends the stream CANCELLED; nothing more is delivered. */
    CHECK(t, earshot_stream_cancel(matches, &st) == EARSHOT_OK, "cancel");
    CHECK(t, earshot_stream_next(matches, &item, 5000, &st) == EARSHOT_NEXT_END && item == NULL, "after cancel");
    CHECK(t, st.code == EARSHOT_CANCELLED, "end status %s: %s", earshot_code_name(st.code), st.message);
    /* The daemon's END ("cancelled by the client"), not the one made here when none comes in 2 s. */
    CHECK(t, strstr(st.message, "sent no END") == NULL, "a local END: %s", st.message);
    CHECK(t, earshot_stream_done(matches, &st) && st.code == EARSHOT_CANCELLED, "done");
    CHECK(t, earshot_stream_next(matches, &item, 0, &st) == EARSHOT_NEXT_END, "END again");
    earshot_stream_close(matches);
    matches = NULL;
    /* A stream deadline: Health/Watch with 700 ms ends DEADLINE_EXCEEDED. */
    earshot_stream *short_watch = NULL;
    CHECK(t, earshot_stream_open(op, &earshot_health_watch, &hreq.base, 700, &short_watch, &st) == EARSHOT_OK, "%s",
          st.message);
    if (short_watch) {
        int64_t start = es_now_ms();
        earshot_next next;
        while ((next = earshot_stream_next(short_watch, &item, 3000, &st)) == EARSHOT_NEXT_ITEM) earshot_message_free(item);
        int64_t took = es_now_ms() - start;
        CHECK(t, next == EARSHOT_NEXT_END && st.code == EARSHOT_DEADLINE_EXCEEDED, "%s %s", earshot_code_name(st.code),
              st.message);
        CHECK(t, took >= 600 && took < 2500, "stream deadline after %" PRId64 " ms", took);
        earshot_stream_close(short_watch);
    }
    /* Closing a running stream cancels it; the client serves on. */
    earshot_stream_close(health);
    health = NULL;
    double rtt;
    CHECK(t, earshot_ping(op, 5000, &rtt, &st) == EARSHOT_OK, "%s", st.message);
    uint64_t dropped = 1;
    earshot_client_counters(op, &dropped, NULL);
    CHECK(t, dropped == 0, "%" PRIu64 " malformed replies", dropped);
done:
    earshot_stream_close(matches);
    earshot_stream_close(health);
    earshot_client_close(op);
}

static void catalogs(test_tally *t) {
    earshot_client *admin = open_client(t, "admin"), *op = open_client(t, "operator");
    if (admin == NULL || op == NULL) goto done;
    earshot_status st;
    Earshot__V1__ListCatalogsRequest list = EARSHOT__V1__LIST_CATALOGS_REQUEST__INIT;
    /* Any role may list (the catalog/ topic's snapshot), without the uploads; only an admin describes. */
    Earshot__V1__ListCatalogsResponse *seen = (Earshot__V1__ListCatalogsResponse *)ok_call(t, op, &earshot_catalogs_list, &list.base);
    if (seen) {
        CHECK(t, seen->n_catalogs == 1 && strcmp(seen->catalogs[0]->name, "test") == 0, "operator lists %zu catalogs", seen->n_catalogs);
        earshot_message_free(&seen->base);
    }
    Earshot__V1__DescribeCatalogRequest denied = EARSHOT__V1__DESCRIBE_CATALOG_REQUEST__INIT;
    denied.name = "test";
    CHECK(t, failing_call(op, &earshot_catalogs_describe, &denied.base, &st) == EARSHOT_PERMISSION_DENIED,
          "operator describes a catalog: %s", earshot_code_name(st.code));
    Earshot__V1__ListCatalogsResponse *all = (Earshot__V1__ListCatalogsResponse *)ok_call(t, admin, &earshot_catalogs_list, &list.base);
    if (all) {
        CHECK(t, all->n_catalogs == 1 && strcmp(all->catalogs[0]->name, "test") == 0 &&
                     all->catalogs[0]->state == EARSHOT__V1__CATALOG_STATE__CATALOG_STATE_ACTIVE,
              "%zu catalogs", all->n_catalogs);
        earshot_message_free(&all->base);
    }
    Earshot__V1__DescribeCatalogRequest describe = EARSHOT__V1__DESCRIBE_CATALOG_REQUEST__INIT;
    describe.name = "test";
    Earshot__V1__CatalogDescription *d = (Earshot__V1__CatalogDescription *)ok_call(t, admin, &earshot_catalogs_describe, &describe.base);
    if (d) {
        CHECK(t, d->n_references == 2 && d->summary && d->summary->reference_count == 2, "%zu references", d->n_references);
        earshot_message_free(&d->base);
    }
    describe.name = "no-such-catalog";
    CHECK(t, failing_call(admin, &earshot_catalogs_describe, &describe.base, &st) == EARSHOT_NOT_FOUND, "%s",
          earshot_code_name(st.code));
    CHECK(t, strstr(st.message, "no-such-catalog") != NULL, "message names it: %s", st.message);
    Earshot__V1__CatalogNameRequest name = EARSHOT__V1__CATALOG_NAME_REQUEST__INIT;
    name.name = "test";
    Earshot__V1__CatalogSummary *summary = (Earshot__V1__CatalogSummary *)ok_call(t, admin, &earshot_catalogs_disable, &name.base);
    if (summary) {
        CHECK(t, !summary->enabled && summary->state == EARSHOT__V1__CATALOG_STATE__CATALOG_STATE_DISABLED, "disabled");
        earshot_message_free(&summary->base);
    }
    summary = (Earshot__V1__CatalogSummary *)ok_call(t, admin, &earshot_catalogs_enable, &name.base);
    if (summary) {
        CHECK(t, summary->enabled && summary->state == EARSHOT__V1__CATALOG_STATE__CATALOG_STATE_ACTIVE, "enabled");
        earshot_message_free(&summary->base);
    }
    /* Upload the test catalog again under another name: begin, one chunk, get, commit, remove. */
    FILE *f = fopen(catalog_path, "rb");
    static uint8_t data[1 << 20];
    size_t size = f ? fread(data, 1, sizeof data, f) : 0;
    if (f) fclose(f);
    CHECK(t, size > 0 && size < sizeof data, "read %s", catalog_path);
    uint8_t digest[32];
    for (int i = 0; i < 32; i++) {
        unsigned byte = 0;
        CHECK(t, sscanf(catalog_sha256 + 2 * i, "%2x", &byte) == 1, "sha256 hex");
        digest[i] = (uint8_t)byte;
    }
    Earshot__V1__BeginUploadRequest begin = EARSHOT__V1__BEGIN_UPLOAD_REQUEST__INIT;
    begin.name = "c-upload";
    begin.size = size;
    begin.sha256.len = 32;
    begin.sha256.data = digest;
    begin.enable = true;
    Earshot__V1__UploadStatus *up = (Earshot__V1__UploadStatus *)ok_call(t, admin, &earshot_catalogs_begin_upload, &begin.base);
    if (up) {
        char id[128];
        snprintf(id, sizeof id, "%s", up->upload_id);
        CHECK(t, up->offset == 0 && id[0], "begin: offset %" PRIu64, up->offset);
        earshot_message_free(&up->base);
        Earshot__V1__UploadChunkRequest chunk = EARSHOT__V1__UPLOAD_CHUNK_REQUEST__INIT;
        chunk.upload_id = id;
        chunk.offset = 0;
        chunk.data.len = size;
        chunk.data.data = data;
        up = (Earshot__V1__UploadStatus *)ok_call(t, admin, &earshot_catalogs_upload_chunk, &chunk.base);
        if (up) {
            CHECK(t, up->offset == size, "chunk: offset %" PRIu64, up->offset);
            earshot_message_free(&up->base);
        }
        chunk.offset = size + 10;
        CHECK(t, failing_call(admin, &earshot_catalogs_upload_chunk, &chunk.base, &st) == EARSHOT_OUT_OF_RANGE,
              "a chunk past the end: %s", earshot_code_name(st.code));
        Earshot__V1__UploadRequest ureq = EARSHOT__V1__UPLOAD_REQUEST__INIT;
        ureq.upload_id = id;
        up = (Earshot__V1__UploadStatus *)ok_call(t, admin, &earshot_catalogs_get_upload, &ureq.base);
        if (up) {
            CHECK(t, up->offset == size && strcmp(up->name, "c-upload") == 0, "get upload");
            earshot_message_free(&up->base);
        }
        Earshot__V1__CommitUploadResponse *commit =
            (Earshot__V1__CommitUploadResponse *)ok_call(t, admin, &earshot_catalogs_commit_upload, &ureq.base);
        if (commit) {
            CHECK(t, commit->catalog && strcmp(commit->catalog->name, "c-upload") == 0 && commit->catalog->version == 1,
                  "commit");
            earshot_message_free(&commit->base);
        }
    }
    name.name = "c-upload";
    Earshot__V1__RemoveCatalogResponse *removed = (Earshot__V1__RemoveCatalogResponse *)ok_call(t, admin, &earshot_catalogs_remove, &name.base);
    if (removed) {
        CHECK(t, removed->removed && strcmp(removed->removed->name, "c-upload") == 0, "removed");
        earshot_message_free(&removed->base);
    }
    /* An upload abandoned: begin, abort, and the id is gone. */
    begin.name = "c-abort";
    up = (Earshot__V1__UploadStatus *)ok_call(t, admin, &earshot_catalogs_begin_upload, &begin.base);
    if (up) {
        char id[128];
        snprintf(id, sizeof id, "%s", up->upload_id);
        earshot_message_free(&up->base);
        Earshot__V1__UploadRequest ureq = EARSHOT__V1__UPLOAD_REQUEST__INIT;
        ureq.upload_id = id;
        earshot_message_free(ok_call(t, admin, &earshot_catalogs_abort_upload, &ureq.base));
        CHECK(t, failing_call(admin, &earshot_catalogs_get_upload, &ureq.base, &st) == EARSHOT_NOT_FOUND,
              "aborted upload: %s", earshot_code_name(st.code));
    }
done:
    earshot_client_close(admin);
    earshot_client_close(op);
}

static void cues(test_tally *t) {
    earshot_client *op = open_client(t, "operator");
    if (op == NULL) return;
    earshot_status st;
    Earshot__V1__GetCurrentCuesRequest current = EARSHOT__V1__GET_CURRENT_CUES_REQUEST__INIT;
    earshot_message_free(ok_call(t, op, &earshot_cues_get_current, &current.base));
    Earshot__V1__CueScheduleRequest ref = EARSHOT__V1__CUE_SCHEDULE_REQUEST__INIT;
    ref.catalog = "no-such-catalog";
    CHECK(t, failing_call(op, &earshot_cues_get_schedule, &ref.base, &st) == EARSHOT_NOT_FOUND, "%s %s",
          earshot_code_name(st.code), st.message);
    ref.catalog = "test";
    ref.reference_index = 1;
    Earshot__V1__Cue cue = EARSHOT__V1__CUE__INIT;
    cue.id = "c-cue";
    cue.start = 5;
    cue._duration_case = EARSHOT__V1__CUE___DURATION_DURATION;
    cue.duration = 2.5;
    Earshot__V1__Cue *list[] = {&cue};
    Earshot__V1__SetCuesRequest set = EARSHOT__V1__SET_CUES_REQUEST__INIT;
    set.reference = &ref;
    set.n_cues = 1;
    set.cues = list;
    Earshot__V1__CueSchedule *s = (Earshot__V1__CueSchedule *)ok_call(t, op, &earshot_cues_set_cues, &set.base);
    if (s) {
        CHECK(t, s->source == EARSHOT__V1__CUE_SCHEDULE__SOURCE__SOURCE_CONTROLLER && s->n_cues == 1 &&
                     s->cues[0]->_duration_case == EARSHOT__V1__CUE___DURATION_DURATION && s->cues[0]->duration == 2.5,
              "set cues: source %d, %zu cues", s->source, s->n_cues);
        earshot_message_free(&s->base);
    }
    s = (Earshot__V1__CueSchedule *)ok_call(t, op, &earshot_cues_get_schedule, &ref.base);
    if (s) {
        CHECK(t, s->n_cues == 1 && strcmp(s->cues[0]->id, "c-cue") == 0, "get schedule: %zu cues", s->n_cues);
        earshot_message_free(&s->base);
    }
    s = (Earshot__V1__CueSchedule *)ok_call(t, op, &earshot_cues_clear_cues, &ref.base);
    if (s) {
        CHECK(t, s->n_cues == 0 && s->source != EARSHOT__V1__CUE_SCHEDULE__SOURCE__SOURCE_CONTROLLER, "cleared");
        earshot_message_free(&s->base);
    }
    Earshot__V1__StreamCuesRequest sreq = EARSHOT__V1__STREAM_CUES_REQUEST__INIT;
    earshot_stream *stream = NULL;
    CHECK(t, earshot_stream_open(op, &earshot_cues_stream_cues, &sreq.base, 0, &stream, &st) == EARSHOT_OK, "%s",
          st.message);
    if (stream) {
        ProtobufCMessage *item = NULL;
        CHECK(t, earshot_stream_next(stream, &item, 5000, &st) == EARSHOT_NEXT_ITEM && item, "%s", st.message);
        if (item) {
            CHECK(t, ((Earshot__V1__CueEvent *)item)->kind == EARSHOT__V1__CUE_EVENT__KIND__KIND_STATE, "first is STATE");
            earshot_message_free(item);
        }
        earshot_stream_close(stream);
    }
    earshot_client_close(op);
}

static void library(test_tally *t) {
    earshot_client *op = open_client(t, "operator"), *admin = open_client(t, "admin");
    if (op == NULL || admin == NULL) goto done;
    earshot_status st;
    Earshot__V1__AddLibraryItemsRequest empty = EARSHOT__V1__ADD_LIBRARY_ITEMS_REQUEST__INIT;
    CHECK(t, failing_call(op, &earshot_library_add, &empty.base, &st) == EARSHOT_INVALID_ARGUMENT, "no items: %s",
          earshot_code_name(st.code));
    /* A match added in the same call, then one added by hand. */
    Earshot__V1__MatchResult *result = NULL;
    CHECK(t, earshot_match(op, true, &result, 0, &st) == EARSHOT_OK && result, "%s", st.message);
    if (result) {
        CHECK(t, result->library && result->library->code == 0 && result->library->n_item_ids == 1,
              "add_to_library: %s", result->library ? result->library->message : "no status");
        earshot_message_free(&result->base);
    }
    Earshot__V1__MediaItem media = EARSHOT__V1__MEDIA_ITEM__INIT;
    media.id = "by-hand";
    media.title = "By hand";
    Earshot__V1__MatchedMediaItem matched = EARSHOT__V1__MATCHED_MEDIA_ITEM__INIT;
    matched.media_item = &media;
    matched.confidence = 0.5;
    matched.catalog = "test";
    Earshot__V1__NewLibraryItem item = EARSHOT__V1__NEW_LIBRARY_ITEM__INIT;
    item.item = &matched;
    Earshot__V1__NewLibraryItem *items[] = {&item};
    Earshot__V1__AddLibraryItemsRequest add = EARSHOT__V1__ADD_LIBRARY_ITEMS_REQUEST__INIT;
    add.n_items = 1;
    add.items = items;
    Earshot__V1__LibraryWriteResponse *w = (Earshot__V1__LibraryWriteResponse *)ok_call(t, op, &earshot_library_add, &add.base);
    char id[64] = "";
    uint64_t version = 0;
    if (w) {
        CHECK(t, w->n_items == 1 && strlen(w->items[0]->id) == 32 && w->item_count >= 2, "add: %zu", w->n_items);
        if (w->n_items == 1) snprintf(id, sizeof id, "%s", w->items[0]->id);
        version = w->version;
        earshot_message_free(&w->base);
    }
    Earshot__V1__LibraryItemsRequest list = EARSHOT__V1__LIBRARY_ITEMS_REQUEST__INIT;
    Earshot__V1__LibraryItemsResponse *page = (Earshot__V1__LibraryItemsResponse *)ok_call(t, op, &earshot_library_items, &list.base);
    if (page) {
        CHECK(t, page->n_items >= 2 && strcmp(page->items[0]->id, id) == 0 && page->version == version,
              "items: %zu, newest first", page->n_items);
        earshot_message_free(&page->base);
    }
    /* WatchLibrary from 0: the backlog, then CURRENT at the owner's version. */
    Earshot__V1__WatchLibraryRequest watch = EARSHOT__V1__WATCH_LIBRARY_REQUEST__INIT;
    earshot_stream *stream = NULL;
    CHECK(t, earshot_stream_open(op, &earshot_library_watch_library, &watch.base, 0, &stream, &st) == EARSHOT_OK, "%s",
          st.message);
    bool current = false;
    for (int i = 0; stream && i < 50 && !current; i++) {
        ProtobufCMessage *m = NULL;
        if (earshot_stream_next(stream, &m, 5000, &st) != EARSHOT_NEXT_ITEM) break;
        Earshot__V1__LibraryChange *change = (Earshot__V1__LibraryChange *)m;
        current = change->kind == EARSHOT__V1__LIBRARY_CHANGE__KIND__KIND_CURRENT && change->version == version;
        earshot_message_free(m);
    }
    CHECK(t, current, "WatchLibrary reached CURRENT at version %" PRIu64, version);
    earshot_stream_close(stream);
    char *unknown[] = {"00000000000000000000000000000000"};
    Earshot__V1__RemoveLibraryItemsRequest remove = EARSHOT__V1__REMOVE_LIBRARY_ITEMS_REQUEST__INIT;
    remove.n_ids = 1;
    remove.ids = unknown;
    CHECK(t, failing_call(op, &earshot_library_remove, &remove.base, &st) == EARSHOT_NOT_FOUND, "unknown id: %s",
          earshot_code_name(st.code));
    char *mine[] = {id};
    remove.ids = mine;
    w = (Earshot__V1__LibraryWriteResponse *)ok_call(t, op, &earshot_library_remove, &remove.base);
    if (w) {
        CHECK(t, w->version == version + 1, "remove: version %" PRIu64, w->version);
        earshot_message_free(&w->base);
    }
    Earshot__V1__ListLibraryOwnersRequest owners = EARSHOT__V1__LIST_LIBRARY_OWNERS_REQUEST__INIT;
    CHECK(t, failing_call(op, &earshot_library_list_owners, &owners.base, &st) == EARSHOT_PERMISSION_DENIED, "%s",
          earshot_code_name(st.code));
    Earshot__V1__ListLibraryOwnersResponse *o = (Earshot__V1__ListLibraryOwnersResponse *)ok_call(t, admin, &earshot_library_list_owners, &owners.base);
    if (o) {
        bool found = false;
        for (size_t i = 0; i < o->n_owners; i++) found |= strcmp(o->owners[i]->name, "operator") == 0;
        CHECK(t, found, "operator among %zu owners", o->n_owners);
        earshot_message_free(&o->base);
    }
    Earshot__V1__LibraryBackupRequest backup = EARSHOT__V1__LIBRARY_BACKUP_REQUEST__INIT;
    Earshot__V1__LibraryBackupResponse *b = (Earshot__V1__LibraryBackupResponse *)ok_call(t, admin, &earshot_library_backup, &backup.base);
    if (b) {
        CHECK(t, b->bytes > 0 && strlen(b->sha256) == 64 && b->items >= 1, "backup %" PRIu64 " bytes", b->bytes);
        earshot_message_free(&b->base);
    }
    Earshot__V1__DeleteLibraryOwnerRequest del = EARSHOT__V1__DELETE_LIBRARY_OWNER_REQUEST__INIT;
    del.owner = "operator";
    w = (Earshot__V1__LibraryWriteResponse *)ok_call(t, admin, &earshot_library_delete_owner, &del.base);
    if (w) {
        CHECK(t, w->item_count == 0, "deleted: %u left", w->item_count);
        earshot_message_free(&w->base);
    }
done:
    earshot_client_close(op);
    earshot_client_close(admin);
}

/* A key the daemon does not know: the CURVE handshake fails, and calls end at their deadline
 * with a message that says so, instead of hanging; its subscriber hears nothing. */
static void unknown_key_refused(test_tally *t) {
    earshot_client *c = open_client(t, "stranger");
    if (c == NULL) return;
    earshot_status st;
    int64_t start = es_now_ms();
    Earshot__V1__ServingStatus serving;
    CHECK(t, earshot_check_health(c, NULL, &serving, 1500, &st) == EARSHOT_DEADLINE_EXCEEDED, "%s %s",
          earshot_code_name(st.code), st.message);
    int64_t took = es_now_ms() - start;
    CHECK(t, took >= 1400 && took < 4000, "refusal took %" PRId64 " ms", took);
    CHECK(t, strstr(st.message, "no connection") && strstr(st.message, "allow-list"), "%s", st.message);
    fprintf(stderr, "  refused: %s\n", st.message);
    earshot_client_close(c);
    earshot_options o = options_for("stranger");
    earshot_subscriber *sub = NULL;
    CHECK(t, earshot_subscriber_open(&o, NULL, 0, &sub, &st) == EARSHOT_OK, "%s", st.message);
    if (sub) {
        Earshot__V1__EventEnvelope *event = NULL;
        CHECK(t, earshot_subscriber_next(sub, &event, 2500) == EARSHOT_NEXT_WAIT && event == NULL,
              "a refused subscriber heard an event");
        earshot_subscriber_close(sub);
    }
    /* The same for a client with the right key but the wrong server key. */
    o = options_for("viewer");
    o.server_key = "J>DK8Ou]A/(D}ef[)Il$CcAjw@jm2f^^tc7Oftlt";
    CHECK(t, earshot_client_open(&o, &c, &st) == EARSHOT_OK, "%s", st.message);
    if (c) {
        CHECK(t, earshot_ping(c, 1000, NULL, &st) == EARSHOT_DEADLINE_EXCEEDED, "wrong server key: %s",
              earshot_code_name(st.code));
        earshot_client_close(c);
    }
}

static void subscriber_hears_heartbeats(test_tally *t) {
    earshot_options o = options_for("viewer");
    const char *topics[] = {EARSHOT_TOPIC_HEARTBEAT};
    earshot_subscriber *sub = NULL;
    earshot_status st;
    CHECK(t, earshot_subscriber_open(&o, topics, 1, &sub, &st) == EARSHOT_OK, "%s", st.message);
    if (sub == NULL) return;
    Earshot__V1__EventEnvelope *event = NULL;
    CHECK(t, earshot_subscriber_next(sub, &event, 5000) == EARSHOT_NEXT_ITEM && event, "no heartbeat in 5 s");
    if (event) {
        CHECK(t, strcmp(event->topic, EARSHOT_TOPIC_HEARTBEAT) == 0 &&
                     event->body_case == EARSHOT__V1__EVENT_ENVELOPE__BODY_HEARTBEAT && event->heartbeat->n_heads > 0,
              "topic %s", event->topic);
        earshot_message_free(&event->base);
    }
    CHECK(t, earshot_subscriber_receives(sub, EARSHOT_TOPIC_HEARTBEAT) && !earshot_subscriber_receives(sub, EARSHOT_TOPIC_MATCH),
          "receives");
    earshot_subscriber_close(sub);
}

/* Polls the follower until `want` says stop or `ms` pass; returns whether it stopped. */
static bool poll_until(earshot_follower *f, earshot_update *u, int ms, bool (*want)(const earshot_update *, uint64_t),
                       uint64_t arg, int *events) {
    int64_t end = es_now_ms() + ms;
    while (es_now_ms() < end) {
        if (earshot_follower_poll(f, u, 200) != EARSHOT_NEXT_ITEM) continue;
        if (u->kind == EARSHOT_UPDATE_EVENT && events) (*events)++;
        if (want(u, arg)) return true;
    }
    return false;
}

static bool is_snapshot(const earshot_update *u, uint64_t unused) {
    (void)unused;
    return u->kind == EARSHOT_UPDATE_SNAPSHOT;
}
static bool is_new_epoch_snapshot(const earshot_update *u, uint64_t old) {
    return u->kind == EARSHOT_UPDATE_SNAPSHOT && u->snapshot->epoch != old;
}
static bool is_match_event_of(const earshot_update *u, uint64_t epoch) {
    return u->kind == EARSHOT_UPDATE_EVENT && u->event->epoch == epoch &&
           u->event->body_case == EARSHOT__V1__EVENT_ENVELOPE__BODY_MATCH;
}

/* Follow events; restart the daemon midway: the follower notices the new epoch and resnapshots. */
static void follower_across_restart(test_tally *t) {
    earshot_options o = options_for("viewer");
    earshot_follower *f = NULL;
    earshot_status st;
    const char *topics[] = {EARSHOT_TOPIC_MATCH, EARSHOT_TOPIC_SESSION, EARSHOT_TOPIC_CATALOG, EARSHOT_TOPIC_CUE,
                            EARSHOT_TOPIC_LIBRARY};
    CHECK(t, earshot_follower_open(&o, topics, 5, &f, &st) == EARSHOT_OK, "%s", st.message);
    earshot_client *op = open_client(t, "operator");
    earshot_stream *watch = NULL;
    if (f == NULL || op == NULL) goto done;
    earshot_update u;
    CHECK(t, poll_until(f, &u, 10000, is_snapshot, 0, NULL), "no first snapshot");
    CHECK(t, strcmp(u.reason, "start") == 0, "reason %s", u.reason);
    uint64_t first = earshot_follower_epoch(f);
    CHECK(t, first != 0 && earshot_follower_synced(f) && earshot_follower_session(f) != NULL, "epoch %" PRIu64, first);
    /* A Match makes a match/ event; the follower delivers it in order. */
    Earshot__V1__MatchResult *result = NULL;
    CHECK(t, earshot_match(op, false, &result, 0, &st) == EARSHOT_OK, "%s", st.message);
    earshot_message_free(result ? &result->base : NULL);
    int events = 0;
    CHECK(t, poll_until(f, &u, 10000, is_match_event_of, first, &events), "no match event");
    CHECK(t, earshot_follower_last_match(f) != NULL, "last match");
    /* A stream open across the restart ends UNAVAILABLE: the daemon's END while it shuts down,
     * or, when its connection drops first, here ("the connection … was lost"). */
    Earshot__V1__HealthCheckRequest hreq = EARSHOT__V1__HEALTH_CHECK_REQUEST__INIT;
    CHECK(t, earshot_stream_open(op, &earshot_health_watch, &hreq.base, 0, &watch, &st) == EARSHOT_OK, "%s",
          st.message);
    ProtobufCMessage *item = NULL;
    CHECK(t, watch && earshot_stream_next(watch, &item, 5000, &st) == EARSHOT_NEXT_ITEM, "health watch: %s",
          st.message);
    earshot_message_free(item);
    fprintf(stderr, "  restarting the daemon (%s)\n", restart);
    CHECK(t, system(restart) == 0, "restart failed");
    CHECK(t, poll_until(f, &u, 30000, is_new_epoch_snapshot, first, NULL), "no snapshot of a new epoch after restart");
    uint64_t second = earshot_follower_epoch(f);
    fprintf(stderr, "  resnapshot after restart: %s (epoch %" PRIu64 " -> %" PRIu64 ")\n", u.reason, first, second);
    CHECK(t, second != first && second == u.snapshot->epoch, "epoch %" PRIu64 " -> %" PRIu64, first, second);
    earshot_follower_stats stats;
    earshot_follower_counters(f, &stats);
    CHECK(t, stats.epoch_changes == 1 && stats.snapshots >= 2, "epoch changes %" PRIu64 ", snapshots %" PRIu64,
          stats.epoch_changes, stats.snapshots);
    CHECK(t, earshot_follower_last_match(f) == NULL, "the old epoch's match is forgotten");
    earshot_next next = EARSHOT_NEXT_WAIT;
    for (int i = 0; watch && i < 20 && (next = earshot_stream_next(watch, &item, 1000, &st)) != EARSHOT_NEXT_END; i++)
        if (next == EARSHOT_NEXT_ITEM) earshot_message_free(item);
    CHECK(t, next == EARSHOT_NEXT_END && st.code == EARSHOT_UNAVAILABLE, "the stream across the restart: %s %s",
          next == EARSHOT_NEXT_END ? earshot_code_name(st.code) : "not ended", st.message);
    fprintf(stderr, "  stream across the restart: %s: %s\n", earshot_code_name(st.code), st.message);
    /* Events of the new epoch flow again (the operator client reconnected by itself). */
    result = NULL;
    for (int i = 0; i < 20 && earshot_match(op, false, &result, 2000, &st) != EARSHOT_OK; i++) {}
    earshot_message_free(result ? &result->base : NULL);
    CHECK(t, poll_until(f, &u, 15000, is_match_event_of, second, NULL), "no match event of the new epoch");
done:
    earshot_stream_close(watch);
    earshot_client_close(op);
    earshot_follower_close(f);
}

static const char *need(const char *name) {
    const char *value = getenv(name);
    if (value == NULL || value[0] == '\0') {
        fprintf(stderr, "test-client: %s is not set (tests/run-tests.sh sets it)\n", name);
        exit(2);
    }
    return value;
}

int main(int argc, char **argv) {
    rpc = need("EARSHOT_RPC");
    events = need("EARSHOT_EVENTS");
    server_key = need("EARSHOT_SERVER_KEY");
    keys = need("EARSHOT_KEYS");
    catalog_path = need("EARSHOT_TEST_CATALOG");
    catalog_sha256 = need("EARSHOT_TEST_CATALOG_SHA256");
    item_id = need("EARSHOT_TEST_ITEM");
    restart = need("EARSHOT_RESTART");
    const char *only = argc > 1 ? argv[1] : NULL; /* one test by name, for debugging */
    test_tally tally = {0, 0, 0};
#define RUN(f) \
    if (only == NULL || strcmp(only, #f) == 0) TEST(&tally, f)
    RUN(ping_and_health);
    RUN(session_snapshot);
    RUN(recognizer);
    RUN(streams_and_cancel);
    RUN(catalogs);
    RUN(cues);
    RUN(library);
    RUN(unknown_key_refused);
    RUN(subscriber_hears_heartbeats);
    RUN(follower_across_restart); /* last: it restarts the daemon */
    printf("daemon: %d passed, %d failed\n", tally.passed, tally.failed);
    return tally.failed || tally.passed == 0 ? 1 : 0;
}
