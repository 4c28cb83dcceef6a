/* From received frames to messages: everything here reads untrusted bytes (fuzz/ drives it). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

Earshot__V1__ResponseEnvelope *es_decode_reply(const uint8_t *signature, size_t signature_length,
                                               const uint8_t *body, size_t body_length) {
    if (signature_length != strlen(EARSHOT_SIGNATURE) || memcmp(signature, EARSHOT_SIGNATURE, signature_length) != 0)
        return NULL;
    Earshot__V1__ResponseEnvelope *reply = earshot__v1__response_envelope__unpack(NULL, body_length, body);
    if (reply == NULL) return NULL;
    bool known_kind = reply->kind == EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_MESSAGE ||
                      reply->kind == EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_END ||
                      reply->kind == EARSHOT__V1__RESPONSE_ENVELOPE__KIND__KIND_PONG;
    if (reply->request_id == 0 || !known_kind) {
        earshot__v1__response_envelope__free_unpacked(reply, NULL);
        return NULL;
    }
    return reply;
}

int es_decode_payload(const ProtobufCBinaryData *payload, const ProtobufCMessageDescriptor *type,
                      ProtobufCMessage **out, const char *endpoint, const char *path, earshot_status *status) {
    *out = protobuf_c_message_unpack(type, NULL, payload->len, payload->data);
    if (*out == NULL)
        return es_fail(status, EARSHOT_INTERNAL, "%s: %s sent %zu bytes that are not a %s", path, endpoint,
                       payload->len, type->name);
    return es_ok(status);
}

int es_reply_status(const Earshot__V1__ResponseEnvelope *reply, earshot_status *status) {
    if (reply->status == NULL) return es_ok(status);
    int code = reply->status->code;
    const char *message = reply->status->message ? reply->status->message : "";
    if (code < 0 || code > EARSHOT_UNAUTHENTICATED)
        /* A code this library does not know is still a failure: UNKNOWN, as gRPC maps it, with
         * the number kept in the message. */
        return es_fail(status, EARSHOT_UNKNOWN, "status code %d: %s", code, message);
    es_status_set(status, code, message);
    return code;
}

Earshot__V1__EventEnvelope *es_decode_event(const uint8_t *topic, size_t topic_length, const uint8_t *body,
                                            size_t body_length) {
    if (topic_length == 0 || topic_length >= ES_TOPIC_MAX || memchr(topic, '\0', topic_length) != NULL) return NULL;
    Earshot__V1__EventEnvelope *event = earshot__v1__event_envelope__unpack(NULL, body_length, body);
    if (event == NULL) return NULL;
    if (event->topic == NULL || event->topic[0] == '\0') {
        /* protobuf-c frees strings with the allocator it unpacked with (malloc): give it one. */
        char *copy = malloc(topic_length + 1);
        if (copy == NULL) {
            earshot__v1__event_envelope__free_unpacked(event, NULL);
            return NULL;
        }
        memcpy(copy, topic, topic_length);
        copy[topic_length] = '\0';
        if (event->topic != NULL && event->topic != protobuf_c_empty_string) free(event->topic);
        event->topic = copy;
    } else if (strlen(event->topic) != topic_length || memcmp(event->topic, topic, topic_length) != 0) {
        earshot__v1__event_envelope__free_unpacked(event, NULL);
        return NULL;
    }
    return event;
}
