/* The late-joiner follower: a subscriber, a client for snapshots, and follower_core's rules. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { HEARTBEAT_TIMEOUT_MS = 3000, MIN_RESYNC_MS = 500, RETRY_MS = 1000, SNAPSHOT_TIMEOUT_MS = 2000 };

struct earshot_follower {
    pthread_mutex_t lock;
    void *context;
    bool own_context;
    earshot_client *client;
    earshot_subscriber *subscriber;
    es_core core;
    Earshot__V1__SessionSnapshot *snapshot;
    /* The last session/ and match/ events (kept for the accessors), and the event delivered by
     * the last poll when it is neither (freed at the next poll). */
    Earshot__V1__EventEnvelope *session_event, *match_event, *current;
    int64_t next_snapshot_at;
};

static void release(Earshot__V1__EventEnvelope **event) {
    if (*event != NULL) earshot__v1__event_envelope__free_unpacked(*event, NULL);
    *event = NULL;
}

int earshot_follower_open(const earshot_options *options, const char *const *topics, size_t n,
                          earshot_follower **out, earshot_status *status) {
    if (out == NULL) return es_fail(status, EARSHOT_INVALID_ARGUMENT, "no place for the follower");
    *out = NULL;
    earshot_options mine;
    if (options == NULL) earshot_options_init(&mine);
    else mine = *options;
    /* The topics asked for, plus those the follower needs itself. */
    es_topics wanted = {.count = 0};
    int code = EARSHOT_OK;
    if (topics == NULL || n == 0) code = es_topics_add(&wanted, "earshot.v1/", status);
    for (size_t i = 0; i < n && code == EARSHOT_OK; i++) code = es_topics_add(&wanted, topics[i], status);
    const char *required[] = {EARSHOT_TOPIC_SESSION, EARSHOT_TOPIC_MATCH, EARSHOT_TOPIC_HEARTBEAT};
    for (size_t i = 0; i < 3 && code == EARSHOT_OK; i++)
        if (!es_topics_receive(&wanted, required[i])) code = es_topics_add(&wanted, required[i], status);
    if (code != EARSHOT_OK) return code;
    const char *names[ES_TOPICS_MAX];
    for (size_t i = 0; i < wanted.count; i++) names[i] = wanted.names[i];

    earshot_follower *f = calloc(1, sizeof *f);
    if (f == NULL) return es_fail(status, EARSHOT_RESOURCE_EXHAUSTED, "out of memory");
    if (pthread_mutex_init(&f->lock, NULL) != 0) {
        free(f);
        return es_fail(status, EARSHOT_INTERNAL, "pthread_mutex_init failed");
    }
    /* One context (one I/O thread) for both sockets. */
    if ((code = es_context(&mine, &f->context, &f->own_context, status)) != EARSHOT_OK) goto fail;
    mine.zmq_context = f->context;
    /* Subscribe first: events published while the snapshot is taken wait in the SUB queue. */
    if ((code = earshot_subscriber_open(&mine, names, wanted.count, &f->subscriber, status)) != EARSHOT_OK) goto fail;
    if ((code = earshot_client_open(&mine, &f->client, status)) != EARSHOT_OK) goto fail;
    es_core_init(&f->core, &wanted);
    *out = f;
    return es_ok(status);
fail:
    earshot_subscriber_close(f->subscriber);
    if (f->own_context && f->context != NULL) zmq_ctx_term(f->context);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return code;
}

void earshot_follower_close(earshot_follower *f) {
    if (f == NULL) return;
    earshot_client_close(f->client);
    earshot_subscriber_close(f->subscriber);
    if (f->own_context) zmq_ctx_term(f->context);
    earshot_message_free(f->snapshot ? &f->snapshot->base : NULL);
    release(&f->session_event);
    release(&f->match_event);
    release(&f->current);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static void take_snapshot(earshot_follower *f, earshot_update *update) {
    snprintf(update->reason, sizeof update->reason, "%s", f->core.reason[0] ? f->core.reason : "requested");
    f->next_snapshot_at = es_now_ms() + MIN_RESYNC_MS;
    Earshot__V1__SessionSnapshot *snapshot = NULL;
    int code = earshot_get_snapshot(f->client, &snapshot, SNAPSHOT_TIMEOUT_MS, &update->error);
    if (code != EARSHOT_OK) {
        f->next_snapshot_at = es_now_ms() + RETRY_MS;
        update->kind = EARSHOT_UPDATE_ERROR;
        return;
    }
    bool new_epoch = es_core_snapshot(&f->core, snapshot, es_now_ms());
    earshot_message_free(f->snapshot ? &f->snapshot->base : NULL);
    f->snapshot = snapshot;
    release(&f->session_event); /* older than the snapshot */
    if (new_epoch) release(&f->match_event);
    update->kind = EARSHOT_UPDATE_SNAPSHOT;
    update->snapshot = snapshot;
}

earshot_next earshot_follower_poll(earshot_follower *f, earshot_update *update, int wait_ms) {
    if (update == NULL) return EARSHOT_NEXT_END;
    memset(update, 0, sizeof *update);
    if (f == NULL) {
        update->kind = EARSHOT_UPDATE_ERROR;
        es_fail(&update->error, EARSHOT_INVALID_ARGUMENT, "no follower");
        return EARSHOT_NEXT_END;
    }
    pthread_mutex_lock(&f->lock);
    release(&f->current);
    int64_t until = wait_ms < 0 ? ES_NEVER : es_now_ms() + wait_ms;
    earshot_next next = EARSHOT_NEXT_WAIT;
    /* Whether the subscriber was just found empty: only then is the heartbeat's age judged (a
     * heartbeat waiting in the queue is not a missing one, however long the caller was away). */
    bool drained = false;
    for (int n = 1;; n++) {
        int64_t now = es_now_ms();
        if (n % 256 == 0 && now >= until) break; /* events dropped one after the other: the clock counts */
        if (f->core.resync && now >= f->next_snapshot_at) {
            take_snapshot(f, update);
            next = EARSHOT_NEXT_ITEM;
            break;
        }
        if (drained && es_core_check_heartbeat(&f->core, now, HEARTBEAT_TIMEOUT_MS)) continue;
        if (drained && now >= until) break;
        int64_t wake = f->core.resync ? f->next_snapshot_at : f->core.last_heartbeat_ms + HEARTBEAT_TIMEOUT_MS;
        if (until < wake) wake = until;
        int64_t wait = drained ? wake - now : 0;
        Earshot__V1__EventEnvelope *event = NULL;
        earshot_next got = earshot_subscriber_next(f->subscriber, &event, wait < 0 ? 0 : wait > 60000 ? 60000 : (int)wait);
        if (got == EARSHOT_NEXT_END) { /* the context was shut down */
            update->kind = EARSHOT_UPDATE_ERROR;
            es_fail(&update->error, EARSHOT_UNAVAILABLE, "the events socket is closed (ZeroMQ context shut down)");
            next = EARSHOT_NEXT_END;
            break;
        }
        drained = got != EARSHOT_NEXT_ITEM;
        if (drained) continue;
        es_verdict verdict = es_core_event(&f->core, event, es_now_ms());
        if (verdict == ES_UNTRACKED) {
            update->kind = EARSHOT_UPDATE_ERROR;
            es_fail(&update->error, EARSHOT_RESOURCE_EXHAUSTED,
                    "%s: more than %d topics to keep in order; its event (seq %" PRIu64 ") was dropped", event->topic,
                    ES_TOPICS_MAX, event->seq);
            snprintf(update->reason, sizeof update->reason, "topic table full");
            release(&event);
            next = EARSHOT_NEXT_ITEM;
            break;
        }
        if (verdict == ES_DROP) {
            release(&event);
            continue;
        }
        if (event->body_case == EARSHOT__V1__EVENT_ENVELOPE__BODY_SESSION) {
            release(&f->session_event);
            f->session_event = event;
        } else if (event->body_case == EARSHOT__V1__EVENT_ENVELOPE__BODY_MATCH) {
            release(&f->match_event);
            f->match_event = event;
        } else {
            f->current = event;
        }
        update->kind = EARSHOT_UPDATE_EVENT;
        update->event = event;
        next = EARSHOT_NEXT_ITEM;
        break;
    }
    pthread_mutex_unlock(&f->lock);
    return next;
}

const Earshot__V1__SessionSnapshot *earshot_follower_session(earshot_follower *f) {
    if (f == NULL) return NULL;
    pthread_mutex_lock(&f->lock);
    const Earshot__V1__SessionSnapshot *session =
        f->session_event != NULL && f->session_event->session != NULL ? f->session_event->session : f->snapshot;
    pthread_mutex_unlock(&f->lock);
    return session;
}

const Earshot__V1__MatchResult *earshot_follower_last_match(earshot_follower *f) {
    if (f == NULL) return NULL;
    pthread_mutex_lock(&f->lock);
    const Earshot__V1__MatchResult *match = f->match_event != NULL ? f->match_event->match : NULL;
    pthread_mutex_unlock(&f->lock);
    return match;
}

uint64_t earshot_follower_epoch(earshot_follower *f) {
    if (f == NULL) return 0;
    pthread_mutex_lock(&f->lock);
    uint64_t epoch = f->core.have_epoch ? f->core.epoch : 0;
    pthread_mutex_unlock(&f->lock);
    return epoch;
}

bool earshot_follower_synced(earshot_follower *f) {
    if (f == NULL) return false;
    pthread_mutex_lock(&f->lock);
    bool synced = f->snapshot != NULL && !f->core.resync;
    pthread_mutex_unlock(&f->lock);
    return synced;
}

void earshot_follower_counters(earshot_follower *f, earshot_follower_stats *stats) {
    if (f == NULL || stats == NULL) return;
    pthread_mutex_lock(&f->lock);
    *stats = f->core.stats;
    pthread_mutex_unlock(&f->lock);
}

void earshot_follower_resync(earshot_follower *f, const char *reason) {
    if (f == NULL) return;
    pthread_mutex_lock(&f->lock);
    es_core_want(&f->core, reason != NULL ? reason : "requested");
    pthread_mutex_unlock(&f->lock);
}

double earshot_predict_offset(const Earshot__V1__MatchedMediaItem *item, int64_t at_unix_ms, int64_t now_unix_ms) {
    if (item == NULL) return 0;
    double offset = item->predicted_current_match_offset;
    if (at_unix_ms == 0) return offset;
    return offset + (double)(now_unix_ms - at_unix_ms) / 1000.0 * (1.0 + item->time_skew);
}
