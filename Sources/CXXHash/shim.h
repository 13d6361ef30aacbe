/* Only links: every call goes through IngestNative's XXH3Hasher. */
#include <xxhash.h>
