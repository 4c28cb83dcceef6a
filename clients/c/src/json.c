/* protobuf's JSON mapping of any protobuf-c message, by walking its descriptor (as
 * `earshot remote … --json` prints with SwiftProtobuf: compact, lowerCamelCase, defaults left
 * out, enums by name, 64-bit integers as numbers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void write_name(FILE *out, const char *name) {
    /* protoc's json_name: drop each '_' and capitalise the letter after it. */
    fputc('"', out);
    bool upper = false;
    for (const char *p = name; *p; p++) {
        if (*p == '_') {
            upper = true;
            continue;
        }
        fputc(upper && *p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p, out);
        upper = false;
    }
    fputs("\":", out);
}

static void write_string(FILE *out, const char *text) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20) fprintf(out, "\\u%04x", *p);
            else fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* The shortest text that reads back as the same double, as Swift prints it. */
static void write_double(FILE *out, double value, int max_digits) {
    if (isnan(value)) {
        fputs("\"NaN\"", out);
        return;
    }
    if (isinf(value)) {
        fputs(value > 0 ? "\"Infinity\"" : "\"-Infinity\"", out);
        return;
    }
    char text[40];
    for (int digits = 1; digits <= max_digits; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, value);
        if (max_digits > 9 ? strtod(text, NULL) == value : strtof(text, NULL) == (float)value) break;
    }
    fputs(text, out);
}

static void write_base64(FILE *out, const ProtobufCBinaryData *data) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fputc('"', out);
    for (size_t i = 0; i < data->len; i += 3) {
        uint32_t n = (uint32_t)data->data[i] << 16;
        if (i + 1 < data->len) n |= (uint32_t)data->data[i + 1] << 8;
        if (i + 2 < data->len) n |= data->data[i + 2];
        fputc(digits[(n >> 18) & 63], out);
        fputc(digits[(n >> 12) & 63], out);
        fputc(i + 1 < data->len ? digits[(n >> 6) & 63] : '=', out);
        fputc(i + 2 < data->len ? digits[n & 63] : '=', out);
    }
    fputc('"', out);
}

static void write_message(FILE *out, const ProtobufCMessage *message, int depth);

static size_t element_size(ProtobufCType type) {
    switch (type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        return 8;
    case PROTOBUF_C_TYPE_FLOAT: return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE: return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
    }
    return 0;
}

/* Whether a singular value is its type's default (left out of proto3 JSON). */
static bool is_default(const ProtobufCFieldDescriptor *field, const void *value) {
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_ENUM:
        return *(const uint32_t *)value == 0;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        return *(const uint64_t *)value == 0;
    case PROTOBUF_C_TYPE_FLOAT: { float f = *(const float *)value; return f == 0 && !signbit(f); }
    case PROTOBUF_C_TYPE_DOUBLE: { double d = *(const double *)value; return d == 0 && !signbit(d); }
    case PROTOBUF_C_TYPE_BOOL: return !*(const protobuf_c_boolean *)value;
    case PROTOBUF_C_TYPE_STRING: { const char *s = *(char *const *)value; return s == NULL || s[0] == '\0'; }
    case PROTOBUF_C_TYPE_BYTES: return ((const ProtobufCBinaryData *)value)->len == 0;
    case PROTOBUF_C_TYPE_MESSAGE: return *(ProtobufCMessage *const *)value == NULL;
    }
    return true;
}

static void write_value(FILE *out, const ProtobufCFieldDescriptor *field, const void *value, int depth) {
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
        fprintf(out, "%d", (int)*(const int32_t *)value); break;
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
        fprintf(out, "%u", (unsigned)*(const uint32_t *)value); break;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        fprintf(out, "%lld", (long long)*(const int64_t *)value); break;
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        fprintf(out, "%llu", (unsigned long long)*(const uint64_t *)value); break;
    case PROTOBUF_C_TYPE_FLOAT: write_double(out, *(const float *)value, 9); break;
    case PROTOBUF_C_TYPE_DOUBLE: write_double(out, *(const double *)value, 17); break;
    case PROTOBUF_C_TYPE_BOOL: fputs(*(const protobuf_c_boolean *)value ? "true" : "false", out); break;
    case PROTOBUF_C_TYPE_ENUM: {
        int number = *(const int *)value;
        const ProtobufCEnumValue *known = protobuf_c_enum_descriptor_get_value(field->descriptor, number);
        if (known != NULL) write_string(out, known->name);
        else fprintf(out, "%d", number); /* a value this client does not know */
        break;
    }
    case PROTOBUF_C_TYPE_STRING: write_string(out, *(char *const *)value); break;
    case PROTOBUF_C_TYPE_BYTES: write_base64(out, value); break;
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *child = *(ProtobufCMessage *const *)value;
        if (child == NULL) fputs("{}", out);
        else write_message(out, child, depth + 1);
        break;
    }
    }
}

/* A map field is a repeated message "…Entry" of two fields, key (1) and value (2). */
static bool is_map(const ProtobufCFieldDescriptor *field) {
    if (field->type != PROTOBUF_C_TYPE_MESSAGE || field->label != PROTOBUF_C_LABEL_REPEATED) return false;
    const ProtobufCMessageDescriptor *entry = field->descriptor;
    size_t length = strlen(entry->name);
    return entry->n_fields == 2 && length > 5 && strcmp(entry->name + length - 5, "Entry") == 0 &&
           strcmp(entry->fields[0].name, "key") == 0 && strcmp(entry->fields[1].name, "value") == 0;
}

static void write_map(FILE *out, const ProtobufCFieldDescriptor *field, size_t n, ProtobufCMessage *const *entries,
                      int depth) {
    const ProtobufCMessageDescriptor *entry = field->descriptor;
    const ProtobufCFieldDescriptor *key = &entry->fields[0], *value = &entry->fields[1];
    fputc('{', out);
    for (size_t i = 0; i < n; i++) {
        const char *item = (const char *)entries[i];
        if (i) fputc(',', out);
        if (key->type == PROTOBUF_C_TYPE_STRING) {
            write_string(out, *(char *const *)(item + key->offset));
        } else { /* JSON keys are strings: integer and bool keys are quoted */
            fputc('"', out);
            write_value(out, key, item + key->offset, depth);
            fputc('"', out);
        }
        fputc(':', out);
        write_value(out, value, item + value->offset, depth);
    }
    fputc('}', out);
}

static void write_message(FILE *out, const ProtobufCMessage *message, int depth) {
    if (depth > 64) { /* deeper than any message decodes to; never expected */
        fputs("{}", out);
        return;
    }
    const ProtobufCMessageDescriptor *type = message->descriptor;
    const char *base = (const char *)message;
    bool first = true;
    fputc('{', out);
    for (unsigned i = 0; i < type->n_fields; i++) {
        const ProtobufCFieldDescriptor *field = &type->fields[i];
        const void *value = base + field->offset;
        if (field->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + field->quantifier_offset);
            if (n == 0) continue;
            if (!first) fputc(',', out);
            first = false;
            write_name(out, field->name);
            const char *items = *(const char *const *)value;
            if (is_map(field)) {
                write_map(out, field, n, (ProtobufCMessage *const *)items, depth);
                continue;
            }
            fputc('[', out);
            for (size_t k = 0; k < n; k++) {
                if (k) fputc(',', out);
                write_value(out, field, items + k * element_size(field->type), depth);
            }
            fputc(']', out);
            continue;
        }
        if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            /* A oneof member (and proto3 optional, generated as one) is written when set, even
             * when it holds its type's default. */
            if (*(const uint32_t *)(base + field->quantifier_offset) != field->id) continue;
        } else if (field->label == PROTOBUF_C_LABEL_OPTIONAL && field->quantifier_offset != 0 &&
                   field->type != PROTOBUF_C_TYPE_MESSAGE && field->type != PROTOBUF_C_TYPE_STRING) {
            if (!*(const protobuf_c_boolean *)(base + field->quantifier_offset)) continue;
        } else if (is_default(field, value)) {
            continue;
        }
        if (!first) fputc(',', out);
        first = false;
        write_name(out, field->name);
        write_value(out, field, value, depth);
    }
    fputc('}', out);
}

int earshot_json_write(FILE *out, const ProtobufCMessage *message) {
    if (out == NULL || message == NULL) return -1;
    write_message(out, message, 0);
    return ferror(out) ? -1 : 0;
}
