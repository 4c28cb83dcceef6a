/* The follower's decisions (docs/PROTOCOL.md, "Joining late"), apart from its sockets: which
 * events to apply, which to drop, and when a new snapshot is needed. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

void es_core_init(es_core *core, const es_topics *topics) {
    memset(core, 0, sizeof *core);
    if (topics != NULL) core->topics = *topics;
    core->resync = true;
    snprintf(core->reason, sizeof core->reason, "start");
}

void es_core_want(es_core *core, const char *reason) {
    if (core->resync) return; /* the first reason stays */
    core->resync = true;
    snprintf(core->reason, sizeof core->reason, "%s", reason);
}

/* The seq record of a topic; a new one when `create` and there is room (else NULL). */
static es_seq *seq_of(es_core *core, const char *topic, bool create) {
    for (size_t i = 0; i < core->seq_count; i++)
        if (strcmp(core->seqs[i].topic, topic) == 0) return &core->seqs[i];
    if (!create || core->seq_count == ES_TOPICS_MAX || strlen(topic) >= ES_TOPIC_MAX) return NULL;
    es_seq *seq = &core->seqs[core->seq_count++];
    memset(seq, 0, sizeof *seq);
    snprintf(seq->topic, sizeof seq->topic, "%s", topic);
    return seq;
}

static bool is_dead(const es_core *core, uint64_t epoch) {
    for (size_t i = 0; i < core->dead_count; i++)
        if (core->dead[i] == epoch) return true;
    return false;
}

static void add_dead(es_core *core, uint64_t epoch) {
    if (is_dead(core, epoch)) return;
    size_t capacity = sizeof core->dead / sizeof core->dead[0];
    core->dead[core->dead_next] = epoch;
    core->dead_next = (core->dead_next + 1) % capacity;
    if (core->dead_count < capacity) core->dead_count++;
}

static void forget_dead(es_core *core, uint64_t epoch) {
    for (size_t i = 0; i < core->dead_count; i++)
        if (core->dead[i] == epoch) core->dead[i] = 0; /* epochs are random and nonzero in practice */
}

bool es_core_snapshot(es_core *core, const Earshot__V1__SessionSnapshot *snapshot, int64_t now) {
    bool changed = core->have_epoch && core->epoch != snapshot->epoch;
    /* An event of an epoch the daemon is not in: left over from an earlier start. */
    if (core->have_suspect && core->suspect != snapshot->epoch) add_dead(core, core->suspect);
    if (changed) {
        add_dead(core, core->epoch);
        core->stats.epoch_changes++;
    }
    forget_dead(core, snapshot->epoch);
    core->have_suspect = false;
    core->epoch = snapshot->epoch;
    core->have_epoch = true;
    core->seq_count = 0;
    for (size_t i = 0; i < snapshot->n_topic_seq; i++) {
        const Earshot__V1__SessionSnapshot__TopicSeqEntry *entry = snapshot->topic_seq[i];
        /* Only the topics received: the others would take the table's room. */
        if (entry == NULL || entry->key == NULL || !es_topics_receive(&core->topics, entry->key)) continue;
        es_seq *seq = seq_of(core, entry->key, true);
        if (seq != NULL) seq->applied = entry->value;
    }
    core->resync = false;
    core->reason[0] = '\0';
    core->last_heartbeat_ms = now;
    core->stats.snapshots++;
    return changed;
}

static void heartbeat(es_core *core, const Earshot__V1__EventEnvelope *event, int64_t now) {
    core->last_heartbeat_ms = now;
    es_seq *own = seq_of(core, event->topic, true);
    if (own != NULL && event->seq > own->applied) own->applied = event->seq;
    if (event->body_case != EARSHOT__V1__EVENT_ENVELOPE__BODY_HEARTBEAT || event->heartbeat == NULL) return;
    /* A head beyond what was applied means lost events, unless they are still on their way: a
     * topic counts as lost only when it is still behind at the next heartbeat. */
    uint64_t before[ES_TOPICS_MAX];
    for (size_t i = 0; i < core->seq_count; i++) {
        before[i] = core->seqs[i].lagging;
        core->seqs[i].lagging = 0;
    }
    const Earshot__V1__Heartbeat *beat = event->heartbeat;
    for (size_t i = 0; i < beat->n_heads; i++) {
        const Earshot__V1__Heartbeat__HeadsEntry *head = beat->heads[i];
        if (head == NULL || head->key == NULL || strcmp(head->key, EARSHOT_TOPIC_HEARTBEAT) == 0 ||
            !es_topics_receive(&core->topics, head->key))
            continue;
        size_t count = core->seq_count;
        es_seq *seq = seq_of(core, head->key, true);
        if (seq == NULL) continue;
        uint64_t earlier = (size_t)(seq - core->seqs) < count ? before[seq - core->seqs] : 0;
        if (head->value > seq->applied) {
            if (earlier > seq->applied) {
                char reason[128];
                snprintf(reason, sizeof reason, "heartbeat: %s is at seq %" PRIu64 ", applied %" PRIu64, head->key,
                         head->value, seq->applied);
                core->stats.gaps++;
                es_core_want(core, reason);
                return;
            }
            seq->lagging = head->value;
        }
    }
}

es_verdict es_core_event(es_core *core, const Earshot__V1__EventEnvelope *event, int64_t now) {
    if (core->resync) { /* received before the coming snapshot is asked for: it includes it */
        core->stats.stale_dropped++;
        return ES_DROP;
    }
    if (event->epoch != core->epoch) {
        if (is_dead(core, event->epoch)) {
            core->stats.stale_dropped++;
            return ES_DROP;
        }
        char reason[128];
        snprintf(reason, sizeof reason, "epoch changed (%" PRIu64 " -> %" PRIu64 ")", core->epoch, event->epoch);
        core->suspect = event->epoch;
        core->have_suspect = true;
        es_core_want(core, reason);
        return ES_DROP;
    }
    const char *topic = event->topic != NULL ? event->topic : "";
    /* By topic, not body: the benchmark's earshot.v1/loadtest/ events carry Heartbeat bodies
     * without heads, and must neither reset the heartbeat clock nor the lagging heads. */
    if (strcmp(topic, EARSHOT_TOPIC_HEARTBEAT) == 0) {
        heartbeat(core, event, now);
        return ES_DROP;
    }
    es_seq *seq = seq_of(core, topic, true);
    if (seq == NULL) return ES_UNTRACKED;
    if (event->seq <= seq->applied) {
        core->stats.stale_dropped++;
        return ES_DROP;
    }
    if (event->seq != seq->applied + 1) {
        char reason[128];
        snprintf(reason, sizeof reason, "gap on %s: expected seq %" PRIu64 ", got %" PRIu64, topic,
                 seq->applied + 1, event->seq);
        core->stats.gaps++;
        es_core_want(core, reason);
        return ES_DROP;
    }
    seq->applied = event->seq;
    core->stats.events++;
    return ES_APPLY;
}

bool es_core_check_heartbeat(es_core *core, int64_t now, int64_t timeout_ms) {
    if (core->resync || now - core->last_heartbeat_ms < timeout_ms) return false;
    char reason[64];
    snprintf(reason, sizeof reason, "no heartbeat for %g s", (double)timeout_ms / 1000.0);
    core->stats.gaps++;
    es_core_want(core, reason);
    return true;
}
