/* Match round trip from the C client: prepare once, then N sequential Match calls; prints
 * p50/p99/max in ms and how many answered a match. Usage:
 *   match-rtt ENDPOINT SERVER-KEY CLIENT-KEY [CALLS] [WARMUP] [PAUSE-MS]   (keys "-": plain TCP)
 * PAUSE-MS paces the calls (to drive match events at a steady rate rather than to measure). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sigaction, nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <earshot/client.h>

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, int n, double p) {
    int index = (int)(p / 100.0 * n + 0.999999) - 1; /* nearest rank */
    return sorted[index < 0 ? 0 : index >= n ? n - 1 : index];
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: match-rtt ENDPOINT SERVER-KEY CLIENT-KEY [CALLS] [WARMUP]\n");
        return 2;
    }
    int calls = argc > 4 ? atoi(argv[4]) : 300, warmup = argc > 5 ? atoi(argv[5]) : 10;
    int pause_ms = argc > 6 ? atoi(argv[6]) : 0;
    if (calls <= 0 || warmup < 0 || pause_ms < 0) return 2;
    struct timespec pause = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
    earshot_options options;
    earshot_options_init(&options);
    options.endpoint = argv[1];
    if (strcmp(argv[2], "-") != 0) options.server_key = argv[2];
    if (strcmp(argv[3], "-") != 0) options.client_key = argv[3];
    options.timeout_ms = 10000;
    earshot_client *client;
    earshot_status status;
    if (earshot_client_open(&options, &client, &status) != EARSHOT_OK || earshot_prepare(client, 0, &status) != 0) {
        fprintf(stderr, "match-rtt: %s\n", status.message);
        return 1;
    }
    double *ms = calloc((size_t)calls, sizeof *ms);
    int matched = 0, failed = 0;
    for (int i = -warmup; i < calls && ms != NULL; i++) {
        struct timespec t0, t1;
        Earshot__V1__MatchResult *result = NULL;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int code = earshot_match(client, false, &result, 0, &status);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (i >= 0) {
            ms[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
            if (code != EARSHOT_OK) failed++;
            else if (result->outcome == EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_MATCH) matched++;
        }
        earshot_message_free(result ? &result->base : NULL);
        if (pause_ms > 0) nanosleep(&pause, NULL);
    }
    earshot_client_close(client);
    if (ms == NULL) return 1;
    qsort(ms, (size_t)calls, sizeof *ms, by_value);
    printf("calls %d matched %d errors %d p50_ms %.3f p99_ms %.3f max_ms %.3f\n", calls, matched, failed,
           percentile(ms, calls, 50), percentile(ms, calls, 99), ms[calls - 1]);
    free(ms);
    return failed ? 1 : 0;
}
