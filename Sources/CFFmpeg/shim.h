#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswresample/swresample.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/samplefmt.h>

// FFmpeg's error codes are function-like macros, which Swift does not import.
static inline int earshot_averror_eof(void) { return AVERROR_EOF; }
static inline int earshot_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int earshot_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }

// Converts one decoded frame into `out` (interleaved, in the context's output format). The
// const-ness of swr_convert's pointer arguments differs between FFmpeg 5.1 and 7.1; C casts here
// keep the Swift side the same for both.
static inline int earshot_swr_convert_frame(SwrContext *context, uint8_t *out, int out_count, const AVFrame *frame) {
    uint8_t *planes[1] = { out };
    return swr_convert(context, planes, out_count, (const uint8_t **)frame->extended_data, frame->nb_samples);
}

// Drains what the converter still holds (after a rate change) into `out`.
static inline int earshot_swr_flush(SwrContext *context, uint8_t *out, int out_count) {
    uint8_t *planes[1] = { out };
    return swr_convert(context, planes, out_count, NULL, 0);
}
