/* Status codes and messages, clocks, buffers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static const char *const code_names[] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
};

const char *earshot_code_name(int code) {
    if (code < 0 || code > EARSHOT_UNAUTHENTICATED) return "UNKNOWN_CODE";
    return code_names[code];
}

int es_fail(earshot_status *status, int code, const char *format, ...) {
    if (status != NULL) {
        status->code = code;
        va_list args;
        va_start(args, format);
        int n = vsnprintf(status->message, sizeof status->message, format, args);
        va_end(args);
        if (n < 0) status->message[0] = '\0';
    }
    return code;
}

int es_ok(earshot_status *status) {
    if (status != NULL) {
        status->code = EARSHOT_OK;
        status->message[0] = '\0';
    }
    return EARSHOT_OK;
}

void es_status_set(earshot_status *status, int code, const char *message) {
    if (status == NULL) return;
    status->code = code;
    snprintf(status->message, sizeof status->message, "%s", message != NULL ? message : "");
}

int64_t es_now_ms(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) return 0; /* cannot fail with a valid clock id */
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int64_t es_wall_ms(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_REALTIME, &t) != 0) return 0;
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int es_buffer_reserve(es_buffer *buffer, size_t size) {
    if (size <= buffer->capacity) return 0;
    size_t capacity = buffer->capacity ? buffer->capacity : 256;
    while (capacity < size) {
        if (capacity > SIZE_MAX / 2) return -1;
        capacity *= 2;
    }
    uint8_t *data = realloc(buffer->data, capacity);
    if (data == NULL) return -1;
    buffer->data = data;
    buffer->capacity = capacity;
    return 0;
}

void es_buffer_free(es_buffer *buffer) {
    free(buffer->data);
    buffer->data = NULL;
    buffer->capacity = 0;
}

void earshot_message_free(ProtobufCMessage *message) {
    if (message != NULL) protobuf_c_message_free_unpacked(message, NULL);
}
