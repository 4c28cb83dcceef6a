/* What both sockets share: endpoints, CURVE keys, socket options, the context, topic filters. */
#include <string.h>

#include "internal.h"

void earshot_options_init(earshot_options *options) {
    if (options != NULL) memset(options, 0, sizeof *options);
}

int es_endpoint(const char *given, const char *fallback, char out[ES_ENDPOINT_MAX], earshot_status *status) {
    const char *endpoint = (given != NULL && given[0] != '\0') ? given : fallback;
    /* "host:port" means tcp, as with the other clients. */
    const char *scheme = strstr(endpoint, "://") != NULL ? "" : "tcp://";
    size_t need = strlen(scheme) + strlen(endpoint);
    if (need >= ES_ENDPOINT_MAX)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "endpoint too long (%zu characters)", need);
    if (strchr(endpoint, ':') == NULL)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "endpoint \"%s\": expected tcp://host:port", endpoint);
    memcpy(out, scheme, strlen(scheme));
    memcpy(out + strlen(scheme), endpoint, strlen(endpoint) + 1);
    return es_ok(status);
}

int es_curve_load(const earshot_options *options, es_curve *curve, earshot_status *status) {
    memset(curve, 0, sizeof *curve);
    const char *server = options->server_key, *client = options->client_key;
    bool has_server = server != NULL && server[0] != '\0', has_client = client != NULL && client[0] != '\0';
    if (!has_server && !has_client) return es_ok(status);
    if (!has_server || !has_client)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT,
                       "CURVE needs both the server's public key and this client's secret key file");
    int code;
    if (es_is_key(server, strlen(server))) {
        memcpy(curve->server, server, 40);
        curve->server[40] = '\0';
    } else if ((code = earshot_read_key_file(server, curve->server, status)) != EARSHOT_OK) {
        goto fail;
    }
    if ((code = earshot_read_key_file(client, curve->secret, status)) != EARSHOT_OK) goto fail;
    if ((code = earshot_public_key(curve->secret, curve->public_key, status)) != EARSHOT_OK) goto fail;
    curve->on = true;
    return es_ok(status);
fail:
    explicit_bzero(curve, sizeof *curve);
    return code;
}

static int set_int(void *socket, int option, int value, const char *name, earshot_status *status) {
    if (zmq_setsockopt(socket, option, &value, sizeof value) != 0)
        return es_fail(status, EARSHOT_INTERNAL, "zmq_setsockopt(%s): %s", name, zmq_strerror(zmq_errno()));
    return EARSHOT_OK;
}

int es_configure(void *socket, const es_curve *curve, earshot_status *status) {
    int code;
    /* LINGER 0: closing never waits for a daemon that is gone. ZMTP heartbeats: a dead peer is
     * noticed and the connection remade (docs/PROTOCOL.md, recommended options). */
    if ((code = set_int(socket, ZMQ_LINGER, 0, "LINGER", status)) ||
        (code = set_int(socket, ZMQ_HEARTBEAT_IVL, 2000, "HEARTBEAT_IVL", status)) ||
        (code = set_int(socket, ZMQ_HEARTBEAT_TIMEOUT, 6000, "HEARTBEAT_TIMEOUT", status)) ||
        (code = set_int(socket, ZMQ_HEARTBEAT_TTL, 6000, "HEARTBEAT_TTL", status)))
        return code;
    if (curve->on) {
        if (zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, curve->server, 40) != 0 ||
            zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, curve->public_key, 40) != 0 ||
            zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, curve->secret, 40) != 0)
            return es_fail(status, EARSHOT_INTERNAL, "cannot set the CURVE keys: %s (is libzmq built with CURVE?)",
                           zmq_strerror(zmq_errno()));
    }
    return EARSHOT_OK;
}

int es_context(const earshot_options *options, void **context, bool *owned, earshot_status *status) {
    if (options->zmq_context != NULL) {
        *context = options->zmq_context;
        *owned = false;
        return EARSHOT_OK;
    }
    *context = zmq_ctx_new();
    if (*context == NULL) return es_fail(status, EARSHOT_INTERNAL, "zmq_ctx_new: %s", zmq_strerror(zmq_errno()));
    *owned = true;
    return EARSHOT_OK;
}

int es_topics_add(es_topics *topics, const char *topic, earshot_status *status) {
    if (topic == NULL || topic[0] == '\0') return es_fail(status, EARSHOT_INVALID_ARGUMENT, "an empty topic");
    if (strlen(topic) >= ES_TOPIC_MAX)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "topic \"%.40s…\" is longer than %d bytes", topic,
                       ES_TOPIC_MAX - 1);
    for (size_t i = 0; i < topics->count; i++)
        if (strcmp(topics->names[i], topic) == 0) return EARSHOT_OK;
    if (topics->count == ES_TOPICS_MAX)
        return es_fail(status, EARSHOT_INVALID_ARGUMENT, "more than %d topics", ES_TOPICS_MAX);
    snprintf(topics->names[topics->count++], ES_TOPIC_MAX, "%s", topic);
    return EARSHOT_OK;
}

bool es_topics_receive(const es_topics *topics, const char *topic) {
    for (size_t i = 0; i < topics->count; i++)
        if (strncmp(topic, topics->names[i], strlen(topics->names[i])) == 0) return true;
    return false;
}
