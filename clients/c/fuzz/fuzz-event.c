/* libFuzzer: events as the subscriber decodes them and the follower judges them. Input: a
 * sequence of [topic length][topic][body length, 2 bytes][body]; each decoded event is printed
 * as JSON and fed to a follower core that starts from a snapshot of epoch 7. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    if (sink == NULL && (sink = fopen("/dev/null", "w")) == NULL) return 0;
    es_topics topics = {.count = 0};
    es_topics_add(&topics, "earshot.v1/", NULL);
    es_core core;
    es_core_init(&core, &topics);
    Earshot__V1__SessionSnapshot__TopicSeqEntry match = EARSHOT__V1__SESSION_SNAPSHOT__TOPIC_SEQ_ENTRY__INIT,
                                                    hb = EARSHOT__V1__SESSION_SNAPSHOT__TOPIC_SEQ_ENTRY__INIT;
    match.key = "earshot.v1/match/";
    match.value = 3;
    hb.key = "earshot.v1/hb/";
    hb.value = 10;
    Earshot__V1__SessionSnapshot__TopicSeqEntry *entries[] = {&match, &hb};
    Earshot__V1__SessionSnapshot snapshot = EARSHOT__V1__SESSION_SNAPSHOT__INIT;
    snapshot.epoch = 7;
    snapshot.n_topic_seq = 2;
    snapshot.topic_seq = entries;
    es_core_snapshot(&core, &snapshot, 0);
    int64_t now = 0;
    while (size >= 3) {
        size_t topic_length = data[0] % ES_TOPIC_MAX;
        if (topic_length + 3 > size) break;
        const uint8_t *topic = data + 1;
        size_t body_length = (size_t)data[1 + topic_length] | (size_t)data[2 + topic_length] << 8;
        data += 3 + topic_length;
        size -= 3 + topic_length;
        if (body_length > size) body_length = size;
        Earshot__V1__EventEnvelope *event = es_decode_event(topic, topic_length, data, body_length);
        data += body_length;
        size -= body_length;
        if (event == NULL) continue;
        earshot_json_write(sink, &event->base);
        now += 700;
        es_core_check_heartbeat(&core, now, 3000);
        if (core.resync) es_core_snapshot(&core, &snapshot, now);
        es_core_event(&core, event, now);
        earshot__v1__event_envelope__free_unpacked(event, NULL);
    }
    return 0;
}
