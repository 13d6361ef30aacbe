/* Only links: every call goes through the IngestNative wrapper module. */
#include <libheif/heif.h>
