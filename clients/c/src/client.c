/* The RPC client: a DEALER speaking EARSHOT/1 envelopes. Calls (unary, ping, streams) live in a
 * fixed table in the handle; replies are matched to them by request_id, so a stream's items wait
 * in its queue while another call on the same client is answered. A socket monitor tells when
 * the connection drops: the daemon then cancels the connection's calls, so they end here too. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum {
    PING_EVERY_MS = 5000, /* a stream waited on that heard nothing for this long PINGs */
    PONG_WAIT_MS = 10000, /* a PING unanswered this long: the daemon is gone */
    CANCEL_GRACE_MS = 2000,
    DAY_MS = 86400000, /* the longest timeout_ms the daemon takes (docs/PROTOCOL.md) */
    READ_BATCH = 64,   /* replies read at most per look at the socket */
    LATE_BATCHES = 16, /* batches still read for a caller whose wait is over */
    READ_RECENT_MS = 5000, /* a stream read this recently has a reader: its full queue is waited for */
    GIVE_WAY_MS = 10,      /* how long a reader waits for another stream's reader before WAIT */
};
/* What a look at the socket found: nothing more, more (not read yet), or a reply held back for
 * a stream whose queue is full while its reader is about (see dispatch). */
enum { SOCKET_EMPTY, SOCKET_MORE, SOCKET_BLOCKED };
/* docs/PROTOCOL.md, "Limits": the daemon's ZMQ_MAXMSGSIZE; a bigger frame drops the connection. */
#define FRAME_MAX ((size_t)4 << 20)
#define PING_SLOT EARSHOT_MAX_CALLS /* earshot_ping's entry, after the calls' */
#define HANDSHAKE_FAILED \
    (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)

struct earshot_stream {
    earshot_client *client;
    bool used, streaming, ping;
    bool cancel_sent; /* a CANCEL went to the daemon */
    bool cancelled;   /* by the application: no more items for it */
    bool end_queued; /* the daemon's END is in the queue */
    bool ending;     /* ended here (`final`): the queue is delivered first */
    bool done;       /* the end was delivered */
    uint64_t id;
    uint64_t conn; /* the connection it was sent on (see struct earshot_client) */
    const earshot_method *method; /* NULL for raw calls and pings */
    const char *path;
    int64_t deadline, cancel_deadline, read_at;
    int timeout_ms;
    uint32_t next_seq; /* the item_seq the next MESSAGE must carry */
    uint64_t count;
    earshot_status final;
    Earshot__V1__ResponseEnvelope *queue[EARSHOT_STREAM_QUEUE];
    size_t head, length;
};

struct earshot_client {
    pthread_mutex_t lock;
    void *context, *socket;
    bool own_context;
    char endpoint[ES_ENDPOINT_MAX];
    int timeout_ms;
    uint64_t next_id;
    es_buffer payload, envelope;
    /* The socket monitor (an inproc PAIR), started with the first call and stopped when the
     * client is idle after failed handshakes (its events would pile up unread). Connections are
     * numbered as it reports them: `conn` the last one, `up` whether it is up, `lost` the last
     * one that dropped; a DISCONNECTED right after a failed handshake loses nothing. */
    void *monitor;
    unsigned monitor_starts;
    uint64_t conn, lost;
    bool up, failed_last;
    bool gone;        /* a connection dropped, and none is up since */
    bool send_waited; /* the last send found no connection at first */
    int refusal; /* the last failed handshake's event since one succeeded, else 0 */
    /* Keepalive: when a reply was last read, and the PING waiting for an answer (ping_out). */
    int64_t last_heard, ping_sent_at;
    bool ping_out;
    uint64_t dropped, stale;
    Earshot__V1__ResponseEnvelope *held; /* the reply for a full queue, read and not yet queued */
    struct earshot_stream calls[EARSHOT_MAX_CALLS + 1];
};

static void read_monitor(earshot_client *c);

/* ---- call table ---- */

static void push(struct earshot_stream *s, Earshot__V1__ResponseEnvelope *reply) {
    s->queue[(s->head + s->length) % EARSHOT_STREAM_QUEUE] = reply;
    s->length++;
}

static Earshot__V1__ResponseEnvelope *pop(struct earshot_stream *s) {
    if (s->length == 0) return NULL;
    Earshot__V1__ResponseEnvelope *reply = s->queue[s->head];
    s->head = (s->head + 1) % EARSHOT_STREAM_QUEUE;
    s->length--;
    return reply;
}

static void flush(struct earshot_stream *s) {
    Earshot__V1__ResponseEnvelope *reply;
    while ((reply = pop(s)) != NULL) earshot__v1__response_envelope__free_unpacked(reply, NULL);
}

static struct earshot_stream *find(earshot_client *c, uint64_t id) {
    for (size_t i = 0; i <= PING_SLOT; i++)
        if (c->calls[i].used && c->calls[i].id == id) return &c->calls[i];
    return NULL;
}

static void slot_init(earshot_client *c, struct earshot_stream *s, const char *path, int timeout_ms) {
    memset(s, 0, sizeof *s);
    s->client = c;
    s->used = true;
    s->id = c->next_id++;
    s->path = path;
    s->timeout_ms = timeout_ms;
    s->deadline = ES_NEVER;
    s->read_at = es_now_ms();
}

static struct earshot_stream *call_new(earshot_client *c, const char *path, int timeout_ms, earshot_status *status) {
    for (size_t i = 0; i < EARSHOT_MAX_CALLS; i++) {
        struct earshot_stream *s = &c->calls[i];
        if (s->used) continue;
        slot_init(c, s, path, timeout_ms);
        return s;
    }
    es_fail(status, EARSHOT_RESOURCE_EXHAUSTED, "%s: %d calls are already open on this client (close a stream)", path,
            EARSHOT_MAX_CALLS);
    return NULL;
}

static void monitor_stop(earshot_client *c) {
    if (c->monitor == NULL) return;
    (void)zmq_socket_monitor(c->socket, NULL, 0);
    zmq_close(c->monitor);
    c->monitor = NULL;
}

static void call_release(earshot_client *c, struct earshot_stream *s) {
    flush(s);
    s->used = false;
    if (c->monitor == NULL || c->refusal == 0) return;
    for (size_t i = 0; i <= PING_SLOT; i++)
        if (c->calls[i].used) return;
    /* Idle while handshakes fail: libzmq retries every 0.1 s, and the events would wait unread. */
    read_monitor(c);
    if (c->refusal != 0) monitor_stop(c);
}

/* ---- the connection ---- */

/* Starts the monitor if it is not running; the state of the connection is then unknown (not up:
 * a call sent now counts as sent on the next connection reported, or on the one that drops). */
static void monitor_start(earshot_client *c) {
    if (c->monitor != NULL) return;
    char address[80];
    snprintf(address, sizeof address, "inproc://earshot-client-%p-%u", (void *)c, c->monitor_starts++);
    int events = ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | HANDSHAKE_FAILED;
    if (zmq_socket_monitor(c->socket, address, events) != 0) return; /* without it, the keepalive still judges */
    void *pair = zmq_socket(c->context, ZMQ_PAIR);
    /* RCVHWM 0: the I/O thread must never block on an event not read yet. */
    int zero = 0;
    if (pair == NULL || zmq_setsockopt(pair, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
        zmq_setsockopt(pair, ZMQ_RCVHWM, &zero, sizeof zero) != 0 || zmq_connect(pair, address) != 0) {
        if (pair != NULL) zmq_close(pair);
        (void)zmq_socket_monitor(c->socket, NULL, 0);
        return;
    }
    c->monitor = pair;
    c->up = false;
    c->gone = false;
    c->failed_last = false;
}

static void end_locally(struct earshot_stream *s, int code, bool cancel, const char *format, ...) ES_PRINTF(4, 5);

static void read_monitor(earshot_client *c) {
    if (c->monitor == NULL) return;
    for (int n = 0; n < 256; n++) {
        zmq_msg_t frame;
        zmq_msg_init(&frame);
        if (zmq_msg_recv(&frame, c->monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&frame);
            return;
        }
        uint16_t event = 0;
        if (zmq_msg_size(&frame) >= 6) memcpy(&event, zmq_msg_data(&frame), sizeof event);
        bool more = zmq_msg_more(&frame);
        zmq_msg_close(&frame);
        while (more) { /* the endpoint */
            zmq_msg_init(&frame);
            more = zmq_msg_recv(&frame, c->monitor, 0) >= 0 && zmq_msg_more(&frame);
            zmq_msg_close(&frame);
        }
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            c->conn++;
            c->up = true;
            c->gone = false;
            c->failed_last = false;
            c->refusal = 0;
        } else if (event & HANDSHAKE_FAILED) {
            c->refusal = event;
            c->failed_last = true;
        } else if (event == ZMQ_EVENT_DISCONNECTED) {
            if (!c->failed_last) { /* a connection that was up (seen or not) dropped */
                if (!c->up) c->conn++;
                c->lost = c->conn;
                c->gone = true;
                c->ping_out = false;
                c->last_heard = es_now_ms();
            }
            c->up = false;
            c->failed_last = false;
        }
    }
}

/* Ends the calls sent on connections that dropped. */
static void apply_losses(earshot_client *c) {
    for (size_t i = 0; i <= PING_SLOT; i++) {
        struct earshot_stream *s = &c->calls[i];
        if (s->used && s->conn != 0 && s->conn <= c->lost)
            end_locally(s, EARSHOT_UNAVAILABLE, false, "%s: the connection to %s was lost; the daemon cancelled the call",
                        s->path, c->endpoint);
    }
}

/* Right after a drop is reported, the socket may still hold the dropped connection's pipe, and
 * take messages into it (lost): libzmq's I/O thread reports the drop before it tells the socket,
 * and zmq_send looks at such news at most once a millisecond. Until that pipe is gone (ZMQ_EVENTS
 * reads the news now, and shows it in POLLOUT) or the next connection is up, nothing is sent. */
static void forget_dropped(earshot_client *c, int64_t deadline) {
    while (c->gone) {
        int events = 0;
        size_t size = sizeof events;
        if (zmq_getsockopt(c->socket, ZMQ_EVENTS, &events, &size) != 0 || !(events & ZMQ_POLLOUT)) return;
        int64_t now = es_now_ms();
        if (now >= deadline) return;
        zmq_pollitem_t item = {c->monitor, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 1) < 0 && zmq_errno() != EINTR) return;
        read_monitor(c);
    }
}

static const char *refusal_text(int event) {
    switch (event) {
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        return "earshotd refused this client's key (not in its allow-list?); libzmq does not retry: open a new client";
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        return "a protocol error (does the daemon's security mode match?)";
    default:
        return "the daemon closed the connection during it (a wrong server key?)";
    }
}

/* ---- sending ---- */

static int send_envelope(earshot_client *c, uint64_t id, Earshot__V1__RequestEnvelope__Control control,
                         const char *path, size_t payload_length, uint32_t timeout_ms, int64_t deadline,
                         earshot_status *status) {
    const char *what = path ? path : control == EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_PING ? "PING" : "control";
    Earshot__V1__RequestEnvelope envelope = EARSHOT__V1__REQUEST_ENVELOPE__INIT;
    envelope.request_id = id;
    envelope.control = control;
    envelope.timeout_ms = timeout_ms;
    if (path != NULL) envelope.method = (char *)path;
    envelope.payload.len = payload_length;
    envelope.payload.data = payload_length ? c->payload.data : NULL;
    size_t size = earshot__v1__request_envelope__get_packed_size(&envelope);
    if (size > FRAME_MAX)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT,
                       "%s: a %zu-byte request is over the daemon's frame limit of %zu bytes (4 MiB; it would drop "
                       "the connection)",
                       what, size, FRAME_MAX);
    if (es_buffer_reserve(&c->envelope, size) != 0)
        return es_fail(status, EARSHOT_RESOURCE_EXHAUSTED, "out of memory for a %zu-byte request", size);
    earshot__v1__request_envelope__pack(&envelope, c->envelope.data);
    forget_dropped(c, deadline);
    int64_t start = es_now_ms();
    c->send_waited = false;
    for (;;) {
        /* With ZMQ_IMMEDIATE the first frame is refused (EAGAIN) until a connection is up; once it
         * is accepted, the second is too (a multipart message is queued whole). */
        if (zmq_send(c->socket, EARSHOT_SIGNATURE, strlen(EARSHOT_SIGNATURE), ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0) {
            if (zmq_send(c->socket, c->envelope.data, size, ZMQ_DONTWAIT) >= 0) return EARSHOT_OK;
            break;
        }
        if (zmq_errno() != EAGAIN && zmq_errno() != EINTR) break;
        c->send_waited = true;
        int64_t now = es_now_ms();
        if (now >= deadline) {
            read_monitor(c);
            if (c->refusal != 0)
                return es_fail(status, EARSHOT_DEADLINE_EXCEEDED,
                               "%s: no connection to %s within %.3g s: the handshake failed: %s",
                               what, c->endpoint, (double)(now - start) / 1000.0, refusal_text(c->refusal));
            return es_fail(status, EARSHOT_DEADLINE_EXCEEDED,
                           "%s: no connection to %s within %.3g s (is earshotd running there? with CURVE, a wrong "
                           "server key or a client key not in its allow-list looks the same)",
                           what, c->endpoint, (double)(now - start) / 1000.0);
        }
        zmq_pollitem_t item = {c->socket, 0, ZMQ_POLLOUT, 0};
        int64_t wait = deadline - now;
        if (zmq_poll(&item, 1, wait > INT_MAX ? INT_MAX : (long)wait) < 0 && zmq_errno() != EINTR) break;
    }
    int error = zmq_errno();
    return es_fail(status, error == ETERM ? EARSHOT_UNAVAILABLE : EARSHOT_INTERNAL, "%s: cannot send to %s: %s", what,
                   c->endpoint, zmq_strerror(error));
}

/* CANCEL or PING, best effort and without waiting: one that cannot be queued now is dropped. */
static void send_control(earshot_client *c, uint64_t id, Earshot__V1__RequestEnvelope__Control control) {
    (void)send_envelope(c, id, control, NULL, 0, 0, 0, NULL);
}

/* Ends a call here: what is already queued for it is still delivered, then `final`. Nothing
 * once the daemon's END is queued (it is the end). */
static void end_locally(struct earshot_stream *s, int code, bool cancel, const char *format, ...) {
    if (s->done || s->ending || s->end_queued) return;
    s->ending = true;
    s->final.code = code;
    va_list args;
    va_start(args, format);
    if (vsnprintf(s->final.message, sizeof s->final.message, format, args) < 0) s->final.message[0] = '\0';
    va_end(args);
    if (cancel && !s->cancel_sent) {
        send_control(s->client, s->id, EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_CANCEL);
        s->cancel_sent = true;
    }
}

/* The socket cannot be read any more (the context was shut down): every call ends. */
static void end_all(earshot_client *c, int error) {
    for (size_t i = 0; i <= PING_SLOT; i++)
        if (c->calls[i].used)
            end_locally(&c->calls[i], EARSHOT_UNAVAILABLE, false, "%s: cannot receive from %s: %s", c->calls[i].path,
                        c->endpoint, zmq_strerror(error));
}

/* ---- receiving ---- */

/* Queues a reply for its call. Returns false when it is held back instead: an item for a stream
 * whose queue is full while another stream (`want`) is read, and whose own reader is about (it
 * read within READ_RECENT_MS): that reader is given way rather than its stream ended. A full
 * queue otherwise (a unary call waits, or nobody reads the stream) ends the stream. */
static bool dispatch(earshot_client *c, Earshot__V1__ResponseEnvelope *reply, const struct earshot_stream *want) {
    struct earshot_stream *s = find(c, reply->request_id);
    bool pong = reply->kind == EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_PONG;
    if (s == NULL || s->done || s->ending || s->end_queued || (pong && !s->ping)) {
        if (!pong) c->stale++; /* a keepalive PONG only proves the daemon alive */
        earshot__v1__response_envelope__free_unpacked(reply, NULL);
        return true;
    }
    if (reply->kind == EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_MESSAGE) {
        if (!s->streaming || s->cancel_sent) { /* a unary call has no items; a cancelled stream wants none */
            earshot__v1__response_envelope__free_unpacked(reply, NULL);
            return true;
        }
        if (reply->item_seq != s->next_seq) {
            end_locally(s, EARSHOT_DATA_LOSS, true, "%s: item %u from %s is missing (got item %u)", s->path,
                        s->next_seq, c->endpoint, reply->item_seq);
            earshot__v1__response_envelope__free_unpacked(reply, NULL);
            return true;
        }
        /* The last place is kept for the END. */
        if (s->length >= EARSHOT_STREAM_QUEUE - 1) {
            if (want != NULL && want != s && want->streaming && es_now_ms() - s->read_at < READ_RECENT_MS)
                return false;
            end_locally(s, EARSHOT_RESOURCE_EXHAUSTED, true,
                        "%s: %d items waited unread while other calls on the client were answered", s->path,
                        EARSHOT_STREAM_QUEUE - 1);
            earshot__v1__response_envelope__free_unpacked(reply, NULL);
            return true;
        }
        s->next_seq++;
    } else {
        s->end_queued = true; /* an END, or the PONG that ends a ping */
    }
    push(s, reply);
    return true;
}

/* Reads the replies that have arrived, without waiting: at most READ_BATCH, and none after one
 * is queued for `want` (its reader takes it; what follows stays in libzmq's queue), or after one
 * is held back (dispatch). */
static int receive_available(earshot_client *c, struct earshot_stream *want) {
    if (c->held != NULL) {
        Earshot__V1__ResponseEnvelope *held = c->held;
        c->held = NULL;
        if (!dispatch(c, held, want)) {
            c->held = held;
            return SOCKET_BLOCKED;
        }
    }
    for (int n = 0; n < READ_BATCH; n++) {
        if (want != NULL && want->length > 0) return SOCKET_MORE;
        zmq_msg_t signature, body;
        zmq_msg_init(&signature);
        if (zmq_msg_recv(&signature, c->socket, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&signature);
            return SOCKET_EMPTY;
        }
        c->last_heard = es_now_ms();
        c->ping_out = false; /* anything heard answers the keepalive's question */
        Earshot__V1__ResponseEnvelope *reply = NULL;
        bool more = zmq_msg_more(&signature);
        if (more) {
            zmq_msg_init(&body);
            /* The rest of a multipart message has arrived with its first frame. */
            if (zmq_msg_recv(&body, c->socket, 0) >= 0) {
                more = zmq_msg_more(&body);
                if (!more)
                    reply = es_decode_reply(zmq_msg_data(&signature), zmq_msg_size(&signature), zmq_msg_data(&body),
                                            zmq_msg_size(&body));
            } else {
                more = false;
            }
            zmq_msg_close(&body);
        }
        zmq_msg_close(&signature);
        while (more) { /* not two frames: drop the rest */
            zmq_msg_t extra;
            zmq_msg_init(&extra);
            more = zmq_msg_recv(&extra, c->socket, 0) >= 0 && zmq_msg_more(&extra);
            zmq_msg_close(&extra);
        }
        if (reply == NULL) {
            c->dropped++;
        } else if (!dispatch(c, reply, want)) {
            c->held = reply;
            return SOCKET_BLOCKED;
        }
    }
    return SOCKET_MORE;
}

/* Reads what has arrived: the replies, then, once none is left (those of a connection came
 * before its end), the monitor's events. */
static int settle(earshot_client *c, struct earshot_stream *want) {
    int found = receive_available(c, want);
    if (found == SOCKET_EMPTY) {
        read_monitor(c);
        apply_losses(c);
    }
    return found;
}

/* Waits until `until` (monotonic ms) for a reply or a connection event, then settles. A context
 * shut down (ETERM) ends every call. */
static int pump(earshot_client *c, int64_t until, struct earshot_stream *want) {
    int64_t now = es_now_ms();
    long wait = until == ES_NEVER ? -1 : until <= now ? 0 : (until - now > INT_MAX ? INT_MAX : (long)(until - now));
    zmq_pollitem_t items[2] = {{c->socket, 0, ZMQ_POLLIN, 0}, {c->monitor, 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(items, c->monitor != NULL ? 2 : 1, wait) < 0 && zmq_errno() != EINTR) {
        end_all(c, zmq_errno());
        return SOCKET_EMPTY;
    }
    return settle(c, want);
}

/* ---- open and close ---- */

int earshot_client_open(const earshot_options *options, earshot_client **out, earshot_status *status) {
    if (out == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no place for the client");
    *out = NULL;
    earshot_options defaults;
    if (options == NULL) {
        earshot_options_init(&defaults);
        options = &defaults;
    }
    if (options->timeout_ms < 0) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "timeout_ms must not be negative");
    es_curve curve;
    int code = es_curve_load(options, &curve, status);
    if (code != EARSHOT_OK) return code;
    earshot_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        explicit_bzero(&curve, sizeof curve);
        return es_fail(status, EARSHOT_RESOURCE_EXHAUSTED, "out of memory");
    }
    if ((code = es_endpoint(options->endpoint, EARSHOT_DEFAULT_ENDPOINT, c->endpoint, status)) != EARSHOT_OK) {
        explicit_bzero(&curve, sizeof curve);
        free(c);
        return code;
    }
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        explicit_bzero(&curve, sizeof curve);
        free(c);
        return es_fail(status, EARSHOT_INTERNAL, "pthread_mutex_init failed");
    }
    c->timeout_ms = options->timeout_ms ? options->timeout_ms : 10000;
    c->next_id = 1;
    c->last_heard = es_now_ms();
    if ((code = es_context(options, &c->context, &c->own_context, status)) != EARSHOT_OK) goto fail;
    c->socket = zmq_socket(c->context, ZMQ_DEALER);
    if (c->socket == NULL) {
        code = es_fail(status, EARSHOT_INTERNAL, "zmq_socket: %s", zmq_strerror(zmq_errno()));
        goto fail;
    }
    int one = 1, hwm = 1000;
    if ((code = es_configure(c->socket, &curve, status)) != EARSHOT_OK) goto fail;
    /* IMMEDIATE: nothing is queued for a connection that is not up, so a call to a daemon that is
     * down (or refuses our keys) fails at its deadline instead of sitting in a queue. */
    if (zmq_setsockopt(c->socket, ZMQ_IMMEDIATE, &one, sizeof one) != 0 ||
        zmq_setsockopt(c->socket, ZMQ_SNDHWM, &hwm, sizeof hwm) != 0 ||
        zmq_setsockopt(c->socket, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0) {
        code = es_fail(status, EARSHOT_INTERNAL, "zmq_setsockopt: %s", zmq_strerror(zmq_errno()));
        goto fail;
    }
    if (zmq_connect(c->socket, c->endpoint) != 0) {
        code = es_fail(status, EARSHOT_INVALID_ARGUMENT, "cannot connect to %s: %s", c->endpoint,
                       zmq_strerror(zmq_errno()));
        goto fail;
    }
    explicit_bzero(&curve, sizeof curve);
    *out = c;
    return es_ok(status);
fail:
    explicit_bzero(&curve, sizeof curve);
    if (c->socket != NULL) zmq_close(c->socket);
    if (c->own_context && c->context != NULL) zmq_ctx_term(c->context);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return code;
}

void earshot_client_close(earshot_client *c) {
    if (c == NULL) return;
    pthread_mutex_lock(&c->lock);
    bool cancelled = false;
    for (size_t i = 0; i <= PING_SLOT; i++) {
        struct earshot_stream *s = &c->calls[i];
        if (!s->used) continue;
        if (s->streaming && !s->done && !s->ending && !s->end_queued && !s->cancel_sent) {
            send_control(c, s->id, EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_CANCEL);
            cancelled = true;
        }
        flush(s);
        s->used = false;
    }
    if (c->held != NULL) earshot__v1__response_envelope__free_unpacked(c->held, NULL);
    monitor_stop(c);
    /* Give queued CANCELs a moment to leave; otherwise drop everything at once. */
    int linger = cancelled ? 200 : 0;
    (void)zmq_setsockopt(c->socket, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(c->socket);
    if (c->own_context) zmq_ctx_term(c->context);
    es_buffer_free(&c->payload);
    es_buffer_free(&c->envelope);
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

const char *earshot_client_endpoint(const earshot_client *c) { return c != NULL ? c->endpoint : ""; }

void earshot_client_counters(earshot_client *c, uint64_t *dropped, uint64_t *stale) {
    if (c == NULL) return;
    pthread_mutex_lock(&c->lock);
    if (dropped) *dropped = c->dropped;
    if (stale) *stale = c->stale;
    pthread_mutex_unlock(&c->lock);
}

/* ---- calls ---- */

static int pack_request(earshot_client *c, const earshot_method *method, const ProtobufCMessage *request,
                        size_t *length, earshot_status *status) {
    if (method == NULL || request == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no method or request");
    if (request->descriptor != method->request)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "%s takes a %s, not a %s", method->path,
                       method->request->name, request->descriptor->name);
    size_t size = protobuf_c_message_get_packed_size(request);
    if (size > FRAME_MAX)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT,
                       "%s: a %zu-byte request is over the daemon's frame limit of %zu bytes (4 MiB)", method->path,
                       size, FRAME_MAX);
    if (es_buffer_reserve(&c->payload, size) != 0)
        return es_fail(status, EARSHOT_RESOURCE_EXHAUSTED, "out of memory for a %zu-byte request", size);
    *length = protobuf_c_message_pack(request, c->payload.data);
    return EARSHOT_OK;
}

/* Sends a call (or a PING) whose entry is `s` and whose payload is in c->payload. */
static int send_call(earshot_client *c, struct earshot_stream *s, Earshot__V1__RequestEnvelope__Control control,
                     size_t length, uint32_t wire_timeout, int64_t send_deadline, earshot_status *status) {
    monitor_start(c);
    read_monitor(c); /* a drop reported before this call is not this call's */
    uint64_t conn = c->conn;
    bool up = c->up;
    const char *method = control == EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_CALL ? s->path : NULL;
    int code = send_envelope(c, s->id, control, method, length, wire_timeout, send_deadline, status);
    if (code != EARSHOT_OK) return code;
    /* The connection it went on: the one up, if it was taken at once; else one not reported yet
     * (a pipe that appeared: the next connection, whose report is still to come). */
    s->conn = up && !c->send_waited ? conn : conn + 1;
    return EARSHOT_OK;
}

/* Starts a call whose payload is in c->payload; on success *out is its table entry. */
static int start(earshot_client *c, const char *path, size_t length, int timeout_ms, bool streaming,
                 struct earshot_stream **out, earshot_status *status) {
    struct earshot_stream *s = call_new(c, path, timeout_ms, status);
    if (s == NULL) return EARSHOT_RESOURCE_EXHAUSTED;
    int64_t now = es_now_ms();
    s->streaming = streaming;
    s->deadline = timeout_ms > 0 ? now + timeout_ms : ES_NEVER;
    uint32_t wire_timeout = timeout_ms > 0 ? (uint32_t)timeout_ms : DAY_MS;
    /* A stream without a deadline still gives up on a connection that never comes up. */
    int64_t send_deadline = timeout_ms > 0 ? s->deadline : now + c->timeout_ms;
    int code = send_call(c, s, EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_CALL, length, wire_timeout,
                         send_deadline, status);
    if (code != EARSHOT_OK) {
        call_release(c, s);
        return code;
    }
    *out = s;
    return EARSHOT_OK;
}

/* Waits for the reply that ends a unary call (its END) or a ping (its PONG) into *reply (owned);
 * else returns why not (status set). The caller releases the call. */
static int wait_end(earshot_client *c, struct earshot_stream *s, Earshot__V1__ResponseEnvelope **reply,
                    earshot_status *status) {
    bool last_look = false;
    for (;;) {
        while ((*reply = pop(s)) != NULL) {
            if ((*reply)->kind != EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_MESSAGE) return EARSHOT_OK;
            earshot__v1__response_envelope__free_unpacked(*reply, NULL);
        }
        if (s->ending) {
            es_status_set(status, s->final.code, s->final.message);
            return s->final.code;
        }
        if (es_now_ms() >= s->deadline) {
            if (!last_look) { /* what arrived in time counts */
                last_look = true;
                settle(c, s);
                continue;
            }
            if (!s->ping) send_control(c, s->id, EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_CANCEL);
            return es_fail(status, EARSHOT_DEADLINE_EXCEEDED, "%s: no %s from %s within %.3g s", s->path,
                           s->ping ? "PONG" : "answer", c->endpoint, s->timeout_ms / 1000.0);
        }
        pump(c, s->deadline, s);
    }
}

/* A unary call: its END's status, and its payload into *response (typed) or *raw (the END). */
static int unary(earshot_client *c, const char *path, size_t length, int timeout_ms, const earshot_method *method,
                 ProtobufCMessage **response, Earshot__V1__ResponseEnvelope **raw, earshot_status *status) {
    struct earshot_stream *s = NULL;
    int code = start(c, path, length, timeout_ms > 0 ? timeout_ms : c->timeout_ms, false, &s, status);
    if (code != EARSHOT_OK) return code;
    Earshot__V1__ResponseEnvelope *reply = NULL;
    code = wait_end(c, s, &reply, status);
    call_release(c, s);
    if (code != EARSHOT_OK) return code;
    code = es_reply_status(reply, status);
    if (code == EARSHOT_OK && method != NULL)
        code = es_decode_payload(&reply->payload, method->response, response, c->endpoint, path, status);
    if (raw != NULL) *raw = reply;
    else earshot__v1__response_envelope__free_unpacked(reply, NULL);
    return code;
}

int earshot_call(earshot_client *c, const earshot_method *method, const ProtobufCMessage *request,
                 ProtobufCMessage **response, int timeout_ms, earshot_status *status) {
    if (response == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no place for the response");
    *response = NULL;
    if (c == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no client");
    if (method != NULL && method->server_streaming)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "%s streams: use earshot_stream_open", method->path);
    pthread_mutex_lock(&c->lock);
    size_t length = 0;
    int code = pack_request(c, method, request, &length, status);
    if (code == EARSHOT_OK) code = unary(c, method->path, length, timeout_ms, method, response, NULL, status);
    pthread_mutex_unlock(&c->lock);
    return code;
}

int earshot_call_raw(earshot_client *c, const char *path, const uint8_t *request, size_t request_length,
                     uint8_t *buffer, size_t capacity, size_t *length, int timeout_ms, earshot_status *status) {
    if (length) *length = 0;
    if (c == NULL || path == NULL || (request == NULL && request_length > 0))
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no client, path or request");
    if (request_length > FRAME_MAX)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT,
                       "%s: a %zu-byte request is over the daemon's frame limit of %zu bytes (4 MiB)", path,
                       request_length, FRAME_MAX);
    pthread_mutex_lock(&c->lock);
    int code = EARSHOT_OK;
    if (es_buffer_reserve(&c->payload, request_length) != 0) {
        code = es_fail(status, EARSHOT_RESOURCE_EXHAUSTED, "out of memory for a %zu-byte request", request_length);
    } else if (request_length > 0) {
        memcpy(c->payload.data, request, request_length);
    }
    Earshot__V1__ResponseEnvelope *reply = NULL;
    if (code == EARSHOT_OK) code = unary(c, path, request_length, timeout_ms, NULL, NULL, &reply, status);
    if (reply != NULL) {
        if (length) *length = reply->payload.len;
        if (buffer != NULL && reply->payload.len > 0)
            memcpy(buffer, reply->payload.data, reply->payload.len < capacity ? reply->payload.len : capacity);
        earshot__v1__response_envelope__free_unpacked(reply, NULL);
    }
    pthread_mutex_unlock(&c->lock);
    return code;
}

int earshot_ping(earshot_client *c, int timeout_ms, double *rtt_ms, earshot_status *status) {
    if (c == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no client");
    pthread_mutex_lock(&c->lock);
    int timeout = timeout_ms > 0 ? timeout_ms : c->timeout_ms;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Its own entry: a PING is not a call (no limit of the daemon counts it). */
    struct earshot_stream *s = &c->calls[PING_SLOT];
    slot_init(c, s, "PING", timeout);
    s->ping = true;
    s->deadline = es_now_ms() + timeout;
    int code = send_call(c, s, EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_PING, 0, (uint32_t)timeout,
                         s->deadline, status);
    Earshot__V1__ResponseEnvelope *reply = NULL;
    if (code == EARSHOT_OK) code = wait_end(c, s, &reply, status);
    if (reply != NULL) {
        if (reply->kind != EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_PONG)
            code = es_fail(status, EARSHOT_INTERNAL, "PING: %s ended it without a PONG", c->endpoint);
        earshot__v1__response_envelope__free_unpacked(reply, NULL);
    }
    call_release(c, s);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (code == EARSHOT_OK && rtt_ms != NULL)
        *rtt_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    pthread_mutex_unlock(&c->lock);
    return code == EARSHOT_OK ? es_ok(status) : code;
}

/* ---- streams ---- */

int earshot_stream_open(earshot_client *c, const earshot_method *method, const ProtobufCMessage *request,
                        int timeout_ms, earshot_stream **out, earshot_status *status) {
    if (out == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no place for the stream");
    *out = NULL;
    if (c == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no client");
    if (method != NULL && !method->server_streaming)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "%s is unary: use earshot_call", method->path);
    pthread_mutex_lock(&c->lock);
    size_t length = 0;
    struct earshot_stream *s = NULL;
    int code = pack_request(c, method, request, &length, status);
    if (code == EARSHOT_OK) code = start(c, method->path, length, timeout_ms > 0 ? timeout_ms : 0, true, &s, status);
    if (code == EARSHOT_OK) {
        s->method = method;
        *out = s;
        es_ok(status);
    }
    pthread_mutex_unlock(&c->lock);
    return code;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

earshot_next earshot_stream_next(earshot_stream *s, ProtobufCMessage **item, int wait_ms, earshot_status *status) {
    if (item != NULL) *item = NULL;
    if (s == NULL || item == NULL) {
        es_fail(status, EARSHOT_INVALID_ARGUMENT, "no stream or no place for the item");
        return EARSHOT_NEXT_END;
    }
    earshot_client *c = s->client;
    pthread_mutex_lock(&c->lock);
    s->read_at = es_now_ms();
    int64_t until = wait_ms < 0 ? ES_NEVER : s->read_at + wait_ms;
    bool looked = false;
    int found = SOCKET_MORE, late = 0;
    earshot_next next;
    for (;;) {
        Earshot__V1__ResponseEnvelope *reply;
        while ((reply = pop(s)) != NULL) {
            if (reply->kind == EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_MESSAGE && !s->cancelled && !s->done) {
                earshot_status decoding;
                int code = es_decode_payload(&reply->payload, s->method->response, item, c->endpoint, s->path,
                                             &decoding);
                earshot__v1__response_envelope__free_unpacked(reply, NULL);
                if (code != EARSHOT_OK) { /* the end: what follows it is dropped */
                    if (!s->end_queued && !s->cancel_sent)
                        send_control(c, s->id, EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_CANCEL);
                    s->cancel_sent = true;
                    flush(s);
                    s->done = true;
                    s->final = decoding;
                    break;
                }
                s->count++;
                es_ok(status);
                next = EARSHOT_NEXT_ITEM;
                goto out;
            }
            if (reply->kind == EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_END && !s->done) {
                s->done = true;
                es_reply_status(reply, &s->final);
                if (s->final.code == EARSHOT_OK && reply->item_seq != s->next_seq && !s->cancel_sent)
                    es_fail(&s->final, EARSHOT_DATA_LOSS, "%s: %s sent %u items, %u arrived", s->path, c->endpoint,
                            reply->item_seq, s->next_seq);
            }
            earshot__v1__response_envelope__free_unpacked(reply, NULL);
        }
        if (s->ending) s->done = true; /* what came before the local end was delivered */
        if (s->done) {
            if (status) *status = s->final;
            next = EARSHOT_NEXT_END;
            goto out;
        }
        if (!looked) { /* what has arrived counts before anything is judged */
            looked = true;
            found = settle(c, s);
            continue;
        }
        int64_t now = es_now_ms();
        if (s->cancelled && now >= s->cancel_deadline) {
            end_locally(s, EARSHOT_CANCELLED, false, "%s: cancelled by the client (%s sent no END within %d s)",
                        s->path, c->endpoint, CANCEL_GRACE_MS / 1000);
            continue;
        }
        if (now >= s->deadline) {
            end_locally(s, EARSHOT_DEADLINE_EXCEEDED, true, "%s: the stream from %s passed its deadline (%d ms)",
                        s->path, c->endpoint, s->timeout_ms);
            continue;
        }
        /* Silent only when a PING went unanswered, judged with every reply that came read. */
        if (found == SOCKET_EMPTY && c->ping_out && now - c->ping_sent_at >= PONG_WAIT_MS) {
            end_locally(s, EARSHOT_UNAVAILABLE, true, "%s: %s went silent: no answer to a PING for %d s", s->path,
                        c->endpoint, PONG_WAIT_MS / 1000);
            continue;
        }
        if (!c->ping_out && now - c->last_heard >= PING_EVERY_MS) {
            send_control(c, c->next_id++, EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_PING);
            c->ping_out = true; /* even when it could not be queued: then nothing will answer */
            c->ping_sent_at = now;
        }
        if (found == SOCKET_BLOCKED) {
            /* The next reply is another stream's, whose queue is full and whose reader is about:
             * give way to it (WAIT) rather than end it — at once when it read just now (streams
             * read in turn), else after a moment (no spinning while its reader is away). */
            const struct earshot_stream *other = c->held ? find(c, c->held->request_id) : NULL;
            if (now < until && c->monitor != NULL && (other == NULL || now - other->read_at >= GIVE_WAY_MS * 10)) {
                zmq_pollitem_t item = {c->monitor, 0, ZMQ_POLLIN, 0};
                (void)zmq_poll(&item, 1, (long)min64(until - now, GIVE_WAY_MS));
            }
            es_ok(status);
            next = EARSHOT_NEXT_WAIT;
            goto out;
        }
        if (now >= until && (found == SOCKET_EMPTY || late++ >= LATE_BATCHES)) {
            es_ok(status);
            next = EARSHOT_NEXT_WAIT;
            goto out;
        }
        int64_t wake = min64(until, s->deadline);
        if (s->cancelled) wake = min64(wake, s->cancel_deadline);
        wake = min64(wake, c->ping_out ? c->ping_sent_at + PONG_WAIT_MS : c->last_heard + PING_EVERY_MS);
        found = pump(c, wake, s);
    }
out:
    pthread_mutex_unlock(&c->lock);
    return next;
}

int earshot_stream_cancel(earshot_stream *s, earshot_status *status) {
    if (s == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no stream");
    earshot_client *c = s->client;
    pthread_mutex_lock(&c->lock);
    if (!s->done && !s->cancelled) {
        if (!s->ending && !s->end_queued && !s->cancel_sent) {
            send_control(c, s->id, EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_CANCEL);
            s->cancel_sent = true;
            s->cancel_deadline = es_now_ms() + CANCEL_GRACE_MS;
        }
        s->cancelled = true;
        /* Items already queued are dropped; an END already queued is kept. */
        size_t n = s->length;
        for (size_t i = 0; i < n; i++) {
            Earshot__V1__ResponseEnvelope *reply = pop(s);
            if (reply->kind == EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_END) push(s, reply);
            else earshot__v1__response_envelope__free_unpacked(reply, NULL);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return es_ok(status);
}

bool earshot_stream_done(earshot_stream *s, earshot_status *status) {
    if (s == NULL) {
        es_fail(status, EARSHOT_INVALID_ARGUMENT, "no stream");
        return true;
    }
    pthread_mutex_lock(&s->client->lock);
    bool done = s->done;
    if (done && status) *status = s->final;
    pthread_mutex_unlock(&s->client->lock);
    return done;
}

uint64_t earshot_stream_count(earshot_stream *s) {
    if (s == NULL) return 0;
    pthread_mutex_lock(&s->client->lock);
    uint64_t count = s->count;
    pthread_mutex_unlock(&s->client->lock);
    return count;
}

void earshot_stream_close(earshot_stream *s) {
    if (s == NULL) return;
    earshot_client *c = s->client;
    pthread_mutex_lock(&c->lock);
    if (!s->done && !s->ending && !s->end_queued && !s->cancel_sent)
        send_control(c, s->id, EARSHOT__V1__REQUEST_ENVELOPE__CONTROL__CONTROL_CANCEL);
    call_release(c, s);
    pthread_mutex_unlock(&c->lock);
}

/* ---- typed helpers ---- */

int earshot_prepare(earshot_client *c, int timeout_ms, earshot_status *status) {
    Earshot__V1__PrepareRequest request = EARSHOT__V1__PREPARE_REQUEST__INIT;
    ProtobufCMessage *response = NULL;
    int code = earshot_call(c, &earshot_recognizer_prepare, &request.base, &response, timeout_ms, status);
    earshot_message_free(response);
    return code;
}

int earshot_match(earshot_client *c, bool add_to_library, Earshot__V1__MatchResult **result, int timeout_ms,
                  earshot_status *status) {
    if (result == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no place for the result");
    Earshot__V1__MatchRequest request = EARSHOT__V1__MATCH_REQUEST__INIT;
    request.add_to_library = add_to_library;
    ProtobufCMessage *response = NULL;
    int code = earshot_call(c, &earshot_recognizer_match, &request.base, &response, timeout_ms, status);
    *result = (Earshot__V1__MatchResult *)response;
    return code;
}

int earshot_get_snapshot(earshot_client *c, Earshot__V1__SessionSnapshot **snapshot, int timeout_ms,
                         earshot_status *status) {
    if (snapshot == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no place for the snapshot");
    Earshot__V1__GetSnapshotRequest request = EARSHOT__V1__GET_SNAPSHOT_REQUEST__INIT;
    ProtobufCMessage *response = NULL;
    int code = earshot_call(c, &earshot_session_get_snapshot, &request.base, &response, timeout_ms, status);
    *snapshot = (Earshot__V1__SessionSnapshot *)response;
    return code;
}

int earshot_check_health(earshot_client *c, const char *service, Earshot__V1__ServingStatus *serving, int timeout_ms,
                         earshot_status *status) {
    Earshot__V1__HealthCheckRequest request = EARSHOT__V1__HEALTH_CHECK_REQUEST__INIT;
    if (service != NULL) request.service = (char *)service;
    ProtobufCMessage *response = NULL;
    int code = earshot_call(c, &earshot_health_check, &request.base, &response, timeout_ms, status);
    if (code == EARSHOT_OK && serving != NULL) *serving = ((Earshot__V1__HealthCheckResponse *)response)->status;
    earshot_message_free(response);
    return code;
}
