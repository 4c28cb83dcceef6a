/* The client against fake daemons run by this process (a ROUTER for calls, a PUB for events), for
 * what a real earshotd does not do on demand: a burst of replies, a lost item, a connection that
 * drops under a stream, a daemon that stops answering PINGs, a reader that is away for a while, a
 * follower polled rarely, a context shut down. No CURVE: the fakes are on loopback.
 * Usage: test-fake [TEST] (one test by name, for debugging). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../src/internal.h"
#include "check.h"

enum fake_mode {
    FAKE_BURST, /* Watch: `burst` items and END at once; Check: answered */
    FAKE_GAP,   /* Watch: items 0, 1 and 3 */
    FAKE_HOLD,  /* Watch: item 0, then nothing; Check: never answered */
};

typedef struct fake {
    void *context, *router, *pub;
    char endpoint[64], events[64];
    pthread_t thread;
    enum fake_mode mode;
    int burst;
    atomic_bool stop, mute;
    atomic_llong restart_at; /* monotonic ms: close the ROUTER then and bind another on its port */
    /* Events (with `pub`): epoch 7; a match/ event every 300 ms, a heartbeat every second. */
    uint64_t match_seq, hb_seq, global_seq;
} fake;

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void *bind_router(fake *f, const char *endpoint) {
    void *router = zmq_socket(f->context, ZMQ_ROUTER);
    int zero = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(router, ZMQ_SNDHWM, &zero, sizeof zero); /* a burst is never dropped here */
    for (int i = 0; i < 100; i++) { /* the port of a socket just closed may take a moment */
        if (zmq_bind(router, endpoint) == 0) return router;
        sleep_ms(50);
    }
    zmq_close(router);
    return NULL;
}

static void send_reply(fake *f, const zmq_msg_t *routing, uint64_t id, Earshot__V1__ResponseEnvelope__Kind kind,
                       uint32_t seq, const ProtobufCMessage *payload, int code, const char *message) {
    static uint8_t body[4096], frame[8192]; /* the fake's thread only */
    Earshot__V1__ResponseEnvelope reply = EARSHOT__V1__RESPONSE_ENVELOPE__INIT;
    reply.request_id = id;
    reply.kind = kind;
    reply.item_seq = seq;
    if (payload != NULL) {
        reply.payload.len = protobuf_c_message_pack(payload, body);
        reply.payload.data = body;
    }
    Earshot__V1__Status status = EARSHOT__V1__STATUS__INIT;
    if (code != 0 || message != NULL) {
        status.code = code;
        status.message = (char *)(message ? message : "");
        reply.status = &status;
    }
    size_t n = earshot__v1__response_envelope__pack(&reply, frame);
    zmq_send(f->router, zmq_msg_data((zmq_msg_t *)routing), zmq_msg_size((zmq_msg_t *)routing), ZMQ_SNDMORE);
    zmq_send(f->router, EARSHOT_SIGNATURE, strlen(EARSHOT_SIGNATURE), ZMQ_SNDMORE);
    zmq_send(f->router, frame, n, 0);
}

static void publish(fake *f, const char *topic, Earshot__V1__EventEnvelope *event) {
    static uint8_t frame[4096];
    event->topic = (char *)topic;
    event->epoch = 7;
    event->global_seq = ++f->global_seq;
    size_t n = earshot__v1__event_envelope__pack(event, frame);
    zmq_send(f->pub, topic, strlen(topic), ZMQ_SNDMORE);
    zmq_send(f->pub, frame, n, 0);
}

static void publish_match(fake *f) {
    Earshot__V1__MatchResult match = EARSHOT__V1__MATCH_RESULT__INIT;
    match.outcome = EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_NO_MATCH;
    Earshot__V1__EventEnvelope event = EARSHOT__V1__EVENT_ENVELOPE__INIT;
    event.seq = ++f->match_seq;
    event.body_case = EARSHOT__V1__EVENT_ENVELOPE__BODY_MATCH;
    event.match = &match;
    publish(f, EARSHOT_TOPIC_MATCH, &event);
}

static void publish_heartbeat(fake *f) {
    Earshot__V1__Heartbeat__HeadsEntry match = EARSHOT__V1__HEARTBEAT__HEADS_ENTRY__INIT,
                                       hb = EARSHOT__V1__HEARTBEAT__HEADS_ENTRY__INIT;
    match.key = EARSHOT_TOPIC_MATCH;
    match.value = f->match_seq;
    hb.key = EARSHOT_TOPIC_HEARTBEAT;
    hb.value = f->hb_seq + 1;
    Earshot__V1__Heartbeat__HeadsEntry *heads[] = {&match, &hb};
    Earshot__V1__Heartbeat beat = EARSHOT__V1__HEARTBEAT__INIT;
    beat.n_heads = 2;
    beat.heads = heads;
    Earshot__V1__EventEnvelope event = EARSHOT__V1__EVENT_ENVELOPE__INIT;
    event.seq = ++f->hb_seq;
    event.body_case = EARSHOT__V1__EVENT_ENVELOPE__BODY_HEARTBEAT;
    event.heartbeat = &beat;
    publish(f, EARSHOT_TOPIC_HEARTBEAT, &event);
}

static void answer(fake *f, const zmq_msg_t *routing, const Earshot__V1__RequestEnvelope *request) {
    uint64_t id = request->request_id;
    const Earshot__V1__ResponseEnvelope__Kind message = EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_MESSAGE,
                                              end = EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_END;
    if (request->control == EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_PING) {
        if (!atomic_load(&f->mute)) send_reply(f, routing, id, EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_PONG, 0, NULL, 0, NULL);
        return;
    }
    if (request->control == EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_CANCEL) {
        send_reply(f, routing, id, end, 0, NULL, EARSHOT_CANCELLED, "the client cancelled the call");
        return;
    }
    Earshot__V1__HealthCheckResponse serving = EARSHOT__V1__HEALTH_CHECK_RESPONSE__INIT;
    serving.status = EARSHOT__V1__SERVING_STATUS__SERVING_STATUS_SERVING;
    const char *method = request->method ? request->method : "";
    if (strcmp(method, earshot_health_watch.path) == 0) {
        if (f->mode == FAKE_BURST) {
            for (int i = 0; i < f->burst; i++) send_reply(f, routing, id, message, (uint32_t)i, &serving.base, 0, NULL);
            send_reply(f, routing, id, end, (uint32_t)f->burst, NULL, 0, NULL);
        } else if (f->mode == FAKE_GAP) {
            for (uint32_t seq = 0; seq < 4; seq++)
                if (seq != 2) send_reply(f, routing, id, message, seq, &serving.base, 0, NULL);
        } else {
            send_reply(f, routing, id, message, 0, &serving.base, 0, NULL);
        }
    } else if (strcmp(method, earshot_health_check.path) == 0) {
        if (f->mode != FAKE_HOLD) send_reply(f, routing, id, end, 0, &serving.base, 0, NULL);
    } else if (strcmp(method, earshot_session_get_snapshot.path) == 0) {
        Earshot__V1__SessionSnapshot__TopicSeqEntry match = EARSHOT__V1__SESSION_SNAPSHOT__TOPIC_SEQ_ENTRY__INIT,
                                                    hb = EARSHOT__V1__SESSION_SNAPSHOT__TOPIC_SEQ_ENTRY__INIT;
        match.key = EARSHOT_TOPIC_MATCH;
        match.value = f->match_seq;
        hb.key = EARSHOT_TOPIC_HEARTBEAT;
        hb.value = f->hb_seq;
        Earshot__V1__SessionSnapshot__TopicSeqEntry *entries[] = {&match, &hb};
        Earshot__V1__SessionSnapshot snapshot = EARSHOT__V1__SESSION_SNAPSHOT__INIT;
        snapshot.epoch = 7;
        snapshot.n_topic_seq = 2;
        snapshot.topic_seq = entries;
        send_reply(f, routing, id, end, 0, &snapshot.base, 0, NULL);
    } else {
        send_reply(f, routing, id, end, 0, NULL, EARSHOT_UNIMPLEMENTED, "unknown method");
    }
}

static void *fake_run(void *argument) {
    fake *f = argument;
    int64_t next_match = es_now_ms(), next_beat = es_now_ms();
    while (!atomic_load(&f->stop)) {
        int64_t now = es_now_ms();
        int64_t restart = atomic_load(&f->restart_at);
        if (restart != 0 && now >= restart) {
            atomic_store(&f->restart_at, 0);
            zmq_close(f->router);
            f->router = bind_router(f, f->endpoint);
            if (f->router == NULL) break;
        }
        if (f->pub != NULL) {
            if (now >= next_match) {
                publish_match(f);
                next_match += 300;
            }
            if (now >= next_beat) {
                publish_heartbeat(f);
                next_beat += 1000;
            }
        }
        zmq_pollitem_t item = {f->router, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 20) <= 0) continue;
        zmq_msg_t frames[3];
        int count = 0;
        bool more = true;
        while (more) {
            zmq_msg_t frame;
            zmq_msg_init(&frame);
            if (zmq_msg_recv(&frame, f->router, 0) < 0) {
                zmq_msg_close(&frame);
                break;
            }
            more = zmq_msg_more(&frame);
            if (count < 3) frames[count++] = frame;
            else zmq_msg_close(&frame);
        }
        if (count == 3) {
            Earshot__V1__RequestEnvelope *request =
                earshot__v1__request_envelope__unpack(NULL, zmq_msg_size(&frames[2]), zmq_msg_data(&frames[2]));
            if (request != NULL) {
                answer(f, &frames[0], request);
                earshot__v1__request_envelope__free_unpacked(request, NULL);
            }
        }
        for (int i = 0; i < count; i++) zmq_msg_close(&frames[i]);
    }
    return NULL;
}

static fake *fake_start(enum fake_mode mode, bool events) {
    fake *f = calloc(1, sizeof *f);
    if (f == NULL) abort();
    f->mode = mode;
    f->burst = 1000;
    f->context = zmq_ctx_new();
    f->router = bind_router(f, "tcp://127.0.0.1:*");
    size_t size = sizeof f->endpoint;
    if (f->router == NULL || zmq_getsockopt(f->router, ZMQ_LAST_ENDPOINT, f->endpoint, &size) != 0) abort();
    if (events) {
        f->pub = zmq_socket(f->context, ZMQ_PUB);
        int zero = 0;
        zmq_setsockopt(f->pub, ZMQ_LINGER, &zero, sizeof zero);
        size = sizeof f->events;
        if (zmq_bind(f->pub, "tcp://127.0.0.1:*") != 0 ||
            zmq_getsockopt(f->pub, ZMQ_LAST_ENDPOINT, f->events, &size) != 0)
            abort();
    }
    if (pthread_create(&f->thread, NULL, fake_run, f) != 0) abort();
    return f;
}

static void fake_stop(fake *f) {
    atomic_store(&f->stop, true);
    pthread_join(f->thread, NULL);
    if (f->router) zmq_close(f->router);
    if (f->pub) zmq_close(f->pub);
    zmq_ctx_term(f->context);
    free(f);
}

static earshot_client *client_of(test_tally *t, const fake *f, void *context) {
    earshot_options o;
    earshot_options_init(&o);
    o.endpoint = f->endpoint;
    o.timeout_ms = 5000;
    o.zmq_context = context;
    earshot_client *c = NULL;
    earshot_status st;
    CHECK(t, earshot_client_open(&o, &c, &st) == EARSHOT_OK, "open: %s", st.message);
    return c;
}

static earshot_stream *watch(test_tally *t, earshot_client *c) {
    Earshot__V1__HealthCheckRequest request = EARSHOT__V1__HEALTH_CHECK_REQUEST__INIT;
    earshot_stream *s = NULL;
    earshot_status st;
    CHECK(t, earshot_stream_open(c, &earshot_health_watch, &request.base, 0, &s, &st) == EARSHOT_OK, "watch: %s",
          st.message);
    return s;
}

/* Reads a stream to its end (or `ms`): the items, and the end's status in *st. */
static int read_to_end(earshot_stream *s, int ms, earshot_next *last, earshot_status *st) {
    int items = 0;
    int64_t end = es_now_ms() + ms;
    ProtobufCMessage *item;
    while ((*last = earshot_stream_next(s, &item, 1000, st)) != EARSHOT_NEXT_END && es_now_ms() < end) {
        if (*last == EARSHOT_NEXT_ITEM) {
            items++;
            earshot_message_free(item);
        }
    }
    return items;
}

/* A burst of 1000 replies (WatchLibrary replays up to 1000 changes at once) is read whole by a
 * reader that keeps reading: it is not a stream "not read fast enough". */
static void burst_read_whole(test_tally *t) {
    fake *f = fake_start(FAKE_BURST, false);
    earshot_client *c = client_of(t, f, NULL);
    earshot_stream *s = c ? watch(t, c) : NULL;
    if (s != NULL) {
        earshot_next last;
        earshot_status st;
        int items = read_to_end(s, 20000, &last, &st);
        CHECK(t, last == EARSHOT_NEXT_END && st.code == EARSHOT_OK, "end: %s %s", earshot_code_name(st.code),
              st.message);
        CHECK(t, items == 1000, "%d items of 1000", items);
    }
    earshot_stream_close(s);
    earshot_client_close(c);
    fake_stop(f);
}

/* Two streams read in turn, each with a burst of 1000: neither is ended for the other's sake
 * (a full queue of a stream whose reader is about is waited for). */
static void streams_read_in_turn(test_tally *t) {
    fake *f = fake_start(FAKE_BURST, false);
    earshot_client *c = client_of(t, f, NULL);
    earshot_stream *a = c ? watch(t, c) : NULL, *b = c ? watch(t, c) : NULL;
    if (a != NULL && b != NULL) {
        int items[2] = {0, 0};
        bool ended[2] = {false, false};
        earshot_status st[2];
        int64_t end = es_now_ms() + 30000;
        while ((!ended[0] || !ended[1]) && es_now_ms() < end) {
            for (int i = 0; i < 2; i++) {
                ProtobufCMessage *item;
                earshot_next next = ended[i] ? EARSHOT_NEXT_END : earshot_stream_next(i ? b : a, &item, 100, &st[i]);
                if (next == EARSHOT_NEXT_ITEM) {
                    items[i]++;
                    earshot_message_free(item);
                }
                ended[i] = next == EARSHOT_NEXT_END;
            }
        }
        for (int i = 0; i < 2; i++)
            CHECK(t, ended[i] && st[i].code == EARSHOT_OK && items[i] == 1000, "stream %d: %d items, %s %s", i,
                  items[i], ended[i] ? earshot_code_name(st[i].code) : "not ended", ended[i] ? st[i].message : "");
    }
    earshot_stream_close(a);
    earshot_stream_close(b);
    earshot_client_close(c);
    fake_stop(f);
}

/* Of two streams with a burst each, only the second is read: the first, never read, is given way
 * for 5 s after it was opened, then ended RESOURCE_EXHAUSTED (its queued items still delivered);
 * the second is read whole. */
static void unread_stream_ends_after_a_while(test_tally *t) {
    fake *f = fake_start(FAKE_BURST, false);
    earshot_client *c = client_of(t, f, NULL);
    earshot_stream *a = c ? watch(t, c) : NULL, *b = c ? watch(t, c) : NULL;
    if (a != NULL && b != NULL) {
        earshot_next last;
        earshot_status st;
        int64_t start = es_now_ms();
        int items = read_to_end(b, 20000, &last, &st);
        int64_t took = es_now_ms() - start;
        CHECK(t, last == EARSHOT_NEXT_END && st.code == EARSHOT_OK && items == 1000, "read: %d items, %s %s", items,
              earshot_code_name(st.code), st.message);
        CHECK(t, took >= 4000 && took < 15000, "read whole after %" PRId64 " ms", took);
        items = read_to_end(a, 5000, &last, &st);
        CHECK(t, last == EARSHOT_NEXT_END && st.code == EARSHOT_RESOURCE_EXHAUSTED && items == EARSHOT_STREAM_QUEUE - 1,
              "unread: %d items, %s %s", items, earshot_code_name(st.code), st.message);
    }
    earshot_stream_close(a);
    earshot_stream_close(b);
    earshot_client_close(c);
    fake_stop(f);
}

/* A stream not read while a unary call waits behind its burst: the call is answered, the stream
 * ends RESOURCE_EXHAUSTED — after the items that fitted in its queue are delivered. */
static void overflow_delivers_what_came(test_tally *t) {
    fake *f = fake_start(FAKE_BURST, false);
    earshot_client *c = client_of(t, f, NULL);
    earshot_stream *s = c ? watch(t, c) : NULL;
    if (s != NULL) {
        earshot_status st;
        Earshot__V1__ServingStatus serving = 0;
        CHECK(t, earshot_check_health(c, NULL, &serving, 5000, &st) == EARSHOT_OK, "check: %s", st.message);
        earshot_next last;
        int items = read_to_end(s, 10000, &last, &st);
        CHECK(t, last == EARSHOT_NEXT_END && st.code == EARSHOT_RESOURCE_EXHAUSTED, "end: %s %s",
              earshot_code_name(st.code), st.message);
        CHECK(t, items == EARSHOT_STREAM_QUEUE - 1, "%d items delivered before the end", items);
    }
    earshot_stream_close(s);
    earshot_client_close(c);
    fake_stop(f);
}

/* Items 0, 1, 3: the two before the gap are delivered, then DATA_LOSS. */
static void gap_delivers_items_before_it(test_tally *t) {
    fake *f = fake_start(FAKE_GAP, false);
    earshot_client *c = client_of(t, f, NULL);
    earshot_stream *s = c ? watch(t, c) : NULL;
    if (s != NULL) {
        sleep_ms(300); /* all three have arrived */
        earshot_next last;
        earshot_status st;
        int items = read_to_end(s, 10000, &last, &st);
        CHECK(t, items == 2, "%d items before the gap", items);
        CHECK(t, last == EARSHOT_NEXT_END && st.code == EARSHOT_DATA_LOSS && strstr(st.message, "item 2"), "end: %s %s",
              earshot_code_name(st.code), st.message);
    }
    earshot_stream_close(s);
    earshot_client_close(c);
    fake_stop(f);
}

/* With EARSHOT_MAX_CALLS streams open, a PING still goes (it is not a call); one more call does not. */
static void ping_takes_no_call(test_tally *t) {
    fake *f = fake_start(FAKE_HOLD, false);
    earshot_client *c = client_of(t, f, NULL);
    earshot_stream *streams[EARSHOT_MAX_CALLS] = {NULL};
    earshot_status st;
    for (int i = 0; c && i < EARSHOT_MAX_CALLS; i++) streams[i] = watch(t, c);
    if (c) {
        double rtt;
        CHECK(t, earshot_ping(c, 2000, &rtt, &st) == EARSHOT_OK, "ping with %d streams open: %s", EARSHOT_MAX_CALLS,
              st.message);
        Earshot__V1__HealthCheckRequest request = EARSHOT__V1__HEALTH_CHECK_REQUEST__INIT;
        earshot_stream *more = NULL;
        CHECK(t, earshot_stream_open(c, &earshot_health_watch, &request.base, 0, &more, &st) ==
                     EARSHOT_RESOURCE_EXHAUSTED && more == NULL,
              "a 17th call: %s", earshot_code_name(st.code));
    }
    for (int i = 0; i < EARSHOT_MAX_CALLS; i++) earshot_stream_close(streams[i]);
    earshot_client_close(c);
    fake_stop(f);
}

/* The daemon's end of the connection closes (a restart) under a stream and a unary call: both end
 * UNAVAILABLE at once (the daemon cancelled them), although PINGs are answered again on the new
 * connection; the client goes on there. */
static void connection_lost_ends_calls(test_tally *t) {
    fake *f = fake_start(FAKE_HOLD, false);
    earshot_client *c = client_of(t, f, NULL);
    earshot_stream *s = c ? watch(t, c) : NULL;
    earshot_status st;
    ProtobufCMessage *item = NULL;
    if (s != NULL) {
        CHECK(t, earshot_stream_next(s, &item, 3000, &st) == EARSHOT_NEXT_ITEM, "item 0: %s", st.message);
        earshot_message_free(item);
        atomic_store(&f->restart_at, es_now_ms());
        int64_t start = es_now_ms();
        earshot_next next;
        while ((next = earshot_stream_next(s, &item, 8000, &st)) == EARSHOT_NEXT_ITEM) earshot_message_free(item);
        int64_t took = es_now_ms() - start;
        CHECK(t, next == EARSHOT_NEXT_END && st.code == EARSHOT_UNAVAILABLE && strstr(st.message, "lost"),
              "stream after the drop: %s %s", next == EARSHOT_NEXT_WAIT ? "still waiting" : earshot_code_name(st.code),
              st.message);
        CHECK(t, took < 4000, "the stream ended after %" PRId64 " ms", took);
        earshot_stream_close(s);
        s = NULL;
    }
    if (c != NULL) {
        double rtt;
        CHECK(t, earshot_ping(c, 5000, &rtt, &st) == EARSHOT_OK, "ping on the new connection: %s", st.message);
        /* A unary call the daemon holds, and the connection drops under it. */
        atomic_store(&f->restart_at, es_now_ms() + 500);
        int64_t start = es_now_ms();
        Earshot__V1__ServingStatus serving;
        int code = earshot_check_health(c, NULL, &serving, 8000, &st);
        int64_t took = es_now_ms() - start;
        CHECK(t, code == EARSHOT_UNAVAILABLE && strstr(st.message, "lost"), "unary after the drop: %s %s",
              earshot_code_name(code), st.message);
        CHECK(t, took < 4000, "the call ended after %" PRId64 " ms", took);
        /* And a new stream on the new connection works. */
        CHECK(t, earshot_ping(c, 5000, &rtt, &st) == EARSHOT_OK, "ping: %s", st.message);
        s = watch(t, c);
        CHECK(t, s && earshot_stream_next(s, &item, 3000, &st) == EARSHOT_NEXT_ITEM, "a new stream: %s", st.message);
        earshot_message_free(item);
    }
    earshot_stream_close(s);
    earshot_client_close(c);
    fake_stop(f);
}

typedef struct silent_run {
    test_tally *t;
    fake *f;
    int64_t took;
    earshot_next next;
    earshot_status status;
} silent_run;

/* A daemon that stops answering PINGs (its connection alive): the stream ends UNAVAILABLE once a
 * PING (sent after 5 s without a reply) is unanswered for 10 s. */
static void *silent_daemon(void *argument) {
    silent_run *run = argument;
    earshot_client *c = client_of(run->t, run->f, NULL);
    earshot_stream *s = c ? watch(run->t, c) : NULL;
    ProtobufCMessage *item = NULL;
    run->next = EARSHOT_NEXT_WAIT;
    if (s != NULL && earshot_stream_next(s, &item, 3000, &run->status) == EARSHOT_NEXT_ITEM) {
        earshot_message_free(item);
        atomic_store(&run->f->mute, true);
        int64_t start = es_now_ms();
        while ((run->next = earshot_stream_next(s, &item, 30000, &run->status)) == EARSHOT_NEXT_ITEM)
            earshot_message_free(item);
        run->took = es_now_ms() - start;
    }
    earshot_stream_close(s);
    earshot_client_close(c);
    return NULL;
}

/* A reader away for longer than the silence rule's 15 s (its PING answered meanwhile, unread) finds
 * its stream alive; a daemon that really stops answering is still noticed (beside it, in a thread). */
static void away_reader_and_silent_daemon(test_tally *t) {
    fake *f = fake_start(FAKE_HOLD, false), *mute = fake_start(FAKE_HOLD, false);
    silent_run run = {t, mute, 0, EARSHOT_NEXT_WAIT, {0, ""}};
    pthread_t thread;
    if (pthread_create(&thread, NULL, silent_daemon, &run) != 0) abort();
    earshot_client *c = client_of(t, f, NULL);
    earshot_stream *s = c ? watch(t, c) : NULL;
    earshot_status st;
    ProtobufCMessage *item = NULL;
    if (s != NULL) {
        CHECK(t, earshot_stream_next(s, &item, 3000, &st) == EARSHOT_NEXT_ITEM, "item 0: %s", st.message);
        earshot_message_free(item);
        /* Waits 5 s: the keepalive PING goes at the end; its PONG comes while the reader is away. */
        CHECK(t, earshot_stream_next(s, &item, 5000, &st) == EARSHOT_NEXT_WAIT, "waiting: %s", st.message);
        sleep_ms(11000);
        earshot_next next = earshot_stream_next(s, &item, 500, &st);
        CHECK(t, next == EARSHOT_NEXT_WAIT, "after 16 s away: %s %s", earshot_code_name(st.code), st.message);
        if (next == EARSHOT_NEXT_ITEM) earshot_message_free(item);
    }
    earshot_stream_close(s);
    earshot_client_close(c);
    pthread_join(thread, NULL);
    CHECK(t, run.next == EARSHOT_NEXT_END && run.status.code == EARSHOT_UNAVAILABLE &&
                 strstr(run.status.message, "went silent"),
          "silent daemon: %s %s", earshot_code_name(run.status.code), run.status.message);
    CHECK(t, run.took >= 13000 && run.took < 20000, "silence noticed after %" PRId64 " ms", run.took);
    fake_stop(mute);
    fake_stop(f);
}

/* A follower polled every 4 s (heartbeats every second, judged after 3 s) takes no snapshot for a
 * heartbeat that waits in its queue, and delivers every event in order. */
static void follower_polled_rarely(test_tally *t) {
    fake *f = fake_start(FAKE_BURST, true);
    earshot_options o;
    earshot_options_init(&o);
    o.endpoint = f->endpoint;
    o.events_endpoint = f->events;
    const char *topics[] = {EARSHOT_TOPIC_MATCH};
    earshot_follower *follower = NULL;
    earshot_status st;
    CHECK(t, earshot_follower_open(&o, topics, 1, &follower, &st) == EARSHOT_OK, "%s", st.message);
    earshot_update u;
    int64_t end = es_now_ms() + 10000;
    bool event = false;
    while (follower && !event && es_now_ms() < end)
        event = earshot_follower_poll(follower, &u, 200) == EARSHOT_NEXT_ITEM && u.kind == EARSHOT_UPDATE_EVENT;
    CHECK(t, event, "no event in 10 s");
    earshot_follower_stats before, after;
    if (follower) earshot_follower_counters(follower, &before);
    uint64_t last = event ? u.event->seq : 0;
    int events = 0, snapshots = 0;
    for (int round = 0; event && round < 3; round++) {
        sleep_ms(4000);
        while (earshot_follower_poll(follower, &u, 0) == EARSHOT_NEXT_ITEM) {
            if (u.kind == EARSHOT_UPDATE_SNAPSHOT) {
                snapshots++;
                fprintf(stderr, "  snapshot after %d s away: %s\n", 4, u.reason);
            } else if (u.kind == EARSHOT_UPDATE_EVENT) {
                CHECK(t, u.event->seq == last + 1, "seq %" PRIu64 " after %" PRIu64, u.event->seq, last);
                last = u.event->seq;
                events++;
            }
        }
    }
    if (follower) earshot_follower_counters(follower, &after);
    CHECK(t, snapshots == 0 && after.snapshots == before.snapshots, "%d snapshots", snapshots);
    CHECK(t, events >= 30, "%d events in 12 s", events);
    earshot_follower_close(follower);
    fake_stop(f);
}

/* A context shut down (zmq_ctx_shutdown) under a client and a subscriber: their waits end at once
 * (UNAVAILABLE, END) instead of spinning to their deadlines. */
static void context_shut_down(test_tally *t) {
    fake *f = fake_start(FAKE_HOLD, true);
    void *context = zmq_ctx_new();
    earshot_client *c = client_of(t, f, context);
    earshot_stream *s = c ? watch(t, c) : NULL;
    earshot_options o;
    earshot_options_init(&o);
    o.events_endpoint = f->events;
    o.zmq_context = context;
    earshot_subscriber *sub = NULL;
    earshot_status st;
    CHECK(t, earshot_subscriber_open(&o, NULL, 0, &sub, &st) == EARSHOT_OK, "%s", st.message);
    ProtobufCMessage *item = NULL;
    if (s != NULL && sub != NULL) {
        CHECK(t, earshot_stream_next(s, &item, 3000, &st) == EARSHOT_NEXT_ITEM, "item 0: %s", st.message);
        earshot_message_free(item);
        zmq_ctx_shutdown(context);
        int64_t start = es_now_ms();
        earshot_next next = earshot_stream_next(s, &item, 3000, &st);
        CHECK(t, next == EARSHOT_NEXT_END && st.code == EARSHOT_UNAVAILABLE, "stream: %d %s", next, st.message);
        CHECK(t, es_now_ms() - start < 1000, "the stream took %" PRId64 " ms", es_now_ms() - start);
        start = es_now_ms();
        CHECK(t, earshot_ping(c, 3000, NULL, &st) == EARSHOT_UNAVAILABLE, "ping: %s %s", earshot_code_name(st.code),
              st.message);
        CHECK(t, es_now_ms() - start < 1000, "the ping took %" PRId64 " ms", es_now_ms() - start);
        Earshot__V1__EventEnvelope *event = NULL;
        while ((next = earshot_subscriber_next(sub, &event, 3000)) == EARSHOT_NEXT_ITEM) earshot_message_free(&event->base);
        CHECK(t, next == EARSHOT_NEXT_END, "subscriber: %d", next);
        CHECK(t, es_now_ms() - start < 2000, "the subscriber took %" PRId64 " ms", es_now_ms() - start);
    }
    earshot_stream_close(s);
    earshot_client_close(c);
    earshot_subscriber_close(sub);
    zmq_ctx_term(context);
    fake_stop(f);
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    test_tally tally = {0, 0, 0};
#define RUN(f) \
    if (only == NULL || strcmp(only, #f) == 0) TEST(&tally, f)
    RUN(burst_read_whole);
    RUN(streams_read_in_turn);
    RUN(unread_stream_ends_after_a_while);
    RUN(overflow_delivers_what_came);
    RUN(gap_delivers_items_before_it);
    RUN(ping_takes_no_call);
    RUN(connection_lost_ends_calls);
    RUN(context_shut_down);
    RUN(follower_polled_rarely);
    RUN(away_reader_and_silent_daemon);
    printf("fake: %d passed, %d failed\n", tally.passed, tally.failed);
    return tally.failed || tally.passed == 0 ? 1 : 0;
}
