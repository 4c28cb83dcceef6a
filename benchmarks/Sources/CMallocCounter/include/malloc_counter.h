// Counts heap allocations of the whole process, for the benchmark's "no allocation per audio
// period" check. The benchmark executable defines malloc & co. (ELF symbol interposition, as
// glibc documents for replacing its allocator) and forwards to glibc's own implementations.
#pragma once
#include <stdint.h>

/// Allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) since start.
uint64_t malloc_counter_total(void);
/// Allocations made by the calling thread since it started.
uint64_t malloc_counter_thread(void);
