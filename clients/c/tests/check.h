/* A minimal test harness: CHECK records a failure with its place and goes on; each TEST counts
 * as passed when none of its checks failed. Ends with "N passed, N failed". */
#ifndef EARSHOT_TEST_CHECK_H
#define EARSHOT_TEST_CHECK_H
#include <stdio.h>

typedef struct test_tally {
    int passed, failed, checks_failed;
} test_tally;

#define CHECK(tally, condition, ...)                                                   \
    do {                                                                               \
        if (!(condition)) {                                                            \
            (tally)->checks_failed++;                                                  \
            fprintf(stderr, "  FAILED %s:%d: %s: ", __FILE__, __LINE__, #condition);    \
            fprintf(stderr, __VA_ARGS__);                                              \
            fprintf(stderr, "\n");                                                     \
        }                                                                              \
    } while (0)

#define TEST(tally, function)                                                          \
    do {                                                                               \
        int before = (tally)->checks_failed;                                           \
        fprintf(stderr, "test %s\n", #function);                                       \
        function(tally);                                                               \
        if ((tally)->checks_failed == before) (tally)->passed++;                       \
        else {                                                                         \
            (tally)->failed++;                                                         \
            fprintf(stderr, "test %s FAILED\n", #function);                            \
        }                                                                              \
    } while (0)

#endif
