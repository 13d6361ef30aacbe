/* Only links: zlib's crc32 behind IngestNative's CRC (S3's `checksum: crc32`). */
#include <zlib.h>
