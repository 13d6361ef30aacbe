/* Only links: every call goes through IngestNative's PostgresConnection and PostgresResult classes. */
#include <libpq-fe.h>
