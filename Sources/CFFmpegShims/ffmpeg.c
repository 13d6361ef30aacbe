#include "CFFmpegShims.h"
#include <errno.h>
#include <string.h>
#include <libavutil/display.h>
#include <libavutil/time.h>
#include <libavutil/channel_layout.h>

int ingest_averror(int posix_errno) { return AVERROR(posix_errno); }
int ingest_averror_eof(void) { return AVERROR_EOF; }
int ingest_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
int ingest_averror_exit(void) { return AVERROR_EXIT; }
int ingest_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }

void ingest_av_strerror(int code, char *buffer, size_t size) {
    if (av_strerror(code, buffer, size) < 0) {
        snprintf(buffer, size, "FFmpeg error %d", code);
    }
}

static int ingest_guard_interrupt(void *opaque) {
    IngestProbeGuard *guard = opaque;
    if (guard->deadline_us > 0 && av_gettime_relative() > guard->deadline_us) {
        guard->timed_out = 1;
        return 1;
    }
    return 0;
}

static int ingest_guard_io_open(struct AVFormatContext *s, AVIOContext **pb, const char *url, int flags,
                                AVDictionary **options) {
    IngestProbeGuard *guard = s->interrupt_callback.opaque;
    if (guard == NULL || guard->main_opened || (flags & AVIO_FLAG_WRITE)) {
        if (guard) guard->nested_open_attempts += 1;
        return AVERROR(EPERM);
    }
    guard->main_opened = 1;
    return avio_open2(pb, url, flags, &s->interrupt_callback, options);
}

void ingest_av_install_guard(AVFormatContext *ctx, IngestProbeGuard *guard) {
    ctx->interrupt_callback.callback = ingest_guard_interrupt;
    ctx->interrupt_callback.opaque = guard;
    ctx->io_open = ingest_guard_io_open;
}

void ingest_av_guard_start(IngestProbeGuard *guard, int64_t timeout_us) {
    guard->deadline_us = timeout_us > 0 ? av_gettime_relative() + timeout_us : 0;
}

double ingest_av_stream_rotation(const AVStream *stream, int *present) {
    size_t size = 0;
    const uint8_t *matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (matrix == NULL || size < 9 * sizeof(int32_t)) {
        *present = 0;
        return 0;
    }
    *present = 1;
    double rotation = av_display_rotation_get((const int32_t *)matrix);
    if (rotation != rotation) { /* NaN for a degenerate matrix */
        *present = 0;
        return 0;
    }
    return rotation;
}

void ingest_av_channel_layout_describe(const AVCodecParameters *par, char *buffer, size_t size) {
    buffer[0] = 0;
    if (par->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC) return;
    if (av_channel_layout_describe(&par->ch_layout, buffer, size) < 0) buffer[0] = 0;
}

int ingest_av_channels(const AVCodecParameters *par) {
    return par->ch_layout.nb_channels;
}

int64_t ingest_av_index_end(AVStream *stream) {
    int64_t end = 0;
    int count = avformat_index_get_entries_count(stream);
    if (count <= 0) return 0;
    /* FFmpeg keeps the entries in one array: walk it directly when the first and last entries say so (a call per
       entry costs more than the rest of the loop), else one call per entry. */
    const AVIndexEntry *first = avformat_index_get_entry(stream, 0);
    int contiguous = first != NULL && avformat_index_get_entry(stream, count - 1) == first + (count - 1);
    for (int i = 0; i < count; i++) {
        const AVIndexEntry *entry = contiguous ? first + i : avformat_index_get_entry(stream, i);
        if (entry == NULL || entry->pos < 0 || entry->size < 0) continue;
        if (entry->pos > INT64_MAX - entry->size) return INT64_MAX; /* a crafted offset: past any file */
        if (entry->pos + entry->size > end) end = entry->pos + entry->size;
    }
    return end;
}

