#include "CCurlShims.h"

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

