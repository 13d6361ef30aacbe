#ifndef C_CURL_SHIMS_H
#define C_CURL_SHIMS_H
/*
 * curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic: one typed wrapper per argument kind, as
 * swift-corelibs-foundation does; CURL_READFUNC_ABORT and friends are macros.
 */
#include <stddef.h>
#include <curl/curl.h>

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

#endif
