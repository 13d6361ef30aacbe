#ifndef C_FFMPEG_SHIMS_H
#define C_FFMPEG_SHIMS_H
/*
 * What Swift cannot import from FFmpeg directly, and nothing else:
 *  - FFmpeg's error codes are macros (AVERROR(e), AVERROR_EOF) built from expressions Swift does not import.
 *  - av_err2str is a macro around a compound literal.
 *  - The probe's safety net (deny nested opens, a deadline) needs C callbacks with a C opaque pointer.
 */
#include <stdint.h>
#include <stddef.h>
#include <libavformat/avformat.h>

/// AVERROR(errno_value), which is a macro.
int ingest_averror(int posix_errno);
/// AVERROR_EOF, AVERROR_INVALIDDATA, AVERROR_EXIT, AVERROR_DECODER_NOT_FOUND: macros built from FFERRTAG.
int ingest_averror_eof(void);
int ingest_averror_invaliddata(void);
int ingest_averror_exit(void);
int ingest_averror_decoder_not_found(void);
/// av_err2str without the compound literal: writes FFmpeg's text for `code` into `buffer`.
void ingest_av_strerror(int code, char *buffer, size_t size);

/// Guards one probe of one file. Owned by the caller; must outlive the AVFormatContext it is installed on.
typedef struct IngestProbeGuard {
    int64_t deadline_us;        /* av_gettime_relative() value after which I/O is interrupted; 0 = none */
    int timed_out;              /* set to 1 when the deadline interrupted FFmpeg */
    int nested_open_attempts;   /* opens refused after the main file (playlists, references, image sequences) */
    int main_opened;            /* set once the single allowed open has happened */
} IngestProbeGuard;

/// Installs `guard` on `ctx`: the interrupt callback enforces the deadline, and io_open allows exactly one
/// open (the input file itself); every further open — the way HLS, concat and references reach other files
/// or sockets — is refused with AVERROR(EPERM) and counted.
void ingest_av_install_guard(AVFormatContext *ctx, IngestProbeGuard *guard);
/// Starts the guard's clock: the deadline is `timeout_us` from now.
void ingest_av_guard_start(IngestProbeGuard *guard, int64_t timeout_us);

/// Rotation in degrees (counter-clockwise, as av_display_rotation_get and ffprobe report it) of a stream's
/// display matrix; returns 0 and sets *present = 0 when the stream has none.
double ingest_av_stream_rotation(const AVStream *stream, int *present);

/// Channel layout description (e.g. "mono", "stereo") of codec parameters; empty when unknown.
void ingest_av_channel_layout_describe(const AVCodecParameters *par, char *buffer, size_t size);
/// Channel count of codec parameters (the new channel-layout API, with the old field as fallback).
int ingest_av_channels(const AVCodecParameters *par);
/// The end of a stream's furthest sample by its index (max position + size over avformat_index_get_entry), 0
/// without an index. A loop in C: a 10-minute clip has ~50,000 entries, which a Swift debug build walks 100× slower.
int64_t ingest_av_index_end(AVStream *stream);

#endif
