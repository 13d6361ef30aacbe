/* Only links: every call goes through the IngestNative wrapper module. */
#include <curl/curl.h>
