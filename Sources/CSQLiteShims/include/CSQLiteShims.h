#ifndef C_SQLITE_SHIMS_H
#define C_SQLITE_SHIMS_H
/*
 * SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift does not import; sqlite3_db_config is
 * variadic.
 */
#include <sqlite3.h>

/// SQLITE_TRANSIENT: SQLite copies a bound text or blob before the bind call returns.
sqlite3_destructor_type ingest_sqlite_transient(void);
/// sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL): closing the last connection leaves the
/// write-ahead log in place instead of folding it back into the database file.
int ingest_sqlite_no_checkpoint_on_close(sqlite3 *db);

#endif
