/* The events subscriber: a SUB socket, topic | EventEnvelope frames. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct earshot_subscriber {
    pthread_mutex_t lock;
    void *context, *socket;
    bool own_context;
    char endpoint[ES_ENDPOINT_MAX];
    es_topics topics;
    uint64_t received, dropped;
};

int earshot_subscriber_open(const earshot_options *options, const char *const *topics, size_t n,
                            earshot_subscriber **out, earshot_status *status) {
    if (out == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no place for the subscriber");
    *out = NULL;
    earshot_options defaults;
    if (options == NULL) {
        earshot_options_init(&defaults);
        options = &defaults;
    }
    es_curve curve;
    int code = es_curve_load(options, &curve, status);
    if (code != EARSHOT_OK) return code;
    earshot_subscriber *sub = calloc(1, sizeof *sub);
    if (sub == NULL) return es_fail(status, EARSHOT_RESOURCE_EXHAUSTED, "out of memory");
    if ((code = es_endpoint(options->events_endpoint, EARSHOT_DEFAULT_EVENTS, sub->endpoint, status)) != EARSHOT_OK)
        goto fail_early;
    if (topics == NULL || n == 0) {
        code = es_topics_add(&sub->topics, "earshot.v1/", status);
    } else {
        for (size_t i = 0; i < n && code == EARSHOT_OK; i++) code = es_topics_add(&sub->topics, topics[i], status);
    }
    if (code != EARSHOT_OK) goto fail_early;
    if (pthread_mutex_init(&sub->lock, NULL) != 0) {
        code = es_fail(status, EARSHOT_INTERNAL, "pthread_mutex_init failed");
        goto fail_early;
    }
    if ((code = es_context(options, &sub->context, &sub->own_context, status)) != EARSHOT_OK) goto fail;
    sub->socket = zmq_socket(sub->context, ZMQ_SUB);
    if (sub->socket == NULL) {
        code = es_fail(status, EARSHOT_INTERNAL, "zmq_socket: %s", zmq_strerror(zmq_errno()));
        goto fail;
    }
    if ((code = es_configure(sub->socket, &curve, status)) != EARSHOT_OK) goto fail;
    /* A deep queue: events wait here while the application is busy, rather than back up (and
     * risk libzmq 4.3.4's abort, docs/PROTOCOL.md §4). */
    int hwm = 100000;
    if (zmq_setsockopt(sub->socket, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0) {
        code = es_fail(status, EARSHOT_INTERNAL, "zmq_setsockopt(RCVHWM): %s", zmq_strerror(zmq_errno()));
        goto fail;
    }
    /* Filters before connect, so nothing published once the connection is up is missed. */
    for (size_t i = 0; i < sub->topics.count; i++) {
        if (zmq_setsockopt(sub->socket, ZMQ_SUBSCRIBE, sub->topics.names[i], strlen(sub->topics.names[i])) != 0) {
            code = es_fail(status, EARSHOT_INTERNAL, "zmq_setsockopt(SUBSCRIBE): %s", zmq_strerror(zmq_errno()));
            goto fail;
        }
    }
    if (zmq_connect(sub->socket, sub->endpoint) != 0) {
        code = es_fail(status, EARSHOT_INVALID_ARGUMENT, "cannot connect to %s: %s", sub->endpoint,
                       zmq_strerror(zmq_errno()));
        goto fail;
    }
    explicit_bzero(&curve, sizeof curve);
    *out = sub;
    return es_ok(status);
fail:
    if (sub->socket != NULL) zmq_close(sub->socket);
    if (sub->own_context && sub->context != NULL) zmq_ctx_term(sub->context);
    pthread_mutex_destroy(&sub->lock);
fail_early:
    explicit_bzero(&curve, sizeof curve);
    free(sub);
    return code;
}

/* One message from the socket, if one is there: an event, or NULL (dropped or none). */
static bool receive_one(earshot_subscriber *sub, Earshot__V1__EventEnvelope **event) {
    zmq_msg_t topic, body;
    zmq_msg_init(&topic);
    if (zmq_msg_recv(&topic, sub->socket, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&topic);
        return false;
    }
    bool more = zmq_msg_more(&topic);
    *event = NULL;
    if (more) {
        zmq_msg_init(&body);
        if (zmq_msg_recv(&body, sub->socket, 0) >= 0) {
            more = zmq_msg_more(&body);
            if (!more)
                *event = es_decode_event(zmq_msg_data(&topic), zmq_msg_size(&topic), zmq_msg_data(&body),
                                         zmq_msg_size(&body));
        }
        zmq_msg_close(&body);
    }
    zmq_msg_close(&topic);
    while (more) {
        zmq_msg_t extra;
        zmq_msg_init(&extra);
        more = zmq_msg_recv(&extra, sub->socket, 0) >= 0 && zmq_msg_more(&extra);
        zmq_msg_close(&extra);
    }
    if (*event == NULL) sub->dropped++;
    else sub->received++;
    return true;
}

earshot_next earshot_subscriber_next(earshot_subscriber *sub, Earshot__V1__EventEnvelope **event, int wait_ms) {
    if (event != NULL) *event = NULL;
    if (sub == NULL || event == NULL) return EARSHOT_NEXT_END;
    pthread_mutex_lock(&sub->lock);
    int64_t until = wait_ms < 0 ? ES_NEVER : es_now_ms() + wait_ms;
    earshot_next next = EARSHOT_NEXT_WAIT;
    for (;;) {
        /* Malformed messages are dropped as they come; the clock is looked at between batches. */
        for (int n = 0; n < 256 && receive_one(sub, event); n++) {
            if (*event != NULL) {
                next = EARSHOT_NEXT_ITEM;
                goto out;
            }
        }
        int64_t now = es_now_ms();
        if (now >= until) break;
        long wait = until == ES_NEVER ? -1 : (until - now > INT_MAX ? INT_MAX : (long)(until - now));
        zmq_pollitem_t item = {sub->socket, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, wait) < 0 && zmq_errno() != EINTR) { /* ETERM: the context is shut down */
            next = EARSHOT_NEXT_END;
            break;
        }
    }
out:
    pthread_mutex_unlock(&sub->lock);
    return next;
}

bool earshot_subscriber_receives(const earshot_subscriber *sub, const char *topic) {
    return sub != NULL && topic != NULL && es_topics_receive(&sub->topics, topic);
}

void earshot_subscriber_counters(earshot_subscriber *sub, uint64_t *received, uint64_t *dropped) {
    if (sub == NULL) return;
    pthread_mutex_lock(&sub->lock);
    if (received) *received = sub->received;
    if (dropped) *dropped = sub->dropped;
    pthread_mutex_unlock(&sub->lock);
}

void earshot_subscriber_close(earshot_subscriber *sub) {
    if (sub == NULL) return;
    zmq_close(sub->socket);
    if (sub->own_context) zmq_ctx_term(sub->context);
    pthread_mutex_destroy(&sub->lock);
    free(sub);
}
