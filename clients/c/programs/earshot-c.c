/* earshot-c: the C client's command line.
 *   earshot-c match [options] [--json] [--no-prepare]   prepare, match, print the result
 *   earshot-c watch [options] [--json] [--duration S] [--topic T]…   follow events
 *   earshot-c ping [options]
 * Options: --server tcp://host:7400, --events tcp://host:7401, --server-key Z85|file,
 * --key file, --timeout seconds. Keys also from EARSHOT_SERVER_KEY / EARSHOT_CLIENT_KEY.
 * Exit status as `earshot remote`: 0 success (match: a match), 1 no match, 2 usage,
 * 5 the daemon did not answer in time or answered with an error. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sigaction, nanosleep */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <earshot/client.h>

enum { EXIT_NO_MATCH = 1, EXIT_USAGE = 2, EXIT_REMOTE = 5 };

static volatile sig_atomic_t stopping = 0;
static void on_signal(int signal_number) {
    (void)signal_number;
    stopping = 1;
}

static int usage(const char *problem) {
    if (problem) fprintf(stderr, "earshot-c: %s\n", problem);
    fprintf(stderr,
            "usage: earshot-c match [--json] [--no-prepare] [options]\n"
            "       earshot-c watch [--json] [--duration SECONDS] [--topic TOPIC]... [options]\n"
            "       earshot-c ping [options]\n"
            "options: --server tcp://HOST:7400  --events tcp://HOST:7401  --timeout SECONDS (default 15)\n"
            "         --server-key Z85|FILE (env EARSHOT_SERVER_KEY)  --key FILE (env EARSHOT_CLIENT_KEY)\n");
    return EXIT_USAGE;
}

static int remote_failure(const earshot_status *status) {
    fprintf(stderr, "earshot-c: %s: %s\n", earshot_code_name(status->code), status->message);
    return EXIT_REMOTE;
}

static const char *item_name(const Earshot__V1__MediaItem *item) {
    return item == NULL ? "?" : item->title && item->title[0] ? item->title : item->id;
}

static int match(const earshot_options *options, bool json, bool prepare) {
    earshot_status status;
    earshot_client *client = NULL;
    if (earshot_client_open(options, &client, &status) != EARSHOT_OK) return remote_failure(&status);
    int result = EXIT_REMOTE;
    Earshot__V1__MatchResult *match = NULL;
    if (prepare && earshot_prepare(client, 0, &status) != EARSHOT_OK) goto done;
    if (earshot_match(client, false, &match, 0, &status) != EARSHOT_OK) goto done;
    if (json) {
        if (earshot_json_write(stdout, &match->base) != 0 || fputc('\n', stdout) == EOF) goto done;
    } else if (match->outcome == EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_MATCH && match->n_items > 0) {
        const Earshot__V1__MatchedMediaItem *top = match->items[0];
        printf("%s at %.2f s (catalog %s, confidence %.2f)\n", item_name(top->media_item),
               top->predicted_current_match_offset, top->catalog, top->confidence);
    } else {
        printf("no match\n");
    }
    if (match->outcome == EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_ERROR) {
        fprintf(stderr, "earshot-c: %s: %s: %s\n", earshot_client_endpoint(client),
                match->error ? match->error->name : "error", match->error ? match->error->message : "");
        result = EXIT_REMOTE;
    } else {
        result = match->outcome == EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_MATCH ? 0 : EXIT_NO_MATCH;
    }
    status.code = EARSHOT_OK;
done:
    if (status.code != EARSHOT_OK) remote_failure(&status);
    earshot_message_free(match ? &match->base : NULL);
    earshot_client_close(client);
    return result;
}

/* A SessionState's name; a value from a newer daemon by its number. */
static void print_state(int state) {
    const ProtobufCEnumValue *value = protobuf_c_enum_descriptor_get_value(&earshot__v1__session_state__descriptor, state);
    if (value != NULL) printf("%s", value->name);
    else printf("state %d", state);
}

static void print_update(const earshot_update *update, bool json) {
    if (json) {
        if (update->kind == EARSHOT_UPDATE_SNAPSHOT) {
            printf("{\"update\":\"snapshot\",\"reason\":\"%s\",\"snapshot\":", update->reason);
            earshot_json_write(stdout, &update->snapshot->base);
        } else if (update->kind == EARSHOT_UPDATE_EVENT) {
            printf("{\"update\":\"event\",\"event\":");
            earshot_json_write(stdout, &update->event->base);
        } else {
            printf("{\"update\":\"error\",\"code\":\"%s\",\"reason\":\"%s\"", earshot_code_name(update->error.code),
                   update->reason);
        }
        printf("}\n");
        return;
    }
    if (update->kind == EARSHOT_UPDATE_ERROR) {
        printf("snapshot failed (%s): %s: %s\n", update->reason, earshot_code_name(update->error.code),
               update->error.message);
    } else if (update->kind == EARSHOT_UPDATE_SNAPSHOT) {
        const Earshot__V1__SessionSnapshot *s = update->snapshot;
        printf("snapshot (%s): epoch %" PRIu64 ", ", update->reason, s->epoch);
        print_state(s->state);
        if (s->current_match) printf(", playing %s", item_name(s->current_match->media_item));
        printf("\n");
    } else {
        const Earshot__V1__EventEnvelope *e = update->event;
        printf("%s #%" PRIu64 ":", e->topic, e->seq);
        if (e->body_case == EARSHOT__V1__EVENT_ENVELOPE__BODY_MATCH && e->match->n_items > 0)
            printf(" %s at %.2f s", item_name(e->match->items[0]->media_item),
                   e->match->items[0]->predicted_current_match_offset);
        else if (e->body_case == EARSHOT__V1__EVENT_ENVELOPE__BODY_SESSION && e->session != NULL) {
            printf(" ");
            print_state(e->session->state);
        }
        printf("\n");
    }
}

static int watch(const earshot_options *options, bool json, double duration, const char *const *topics, size_t n) {
    earshot_status status;
    earshot_follower *follower = NULL;
    if (earshot_follower_open(options, topics, n, &follower, &status) != EARSHOT_OK) return remote_failure(&status);
    int64_t limit = duration > 0 ? (int64_t)(duration * 1000) : -1;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    earshot_update update;
    while (!stopping) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (limit >= 0 && elapsed >= limit) break;
        /* Short waits, so a signal or the duration ends the loop promptly. */
        int wait = limit >= 0 && limit - elapsed < 250 ? (int)(limit - elapsed) : 250;
        if (earshot_follower_poll(follower, &update, wait) != EARSHOT_NEXT_ITEM) continue;
        print_update(&update, json);
        fflush(stdout);
    }
    earshot_follower_stats stats;
    earshot_follower_counters(follower, &stats);
    fprintf(stderr,
            "earshot-c: %" PRIu64 " events, %" PRIu64 " snapshots, %" PRIu64 " gaps, %" PRIu64
            " epoch changes, %" PRIu64 " stale dropped\n",
            stats.events, stats.snapshots, stats.gaps, stats.epoch_changes, stats.stale_dropped);
    earshot_follower_close(follower);
    return 0;
}

static int ping(const earshot_options *options) {
    earshot_status status;
    earshot_client *client = NULL;
    if (earshot_client_open(options, &client, &status) != EARSHOT_OK) return remote_failure(&status);
    double rtt = 0;
    int code = earshot_ping(client, 0, &rtt, &status);
    earshot_client_close(client);
    if (code != EARSHOT_OK) return remote_failure(&status);
    printf("PONG from %s in %.3f ms\n", options->endpoint ? options->endpoint : EARSHOT_DEFAULT_ENDPOINT, rtt);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage(NULL);
    const char *command = argv[1];
    earshot_options options;
    earshot_options_init(&options);
    options.server_key = getenv("EARSHOT_SERVER_KEY");
    options.client_key = getenv("EARSHOT_CLIENT_KEY");
    options.timeout_ms = 15000;
    bool json = false, prepare = true;
    double duration = 0;
    const char *topics[16];
    size_t n = 0;
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(arg, "--json") == 0) json = true;
        else if (strcmp(arg, "--no-prepare") == 0) prepare = false;
        else if (strcmp(arg, "--server") == 0 && has_value) options.endpoint = argv[++i];
        else if (strcmp(arg, "--events") == 0 && has_value) options.events_endpoint = argv[++i];
        else if (strcmp(arg, "--server-key") == 0 && has_value) options.server_key = argv[++i];
        else if (strcmp(arg, "--key") == 0 && has_value) options.client_key = argv[++i];
        else if (strcmp(arg, "--timeout") == 0 && has_value) {
            double seconds = strtod(argv[++i], NULL);
            if (!(seconds > 0 && seconds < 86400)) return usage("--timeout: a number of seconds");
            options.timeout_ms = (int)(seconds * 1000);
        } else if (strcmp(arg, "--duration") == 0 && has_value) {
            duration = strtod(argv[++i], NULL);
            if (!(duration > 0)) return usage("--duration: a number of seconds");
        } else if (strcmp(arg, "--topic") == 0 && has_value) {
            if (n == 16) return usage("at most 16 topics");
            topics[n++] = argv[++i];
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(NULL);
            return 0;
        } else {
            fprintf(stderr, "earshot-c: unknown or incomplete option %s\n", arg);
            return usage(NULL);
        }
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    if (strcmp(command, "match") == 0) return match(&options, json, prepare);
    if (strcmp(command, "watch") == 0) return watch(&options, json, duration, topics, n);
    if (strcmp(command, "ping") == 0) return ping(&options);
    if (strcmp(command, "-h") == 0 || strcmp(command, "--help") == 0) {
        usage(NULL);
        return 0;
    }
    return usage("unknown command");
}
