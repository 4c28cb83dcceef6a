/* libFuzzer: an RPC reply as the client decodes it. Input: [method][signature mode][frames…]:
 * the reply's signature frame (right, or a few fuzzed bytes) and envelope, then the payload as
 * the chosen method's response, then the JSON printer over the result. */
#include <stdio.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink; /* the harness's own, opened once */
    if (sink == NULL && (sink = fopen("/dev/null", "w")) == NULL) return 0;
    if (size < 2) return 0;
    const earshot_method *method = earshot_methods[data[0] % earshot_method_count];
    const uint8_t *signature = (const uint8_t *)EARSHOT_SIGNATURE;
    size_t signature_length = 9, skip = 2;
    if ((data[1] & 3) == 3) { /* a fuzzed signature frame */
        signature = data + 2;
        signature_length = (size_t)(data[1] >> 2) % 12;
        if (signature_length > size - 2) signature_length = size - 2;
        skip += signature_length;
    }
    Earshot__V1__ResponseEnvelope *reply = es_decode_reply(signature, signature_length, data + skip, size - skip);
    if (reply == NULL) return 0;
    earshot_status status;
    es_reply_status(reply, &status);
    ProtobufCMessage *message = NULL;
    if (es_decode_payload(&reply->payload, method->response, &message, "tcp://fuzz:1", method->path, &status) ==
        EARSHOT_OK) {
        earshot_json_write(sink, message);
        earshot_message_free(message);
    }
    earshot_json_write(sink, &reply->base);
    earshot__v1__response_envelope__free_unpacked(reply, NULL);
    return 0;
}
