/* A second screen: shows what the TV plays and where, kept in step with earshotd's events.
 * Usage: second-screen [tcp://box:7400 tcp://box:7401 server.public viewer.key]
 * Build: cc second-screen.c $(pkg-config --cflags --libs earshot-client) */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <earshot/client.h>

static int64_t wall_ms(void) {
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* What is playing: copies of the numbers (the follower frees its messages at its next poll). */
struct playing {
    char title[128];
    double offset, skew; /* where it was at at_ms, and how fast it plays (1 + skew) */
    int64_t at_ms;
    bool known;
};

static void take(struct playing *p, const Earshot__V1__MatchedMediaItem *item, int64_t at_ms) {
    p->known = item != NULL;
    if (item == NULL) return;
    const Earshot__V1__MediaItem *media = item->media_item;
    snprintf(p->title, sizeof p->title, "%s", media && media->title[0] ? media->title : media ? media->id : "?");
    p->offset = item->predicted_current_match_offset;
    p->skew = item->time_skew;
    p->at_ms = at_ms;
}

int main(int argc, char **argv) {
    earshot_options options;
    earshot_options_init(&options);
    if (argc == 5) {
        options.endpoint = argv[1];
        options.events_endpoint = argv[2];
        options.server_key = argv[3];
        options.client_key = argv[4];
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [RPC-ENDPOINT EVENTS-ENDPOINT SERVER-KEY CLIENT-KEY]\n", argv[0]);
        return 2;
    }
    const char *topics[] = {EARSHOT_TOPIC_SESSION, EARSHOT_TOPIC_MATCH, EARSHOT_TOPIC_CUE};
    earshot_follower *follower;
    earshot_status status;
    if (earshot_follower_open(&options, topics, 3, &follower, &status) != EARSHOT_OK) {
        fprintf(stderr, "second-screen: %s\n", status.message);
        return 1;
    }
    struct playing now = {.known = false};
    for (int ticks = 0; ticks < 600; ticks++) { /* ten minutes of a programme */
        earshot_update u;
        int wait = 1000; /* a line a second, or at once after updates */
        for (; earshot_follower_poll(follower, &u, wait) == EARSHOT_NEXT_ITEM; wait = 0) {
            if (u.kind == EARSHOT_UPDATE_SNAPSHOT) {
                printf("[in step: %s]\n", u.reason);
                take(&now, u.snapshot->current_match, u.snapshot->taken_at_unix_ms);
            } else if (u.kind == EARSHOT_UPDATE_ERROR) {
                printf("[box unreachable: %s]\n", u.error.message);
            } else if (u.event->body_case == EARSHOT__V1__EVENT_ENVELOPE__BODY_MATCH) {
                const Earshot__V1__MatchResult *m = u.event->match;
                if (m->outcome == EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_MATCH && m->n_items > 0)
                    take(&now, m->items[0], m->made_at_unix_ms ? m->made_at_unix_ms : u.event->ts_unix_ms);
                else if (m->outcome == EARSHOT__V1__MATCH_OUTCOME__MATCH_OUTCOME_NO_MATCH)
                    now.known = false;
            } else if (u.event->body_case == EARSHOT__V1__EVENT_ENVELOPE__BODY_CUE) {
                const Earshot__V1__CueEvent *cue = u.event->cue;
                if (cue->kind == EARSHOT__V1__CUE_EVENT__KIND__KIND_STARTED && cue->cue)
                    printf("[cue %s starts: %s]\n", cue->cue->id, cue->cue->asset_uri);
            }
        }
        if (now.known) {
            Earshot__V1__MatchedMediaItem at = EARSHOT__V1__MATCHED_MEDIA_ITEM__INIT;
            at.predicted_current_match_offset = now.offset;
            at.time_skew = now.skew;
            printf("%s at %.1f s\n", now.title, earshot_predict_offset(&at, now.at_ms, wall_ms()));
        } else
            printf("(nothing recognised)\n");
        fflush(stdout);
    }
    earshot_follower_close(follower);
    return 0;
}
