/* What the library's files share; not installed. */
#ifndef EARSHOT_INTERNAL_H
#define EARSHOT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <zmq.h>

#include "earshot/client.h"

/* Nothing below is exported from the shared library. */
#pragma GCC visibility push(hidden)

#define ES_ENDPOINT_MAX 256
#define ES_TOPICS_MAX 16
#define ES_TOPIC_MAX 64
#define ES_NEVER INT64_MAX

#if defined(__GNUC__)
#define ES_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ES_PRINTF(f, a)
#endif

/* status.c */
int es_fail(earshot_status *status, int code, const char *format, ...) ES_PRINTF(3, 4);
int es_ok(earshot_status *status);
void es_status_set(earshot_status *status, int code, const char *message);
int64_t es_now_ms(void);  /* monotonic */
int64_t es_wall_ms(void); /* Unix time */

/* A growable byte buffer kept in a handle and reused: it only grows. */
typedef struct es_buffer {
    uint8_t *data;
    size_t capacity;
} es_buffer;
int es_buffer_reserve(es_buffer *buffer, size_t size);
void es_buffer_free(es_buffer *buffer);

/* connection.c: endpoints, keys and socket options shared by the RPC and events sockets. */
typedef struct es_curve {
    bool on;
    char server[EARSHOT_KEY_TEXT], public_key[EARSHOT_KEY_TEXT], secret[EARSHOT_KEY_TEXT];
} es_curve;
int es_endpoint(const char *given, const char *fallback, char out[ES_ENDPOINT_MAX], earshot_status *status);
int es_curve_load(const earshot_options *options, es_curve *curve, earshot_status *status);
int es_configure(void *socket, const es_curve *curve, earshot_status *status);
bool es_is_key(const char *text, size_t length);
/* The context to use: the given one, or a new one (*owned set). */
int es_context(const earshot_options *options, void **context, bool *owned, earshot_status *status);

/* Topic prefixes a subscriber receives. */
typedef struct es_topics {
    char names[ES_TOPICS_MAX][ES_TOPIC_MAX];
    size_t count;
} es_topics;
int es_topics_add(es_topics *topics, const char *topic, earshot_status *status);
bool es_topics_receive(const es_topics *topics, const char *topic);

/* decode.c: the paths from received bytes to messages (fuzzed by fuzz/). */
/* A reply's two frames → its envelope, or NULL when malformed (wrong signature, does not
 * decode, request_id 0, unknown kind). Owned by the caller. */
Earshot__V1__ResponseEnvelope *es_decode_reply(const uint8_t *signature, size_t signature_length,
                                               const uint8_t *body, size_t body_length);
/* A payload → a message of `type`; INTERNAL with a message naming it when it does not decode. */
int es_decode_payload(const ProtobufCBinaryData *payload, const ProtobufCMessageDescriptor *type,
                      ProtobufCMessage **out, const char *endpoint, const char *path, earshot_status *status);
/* An END's status (absent: OK) into `status`; returns its code. */
int es_reply_status(const Earshot__V1__ResponseEnvelope *reply, earshot_status *status);
/* An event's two frames → its envelope, or NULL when malformed (does not decode, or its topic
 * differs from the frame's). An empty topic field takes the frame's. */
Earshot__V1__EventEnvelope *es_decode_event(const uint8_t *topic, size_t topic_length, const uint8_t *body,
                                            size_t body_length);

/* follower_core.c: the follower's decisions, apart from its sockets (unit-tested and fuzzed). */
typedef struct es_seq {
    char topic[ES_TOPIC_MAX];
    uint64_t applied;
    uint64_t lagging; /* a heartbeat head above `applied`, 0 when none */
} es_seq;

typedef struct es_core {
    es_topics topics;
    uint64_t epoch;
    bool have_epoch;
    es_seq seqs[ES_TOPICS_MAX];
    size_t seq_count;
    uint64_t dead[4]; /* epochs known to be over */
    size_t dead_count, dead_next;
    uint64_t suspect; /* an epoch seen in an event, not yet confirmed by a snapshot */
    bool have_suspect;
    bool resync; /* a snapshot is wanted */
    char reason[128];
    int64_t last_heartbeat_ms;
    earshot_follower_stats stats;
} es_core;

/* UNTRACKED: a topic past the table's ES_TOPICS_MAX, whose order cannot be kept (dropped). */
typedef enum es_verdict { ES_DROP = 0, ES_APPLY = 1, ES_UNTRACKED = 2 } es_verdict;

void es_core_init(es_core *core, const es_topics *topics);
void es_core_want(es_core *core, const char *reason);
/* A snapshot arrived at `now`: its epoch and the topic_seq of the subscribed topics become the
 * baseline. Returns whether the epoch changed from the previous snapshot. */
bool es_core_snapshot(es_core *core, const Earshot__V1__SessionSnapshot *snapshot, int64_t now);
/* An event arrived: APPLY (in order, past the snapshot), DROP (stale, a heartbeat, or a loss
 * that asks for a snapshot) or UNTRACKED. */
es_verdict es_core_event(es_core *core, const Earshot__V1__EventEnvelope *event, int64_t now);
/* Asks for a snapshot when no heartbeat came for `timeout_ms`; returns whether it did. */
bool es_core_check_heartbeat(es_core *core, int64_t now, int64_t timeout_ms);

#pragma GCC visibility pop

#endif
