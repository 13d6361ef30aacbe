#ifndef C_INGEST_SHIMS_H
#define C_INGEST_SHIMS_H
/*
 * What Swift cannot import directly, and nothing else:
 *  - FFmpeg's error codes are macros (AVERROR(e), AVERROR_EOF) built from expressions Swift does not import.
 *  - av_err2str is a macro around a compound literal.
 *  - The probe's safety net (deny nested opens, a deadline) needs C callbacks with a C opaque pointer.
 *  - curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic: one typed wrapper per argument kind,
 *    as swift-corelibs-foundation does.
 *  - SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift does not import;
 *    sqlite3_db_config is variadic.
 */
#include <stdint.h>
#include <stddef.h>
#include <libavformat/avformat.h>
#include <curl/curl.h>
#include <sqlite3.h>

/* ---- FFmpeg ---- */

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

/* ---- libcurl: typed wrappers over the variadic setopt/getinfo ---- */
CURLcode ingest_curl_easy_setopt_long(CURL *curl, CURLoption option, long value);
CURLcode ingest_curl_easy_setopt_off_t(CURL *curl, CURLoption option, curl_off_t value);
CURLcode ingest_curl_easy_setopt_string(CURL *curl, CURLoption option, const char *value);
CURLcode ingest_curl_easy_setopt_pointer(CURL *curl, CURLoption option, void *value);
CURLcode ingest_curl_easy_setopt_slist(CURL *curl, CURLoption option, struct curl_slist *value);
CURLcode ingest_curl_easy_setopt_write_function(CURL *curl, size_t (*fn)(char *, size_t, size_t, void *));
CURLcode ingest_curl_easy_setopt_read_function(CURL *curl, size_t (*fn)(char *, size_t, size_t, void *));
CURLcode ingest_curl_easy_setopt_header_function(CURL *curl, size_t (*fn)(char *, size_t, size_t, void *));
CURLcode ingest_curl_easy_setopt_xferinfo_function(
    CURL *curl, int (*fn)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t));
CURLcode ingest_curl_easy_setopt_seek_function(CURL *curl, int (*fn)(void *, curl_off_t, int));
CURLcode ingest_curl_easy_getinfo_long(CURL *curl, CURLINFO info, long *value);
CURLcode ingest_curl_easy_getinfo_off_t(CURL *curl, CURLINFO info, curl_off_t *value);
CURLcode ingest_curl_easy_getinfo_double(CURL *curl, CURLINFO info, double *value);
CURLcode ingest_curl_easy_getinfo_string(CURL *curl, CURLINFO info, const char **value);
CURLcode ingest_curl_easy_getinfo_pointer(CURL *curl, CURLINFO info, void **value);
CURLMcode ingest_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

/// CURL_READFUNC_ABORT / CURL_READFUNC_PAUSE / CURL_WRITEFUNC_PAUSE: macros.
size_t ingest_curl_readfunc_abort(void);
size_t ingest_curl_readfunc_pause(void);
size_t ingest_curl_writefunc_pause(void);

/* ---- SQLite ---- */

/// SQLITE_TRANSIENT: SQLite copies a bound text or blob before the bind call returns.
sqlite3_destructor_type ingest_sqlite_transient(void);
/// sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL): closing the last connection leaves the
/// write-ahead log in place instead of folding it back into the database file.
int ingest_sqlite_no_checkpoint_on_close(sqlite3 *db);

/* ---- libjpeg-turbo ---- */

/// LIBJPEG_TURBO_VERSION_NUMBER (2001005 for 2.1.5): libjpeg-turbo 2.x has no runtime version call, so this is the
/// version built against.
int ingest_jpeg_turbo_version_number(void);

/* ---- Files ---- */

/// rename(2) that never replaces: renameat2(RENAME_NOREPLACE) on Linux, renamex_np(RENAME_EXCL) on macOS. -1 with
/// errno EEXIST when the name is taken; EINVAL or ENOSYS where the file system or kernel cannot do it.
int ingest_rename_noreplace(const char *from, const char *to);

#endif
