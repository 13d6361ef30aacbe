/* Only links: every call goes through the IngestNative wrapper module. */
#include <turbojpeg.h>
