#include "CSQLiteShims.h"

sqlite3_destructor_type ingest_sqlite_transient(void) { return SQLITE_TRANSIENT; }

int ingest_sqlite_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

