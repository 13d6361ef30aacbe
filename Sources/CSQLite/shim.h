/* Only links: every call goes through IngestNative's Database and Statement classes. */
#include <sqlite3.h>
