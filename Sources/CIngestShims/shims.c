#include "CIngestShims.h"
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

CURLcode ingest_curl_easy_setopt_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
CURLcode ingest_curl_easy_setopt_off_t(CURL *curl, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(curl, option, value);
}
CURLcode ingest_curl_easy_setopt_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
CURLcode ingest_curl_easy_setopt_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}
CURLcode ingest_curl_easy_setopt_slist(CURL *curl, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(curl, option, value);
}
CURLcode ingest_curl_easy_setopt_write_function(CURL *curl, size_t (*fn)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, fn);
}
CURLcode ingest_curl_easy_setopt_read_function(CURL *curl, size_t (*fn)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(curl, CURLOPT_READFUNCTION, fn);
}
CURLcode ingest_curl_easy_setopt_header_function(CURL *curl, size_t (*fn)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, fn);
}
CURLcode ingest_curl_easy_setopt_xferinfo_function(
    CURL *curl, int (*fn)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    return curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, fn);
}
CURLcode ingest_curl_easy_setopt_seek_function(CURL *curl, int (*fn)(void *, curl_off_t, int)) {
    return curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, fn);
}
CURLcode ingest_curl_easy_getinfo_long(CURL *curl, CURLINFO info, long *value) {
    return curl_easy_getinfo(curl, info, value);
}
CURLcode ingest_curl_easy_getinfo_off_t(CURL *curl, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(curl, info, value);
}
CURLcode ingest_curl_easy_getinfo_double(CURL *curl, CURLINFO info, double *value) {
    return curl_easy_getinfo(curl, info, value);
}
CURLcode ingest_curl_easy_getinfo_string(CURL *curl, CURLINFO info, const char **value) {
    return curl_easy_getinfo(curl, info, value);
}
CURLcode ingest_curl_easy_getinfo_pointer(CURL *curl, CURLINFO info, void **value) {
    return curl_easy_getinfo(curl, info, value);
}
CURLMcode ingest_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
size_t ingest_curl_readfunc_abort(void) { return CURL_READFUNC_ABORT; }
size_t ingest_curl_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }
size_t ingest_curl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }

sqlite3_destructor_type ingest_sqlite_transient(void) { return SQLITE_TRANSIENT; }

int ingest_sqlite_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

#include <stdio.h>
#include <jconfig.h>
int ingest_jpeg_turbo_version_number(void) { return LIBJPEG_TURBO_VERSION_NUMBER; }
